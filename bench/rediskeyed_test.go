package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/redissync"
)

// A keyedLocker makes, on one client, a function that takes the lock of a
// key named at the call, and returns the function that gives it back: a
// lock per resource, as a service locks per account.
type keyedLocker struct {
	name string
	new  func(b *testing.B, c *redis.Client, ns string) func(ctx context.Context, key string) (unlock func())
}

var keyedLockers = []keyedLocker{
	{"ctxsync", func(b *testing.B, c *redis.Client, ns string) func(context.Context, string) func() {
		k, err := redissync.NewKeyedLock(redissync.Config{Client: c, Name: ns, Lease: benchLease, Prefix: "bench:"})
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context, key string) func() {
			p, err := k.Acquire(ctx, key)
			must(err)
			return func() { must(p.Release(ctx)) }
		}
	}},
	// As in BenchmarkRedisLockContended: a retry every millisecond.
	{"redislock", func(b *testing.B, c *redis.Client, ns string) func(context.Context, string) func() {
		locker := redislock.New(c)
		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}
		return func(ctx context.Context, key string) func() {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			l, err := locker.Obtain(ctx, "bench:redislock:"+ns+":"+key, benchLease, opt)
			must(err)
			return func() { must(l.Release(context.Background())) }
		}
	}},
	{"redsync", func(b *testing.B, c *redis.Client, ns string) func(context.Context, string) func() {
		rs := redsync.New(goredis.NewPool(c))
		return func(ctx context.Context, key string) func() {
			m := rs.NewMutex("bench:redsync:"+ns+":"+key, redsync.WithExpiry(benchLease),
				redsync.WithTries(math.MaxInt32), redsync.WithRetryDelay(time.Millisecond))
			must(m.LockContext(ctx))
			return func() {
				ok, err := m.UnlockContext(ctx)
				must(err)
				if !ok {
					panic("bench: redsync unlock failed")
				}
			}
		}
	}},
}

// BenchmarkRedisKeyedLockContended: 32 goroutines over 4 clients (as 4
// processes) lock keys of 100 in turn (goroutine g takes key g, g+1, ...,
// so that several want each key at once), and give each back at once.
// takes/s is how many locks a second are taken; handovers/s how many of
// them go to another goroutine than the key's last holder.
func BenchmarkRedisKeyedLockContended(b *testing.B) {
	warmRedisLockers(b)
	const clients, goroutines, keys = 4, 32, 100
	for _, l := range keyedLockers {
		b.Run(fmt.Sprintf("clients=%d/goroutines=%d/keys=%d/impl=%s", clients, goroutines, keys, l.name), func(b *testing.B) {
			ns := fmt.Sprintf("keyed%d", lockKeys.Add(1))
			var locks []func(context.Context, string) func()
			for range clients {
				c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true,
					PoolSize: goroutines})
				defer c.Close()
				locks = append(locks, l.new(b, c, ns))
			}
			names := make([]string, keys)
			for i := range names {
				names[i] = strconv.Itoa(i)
				locks[i%clients](benchCtx(b), names[i])()
			}
			var next atomic.Int64
			var mu sync.Mutex
			last := make(map[string]context.Context, keys)
			handovers := 0
			var turns sync.Map // ctx -> *int: each goroutine's next key
			inGoroutines(b, goroutines, func(ctx context.Context) {
				v, ok := turns.Load(ctx)
				if !ok {
					v, _ = turns.LoadOrStore(ctx, new(int))
				}
				turn := v.(*int)
				*turn++
				key := names[(int(next.Add(1))/goroutines+*turn)%keys]
				unlock := locks[*turn%clients](ctx, key)
				mu.Lock()
				if last[key] != ctx {
					handovers++
					last[key] = ctx
				}
				mu.Unlock()
				unlock()
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "takes/s")
			b.ReportMetric(float64(handovers)/b.Elapsed().Seconds(), "handovers/s")
		})
	}
}

// BenchmarkRedisLockHandoverNames: with names contended Names, each wanted
// by one goroutine of each of 4 clients (as 4 processes) that takes it and
// gives it back at once, the time from a Release to the next holder's
// Acquire returning, when the lock went to a waiter. names=1 is one
// contended Name; names=1000 puts 1,000 Names' waiters on each client's
// one pub/sub connection. b.N is the number of hand-overs measured.
func BenchmarkRedisLockHandoverNames(b *testing.B) {
	const clients = 4
	for _, names := range []int{1, 1000} {
		b.Run(fmt.Sprintf("names=%d/clients=%d/impl=ctxsync", names, clients), func(b *testing.B) {
			ns := fmt.Sprintf("handover%d", lockKeys.Add(1))
			var ks []*redissync.Keyed
			for range clients {
				c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true,
					PoolSize: 64})
				defer c.Close()
				k, err := redissync.NewKeyedLock(redissync.Config{Client: c, Name: ns, Lease: benchLease,
					Timeout: time.Second, Prefix: "bench:"})
				if err != nil {
					b.Fatal(err)
				}
				ks = append(ks, k)
			}
			type slot struct {
				mu       sync.Mutex
				released time.Time // the last Release, zero if none pending
			}
			slots := make([]slot, names)
			var total atomic.Int64 // hand-over time, ns
			var count atomic.Int64
			stop := make(chan struct{})
			var once sync.Once
			var wg sync.WaitGroup
			ctx := benchCtx(b)
			b.ReportAllocs()
			b.ResetTimer()
			for n := range names {
				key := strconv.Itoa(n)
				for _, k := range ks {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							p, err := k.Acquire(ctx, key)
							must(err)
							got := time.Now()
							s := &slots[n]
							s.mu.Lock()
							if !s.released.IsZero() {
								total.Add(int64(got.Sub(s.released)))
								if count.Add(1) == int64(b.N) {
									once.Do(func() { close(stop) })
								}
							}
							s.released = time.Time{}
							s.mu.Unlock()
							s.mu.Lock()
							s.released = time.Now()
							s.mu.Unlock()
							must(p.Release(ctx))
						}
					})
				}
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(total.Load())/float64(count.Load())/1e3, "µs/handover")
			b.ReportMetric(float64(count.Load())/b.Elapsed().Seconds(), "handovers/s")
		})
	}
}
