package redissync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// pubsubConns returns how many pub/sub connections Redis has, as CLIENT
// LIST shows them.
func pubsubConns(t testing.TB, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		// A connection subscribed to channels: sub=<count> above 0.
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "sub="); ok && v != "0" {
				n++
			}
		}
	}
	return n
}

// subscriptions returns the number of channels subscribed on c's Redis, by
// all its connections.
func subscriptions(t testing.TB, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range strings.Fields(list) {
		if v, ok := strings.CutPrefix(f, "sub="); ok {
			k, _ := strconv.Atoi(v)
			n += k
		}
	}
	return n
}

// awaitCount waits until count returns want, and fails t if it returns more,
// or if what it returns has not changed for a minute: on a loaded machine a
// wait for thousands of goroutines takes as long as it gives them, but one
// that makes no progress is stuck.
func awaitCount(t testing.TB, what string, want int, count func() int) {
	t.Helper()
	const stall = time.Minute
	last, since := -1, time.Now()
	for {
		n := count()
		switch {
		case n == want:
			return
		case n > want:
			t.Fatalf("%d %s, want %d", n, what, want)
		case n != last:
			last, since = n, time.Now()
		case time.Since(since) > stall:
			t.Fatalf("%d %s, want %d; none more for %v", n, what, want, stall)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noHubs fails the test if a subscription outlives its waiters.
func noHubs(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		hubsMu.Lock()
		n := len(hubs)
		hubsMu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions left with no waiter", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFleetManyNamesFewConnections: 10,000 keys, each held by one process
// and waited for by another (5,000 through a Keyed, 5,000 through a
// Semaphore each), hold one pub/sub connection; it is killed while they
// wait, and every waiter is served by the resubscription's wake-up, none
// past its ctx; then nothing is left, in Redis or in the process.
func TestFleetManyNamesFewConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 waiters")
	}
	b := ownRedis(t)
	ctx := context.Background()
	admin := b.client(t)
	if err := admin.ConfigSet(ctx, "maxclients", "10000").Err(); err != nil {
		t.Fatal(err)
	}
	keys := 10_000
	if raceOn {
		keys = 4_000 // a goroutine per waiter, within the race detector's 8,128
	}
	// 10,000 round trips at once, at the start, at the subscription and
	// after the kill: a pool and a Timeout that let them queue. The Keyed's
	// waiters share one pipeline, thousands of scripts a round trip: under
	// the race detector, beside other suites on 2 cores, 15 s did not do for
	// some. The Lease is long enough for such a Timeout, and for the holders
	// never to renew while the test runs.
	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: b.addr, PoolSize: 64, PoolTimeout: 5 * time.Minute,
			ReadTimeout: 2 * time.Minute, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	cfg := Config{Client: newClient(), Name: "fleet", N: 1, Lease: 10 * time.Minute, Timeout: 2 * time.Minute,
		Poll: time.Hour, Prefix: b.prefix}
	holder := mustKeyed(t, cfg)
	cfg.Client = newClient()
	waiter := mustKeyed(t, cfg)
	held := make([]*Permit, keys)
	sems := make([]*Semaphore, keys/2)
	for i := range keys {
		var err error
		if i%2 == 0 {
			held[i], err = holder.Acquire(ctx, strconv.Itoa(i))
		} else {
			scfg := cfg
			scfg.Name = "name" + strconv.Itoa(i)
			scfg.Client = holder.cfg.Client
			s := mustNew(t, scfg)
			held[i], err = s.Acquire(ctx)
			scfg.Client = cfg.Client
			sems[i/2] = mustNew(t, scfg)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// A bound for a waiter that is never served: not one for a loaded
	// machine to meet, which may take minutes over thousands of waiters.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	got := make(chan *Permit, keys)
	for i := range keys {
		go func() {
			var p *Permit
			var err error
			if i%2 == 0 {
				p, err = waiter.Acquire(wctx, strconv.Itoa(i))
			} else {
				p, err = sems[i/2].Acquire(wctx)
			}
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			got <- p
		}()
	}
	// The Semaphores' channels, and the Keyed's for every key: asked of
	// Redis, then confirmed by it. Thousands of waiters on a loaded machine
	// take as long as it gives them: what fails the test is a count that
	// stops growing.
	channels := keys/2 + 1
	awaitCount(t, "channels subscribed", channels, func() int {
		hubsMu.Lock()
		defer hubsMu.Unlock()
		subscribed := 0
		for _, h := range hubs {
			subscribed += len(h.have)
		}
		return subscribed
	})
	awaitCount(t, "channels Redis has subscribed", channels, func() int { return subscriptions(t, admin) })
	if n := pubsubConns(t, admin); n > 2 || n < 1 {
		t.Fatalf("%d pub/sub connections for %d Names with waiters; want 1 (at most 2)", n, keys)
	}
	t.Logf("%d pub/sub connection(s) for %d Names with a waiter each", pubsubConns(t, admin), keys)
	time.Sleep(100 * time.Millisecond) // the waiters woken by the subscription asked again
	if err := admin.Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	// Released at once: hand-overs may be published before the connection is
	// back, and are then missed; each waiter is woken by the resubscription
	// and finds its permit held for it.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < keys; i += 8 {
				if err := held[i].Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	start := time.Now()
	for range keys {
		p := <-got
		if p != nil {
			if err := p.Release(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	t.Logf("every waiter served %v after the last release", time.Since(start))
	if holder.Len() != 0 || waiter.Len() != 0 {
		t.Errorf("Len %d, %d", holder.Len(), waiter.Len())
	}
	noHubs(t)
	// The hub closes its connection in the background once it is gone.
	for deadline := time.Now().Add(30 * time.Second); pubsubConns(t, admin) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d pub/sub connections 30 s after the last waiter", pubsubConns(t, admin))
		}
	}
}

// TestKeyedNothingKept: 100,000 distinct keys (20,000 with -short or -race;
// REDISSYNC_KEYS sets another count, 1,000,000 for the figure of the
// package's doc) locked and released in turn leave the process's heap where
// it began, and, once their leases end, Redis's keys and memory. A first
// round of as many keys, before the measure, grows what grows once: the
// client's pool, Redis's tables and buffers.
func TestKeyedNothingKept(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	keys := 100_000
	if testing.Short() || raceOn {
		keys = 20_000
	}
	if v := os.Getenv("REDISSYNC_KEYS"); v != "" {
		var err error
		if keys, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: b.addr, PoolSize: 16, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	// The Lease is short, for the keys to be gone soon after it (the
	// token counters outlive it by a Lease and a second), and the Timeout
	// as long as it allows. A loaded machine may still hold a round trip
	// up past it, or a holder past its Lease: a call that fails so
	// (ErrUnavailable, or ErrLost at Release) is what the package promises
	// then, and leaves nothing kept either, which is what is checked here.
	// An Acquire that failed is made again: every key is still locked.
	k := mustKeyed(t, Config{Client: c, Name: "k", Lease: 4 * time.Second, Poll: 10 * time.Millisecond, Timeout: 1300 * time.Millisecond})
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	redisMem := func() int64 {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("no used_memory")
		return 0
	}
	var failed atomic.Int64 // calls that failed as a loaded machine's may
	round := func(name string) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(keys) {
						return
					}
					key := name + strconv.FormatInt(i, 10)
					p, err := k.Acquire(ctx, key)
					for errors.Is(err, ErrUnavailable) {
						failed.Add(1)
						p, err = k.Acquire(ctx, key)
					}
					if err != nil {
						t.Error(err)
						return
					}
					if err := p.Release(ctx); errors.Is(err, ErrUnavailable) || errors.Is(err, ErrLost) {
						failed.Add(1)
					} else if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if failed.Load() > 0 {
			// What a call that failed left is taken back in the
			// background.
			awaitKeyedIdle(t, k, "after the calls that failed")
		}
	}
	drained := func() int64 {
		peak := c.DBSize(ctx).Val()
		deadline := time.Now().Add(time.Minute)
		for c.DBSize(ctx).Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d keys left in Redis a minute after", c.DBSize(ctx).Val())
			}
			time.Sleep(100 * time.Millisecond)
		}
		return peak
	}
	round("warm-")
	drained()
	heap0, mem0 := heap(), redisMem()
	start := time.Now()
	round("acct-")
	took := time.Since(start)
	heap1 := heap()
	if k.Len() != 0 {
		t.Fatalf("Len %d", k.Len())
	}
	// A million keys kept would be tens of megabytes; a few pages of slack
	// for the runtime's own.
	if heap1 > heap0+512<<10 {
		t.Errorf("heap %d bytes before, %d after %d keys", heap0, heap1, keys)
	}
	peak := drained()
	mem1 := redisMem()
	if mem1 > mem0+256<<10 {
		t.Errorf("Redis used %d bytes before, %d after", mem0, mem1)
	}
	t.Logf("%d keys in %v (%.0f a second); heap %d -> %d bytes; Redis %d keys at the end, 0 after the leases, memory %d -> %d bytes; %d calls failed",
		keys, took, float64(keys)/took.Seconds(), heap0, heap1, peak, mem0, mem1, failed.Load())
}

// TestHammerKeyed: goroutines of two processes lock random keys of a few
// dozen, with random cancellation and ctxs that panic, while the pub/sub connections are
// killed at random. No key has two holders at once, tokens of a key grow,
// and nothing is left once they stop.
//
// The Lease and the timeouts are roomy: the calls are cut short by their
// ctxs (30 ms at most), and a Release (with no deadline) must not fail
// because a loaded machine held its round trip, or a holder's goroutine,
// up past a Lease of a second. Nothing is left to a lease's end either:
// what was left must have been taken back by the time the process is idle.
func TestHammerKeyed(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	admin := b.client(t)
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			cfg := Config{Name: fmt.Sprintf("hammer%d", n), N: n, Lease: roomyLease, Timeout: roomyTimeout, Poll: 50 * time.Millisecond}
			var ks [2]*Keyed
			for i := range ks {
				cfg.Client = b.roomyClient(t)
				var err error
				if ks[i], err = NewKeyed(cfg); err != nil {
					t.Fatal(err)
				}
			}
			const keys = 40
			var mu sync.Mutex
			inside := make(map[string]int)
			last := make(map[string]int64)
			var served, cancelled, panicked, over atomic.Int64
			stop := time.Now().Add(time.Second)
			var wg sync.WaitGroup
			for g := range 12 {
				wg.Go(func() {
					k := ks[g%2]
					for time.Now().Before(stop) {
						key := strconv.Itoa(rand.N(keys))
						actx, cancel := context.WithTimeout(ctx, time.Duration(rand.N(30))*time.Millisecond)
						var p *Permit
						var err error
						var callCtx context.Context = actx
						if rand.N(8) == 0 {
							// The caller's code panics, at one of its
							// ctx's method calls: nothing may be kept.
							callCtx = &testutil.OnceCtx{Context: actx, PanicAt: 1 + rand.Int32N(8)}
						}
						r := testutil.PanicOf(func() {
							if rand.N(4) == 0 {
								p, err = k.TryAcquire(callCtx, key)
							} else {
								p, err = k.Acquire(callCtx, key)
							}
						})
						cancel()
						if r != nil {
							if r != testutil.ErrCtxPanic {
								t.Errorf("Acquire panicked with %v", r)
							}
							panicked.Add(1)
							continue
						}
						if err != nil {
							if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrWouldWait) {
								t.Errorf("Acquire: %v", err)
							}
							cancelled.Add(1)
							continue
						}
						served.Add(1)
						mu.Lock()
						inside[key]++
						if inside[key] > n {
							over.Add(1)
						}
						if n == 1 && p.Token() <= last[key] {
							t.Errorf("key %s: token %d after %d", key, p.Token(), last[key])
						}
						last[key] = max(last[key], p.Token())
						mu.Unlock()
						time.Sleep(time.Duration(rand.N(300)) * time.Microsecond)
						mu.Lock()
						inside[key]--
						mu.Unlock()
						if err := p.Release(ctx); err != nil {
							t.Errorf("Release: %v", err)
						}
					}
				})
			}
			wg.Go(func() {
				for time.Now().Before(stop) {
					time.Sleep(time.Duration(20+rand.N(80)) * time.Millisecond)
					_ = admin.Do(ctx, "client", "kill", "type", "pubsub").Err()
				}
			})
			wg.Wait()
			if over.Load() > 0 {
				t.Errorf("more than %d holders of a key, %d times", n, over.Load())
			}
			t.Logf("%d served, %d gave up, %d panicked", served.Load(), cancelled.Load(), panicked.Load())
			for _, k := range ks {
				if k.Len() != 0 {
					t.Errorf("Len %d", k.Len())
				}
				awaitKeyedIdle(t, k, "after every call ended")
			}
			noHubs(t)
			deadline := time.Now().Add(5 * time.Second)
			for key := range keys {
				s := newSemaphore(ks[0].cfg, cfg.Name+":"+strconv.Itoa(key), "0", ks[0])
				for {
					held, queued := counts(t, s)
					if held == 0 && queued == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("key %d: %d held, %d queued", key, held, queued)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
}

// TestSharedSubscriptionChannels: the Semaphores of one client share one
// pub/sub connection; each one's channel is subscribed while it has
// waiters and unsubscribed when its last leaves; the connection is closed
// with the last waiter of the client.
func TestSharedSubscriptionChannels(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	admin := b.client(t)
	hc, wc := b.client(t), b.client(t)
	var holders [3]*Permit
	var ws [3]*Semaphore
	for i := range ws {
		cfg := Config{Client: hc, Name: fmt.Sprintf("shared%d", i), N: 1 + i%2, Lease: time.Minute, Poll: time.Hour}
		h := mustNew(t, cfg)
		held := acquireN(t, h, cfg.N)
		holders[i] = held[0]
		for _, p := range held[1:] {
			defer p.Release(ctx)
		}
		cfg.Client = wc
		ws[i] = mustNew(t, cfg)
	}
	numsub := func(s *Semaphore) int64 {
		n, err := admin.PubSubNumSub(ctx, s.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[s.channel]
	}
	got := make(chan *Permit, len(ws))
	for _, w := range ws {
		go func() {
			p, err := w.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- p
		}()
	}
	for _, w := range ws {
		waitSubscribed(t, w)
	}
	if n := pubsubConns(t, admin); n != 1 {
		t.Fatalf("%d pub/sub connections for 3 Semaphores of one client", n)
	}
	for i, w := range ws {
		if err := holders[i].Release(ctx); err != nil {
			t.Fatal(err)
		}
		p := <-got
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for numsub(w) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("Semaphore %d: its channel still subscribed with no waiter", i)
			}
			time.Sleep(time.Millisecond)
		}
		for _, other := range ws[i+1:] {
			if numsub(other) != 1 {
				t.Errorf("a channel with a waiter unsubscribed")
			}
		}
	}
	noHubs(t)
	deadline := time.Now().Add(5 * time.Second)
	for pubsubConns(t, admin) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pub/sub connection outlives the waiters")
		}
		time.Sleep(time.Millisecond)
	}
	leftNothing(t, ws[:]...)
}
