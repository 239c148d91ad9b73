package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
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
// processes) each lock a key of 100 at random, and give it back at once:
// a service locking per account, with a few accounts wanted at once now
// and then.
// takes/s is how many locks a second are taken; handovers/s how many of
// them go to another goroutine than the key's last holder; contended/s how
// many were asked for while another goroutine held the key (from the
// return of its take to the return of its unlock), so had to wait for a
// hand-over: about one take in ten here, the rest finding their key free.
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
			var held [keys]atomic.Int32 // takes returned whose unlock has not
			handovers, contended := 0, 0
			inGoroutines(b, goroutines, func(ctx context.Context) {
				k := rand.N(keys)
				key := names[k]
				busy := held[k].Load() > 0 // asked while another goroutine holds it
				unlock := locks[next.Add(1)%clients](ctx, key)
				held[k].Add(1)
				mu.Lock()
				if last[key] != ctx {
					handovers++
					last[key] = ctx
				}
				if busy {
					contended++
				}
				mu.Unlock()
				unlock()
				held[k].Add(-1)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "takes/s")
			b.ReportMetric(float64(handovers)/b.Elapsed().Seconds(), "handovers/s")
			b.ReportMetric(float64(contended)/b.Elapsed().Seconds(), "contended/s")
		})
	}
}

// BenchmarkRedisLockHandoverNames: the time from a Release to the return
// of the Acquire it hands the lock to, one hand-over at a time, with names
// Names each wanted by one goroutine of each of 4 clients (as 4 processes):
// every Name has a holder and 3 waiters throughout. names=1 is one
// contended Name; names=1000 puts 3,000 waiters on 1,000 Names on the
// clients' pub/sub connections (one each). b.N is the number of
// hand-overs, on the Names in turn.
func BenchmarkRedisLockHandoverNames(b *testing.B) {
	const clients = 4
	for _, names := range []int{1, 1000} {
		b.Run(fmt.Sprintf("names=%d/clients=%d/impl=ctxsync", names, clients), func(b *testing.B) {
			ns := fmt.Sprintf("handover%d", lockKeys.Add(1))
			var ks []*redissync.Keyed
			for range clients {
				c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true,
					PoolSize: 32})
				defer c.Close()
				// A Poll of a minute: with a second's, the 3,000 waiters of
				// names=1000 would ask Redis 3,000 times a second besides
				// the hand-overs (a fleet of many Names wants a long Poll).
				k, err := redissync.NewKeyedLock(redissync.Config{Client: c, Name: ns, Lease: benchLease,
					Timeout: time.Second, Poll: time.Minute, Prefix: "bench:"})
				if err != nil {
					b.Fatal(err)
				}
				ks = append(ks, k)
			}
			ctx, cancel := context.WithCancel(context.Background())
			release := make([]chan struct{}, names) // to the Name's holder
			got := make(chan time.Time)             // from each new holder
			var wg sync.WaitGroup
			for n := range names {
				release[n] = make(chan struct{})
				key := strconv.Itoa(n)
				for _, k := range ks {
					wg.Go(func() {
						for {
							p, err := k.Acquire(ctx, key)
							if ctx.Err() != nil {
								if p != nil {
									_ = p.Release(context.Background())
								}
								return // the end
							}
							if err != nil {
								continue // 4,000 at once at the start: a Timeout missed
							}
							select {
							case got <- time.Now():
							case <-ctx.Done():
							}
							select {
							case <-release[n]:
							case <-ctx.Done():
							}
							_ = p.Release(context.Background())
						}
					})
				}
			}
			for range names {
				<-got // each Name's first holder
			}
			time.Sleep(time.Second) // the waiters in line, their channels subscribed
			var total time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				release[i%names] <- struct{}{}
				total += (<-got).Sub(start)
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/handover")
		})
	}
}
