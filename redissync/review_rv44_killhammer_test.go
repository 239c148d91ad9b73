package redissync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPubSubKillHammer: two processes (clients), each with a Keyed lock, a
// Keyed of two permits per key and plain Semaphores of one and two permits,
// all sharing the client's one subscription; a couple of hundred goroutines
// acquire at random across the keys (among them "", braces, colons, bytes
// that are not UTF-8 and a long key) and the Semaphores, some with a ctx that
// ends at random, while the subscriptions are killed (CLIENT KILL TYPE
// pubsub) at random, and their SUBSCRIBEs made to fail now and then. With a Poll of an hour and a Lease of a minute, a
// waiter is served only by a message, a release's reply, or the wake-up of
// a resubscription: one whose ctx (20 s) ends first was never told.
//
// Checked: never more than N holders of a name; a lock's tokens increase in
// the order it is held; every waiter with the long ctx is served, and every
// other returns a permit or its ctx's error, within a Timeout of its ctx's
// end (generously); afterwards nothing is held or queued in Redis, no key
// kept by a Keyed, no channel subscribed, no subscription left open.
func TestPubSubKillHammer(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	admin := b.client(t)
	const timeout = 5 * time.Second
	cfg := func(c redis.UniversalClient, name string, n int) Config {
		return Config{Client: c, Name: name, N: n, Lease: time.Minute, Timeout: timeout, Poll: time.Hour}
	}
	keys := []string{"", "{", "}", ":", "a:b", "x}y{z", "{k}", "\xff\xfe\x00", strings.Repeat("long", 250), "p", "q", "r"}
	type target struct {
		n       int
		acquire []func(context.Context, bool) (*Permit, error) // per process; bool: TryAcquire
		mu      sync.Mutex
		inside  int
		last    int64 // a lock's highest token held
	}
	var targets []*target
	type proc struct {
		c     *redis.Client
		keyed []*Keyed
		sems  []*Semaphore
	}
	// Besides the kills, a SUBSCRIBE fails now and then, as a write to a
	// connection that Redis dropped does.
	var arm atomic.Bool
	var only atomic.Value
	procs := make([]*proc, 2)
	for i := range procs {
		c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
			ReadTimeout: 2 * timeout, WriteTimeout: 2 * timeout, MaxRetries: -1,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &failSubscribeConn{Conn: conn, arm: &arm, only: &only}, nil
			}})
		t.Cleanup(func() { _ = c.Close() })
		p := &proc{c: c}
		for _, n := range []int{1, 2} {
			k, err := NewKeyed(cfg(c, fmt.Sprintf("hk%d", n), n))
			if err != nil {
				t.Fatal(err)
			}
			p.keyed = append(p.keyed, k)
		}
		for j, n := range []int{1, 1, 1, 2, 2, 2} {
			p.sems = append(p.sems, mustNew(t, cfg(c, fmt.Sprintf("hs%d", j), n)))
		}
		procs[i] = p
	}
	for ki, n := range []int{1, 2} {
		for _, key := range keys {
			tg := &target{n: n}
			for _, p := range procs {
				k := p.keyed[ki]
				tg.acquire = append(tg.acquire, func(ctx context.Context, try bool) (*Permit, error) {
					if try {
						return k.TryAcquire(ctx, key)
					}
					return k.Acquire(ctx, key)
				})
			}
			targets = append(targets, tg)
		}
	}
	for j := range procs[0].sems {
		tg := &target{n: procs[0].sems[j].n}
		for _, p := range procs {
			s := p.sems[j]
			tg.acquire = append(tg.acquire, func(ctx context.Context, try bool) (*Permit, error) {
				if try {
					return s.TryAcquire(ctx)
				}
				return s.Acquire(ctx)
			})
		}
		targets = append(targets, tg)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var served, cancelled, kills atomic.Int64
	const long = 20 * time.Second
	worker := func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tg := targets[rand.N(len(targets))]
			acquire := tg.acquire[rand.N(len(tg.acquire))]
			d, patient := long, true
			if rand.N(3) == 0 {
				d, patient = time.Duration(rand.N(50_000))*time.Microsecond, false
			}
			try := !patient && rand.N(4) == 0
			actx, cancel := context.WithTimeout(ctx, d)
			p, err := acquire(actx, try)
			end, _ := actx.Deadline()
			cancel()
			if late := time.Since(end); late > 3*timeout {
				t.Errorf("Acquire returned %v after its ctx ended", late)
			}
			if err != nil {
				switch {
				case patient:
					t.Errorf("a waiter with a ctx of %v: %v", long, err)
				case try && errors.Is(err, ErrWouldWait), errors.Is(err, context.DeadlineExceeded):
					cancelled.Add(1)
				default:
					t.Errorf("Acquire: %v", err)
				}
				continue
			}
			served.Add(1)
			tg.mu.Lock()
			tg.inside++
			if tg.inside > tg.n {
				t.Errorf("%d holders of a name of %d permits", tg.inside, tg.n)
			}
			if tg.n == 1 {
				if p.Token() <= tg.last {
					t.Errorf("a lock's token %d after %d", p.Token(), tg.last)
				}
				tg.last = p.Token()
			}
			tg.mu.Unlock()
			time.Sleep(time.Duration(rand.N(1000)) * time.Microsecond)
			tg.mu.Lock()
			tg.inside--
			tg.mu.Unlock()
			if err := p.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		}
	}
	for range 200 {
		wg.Add(1)
		go worker()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(10+rand.N(60)) * time.Millisecond):
			}
			if rand.N(2) == 0 {
				arm.Store(true)
				continue
			}
			if err := admin.Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
				t.Error(err)
			}
			kills.Add(1)
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	arm.Store(false)
	t.Logf("%d served, %d gave up, %d kills", served.Load(), cancelled.Load(), kills.Load())

	for _, p := range procs {
		for _, k := range p.keyed {
			awaitKeyedIdle(t, k, "after the run")
		}
		for _, s := range p.sems {
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Errorf("%s after the run: %d held, %d queued", s.keys[0], held, queued)
			}
		}
	}
	for _, p := range procs {
		for _, k := range p.keyed {
			for _, key := range keys {
				s := k.newSemaphore(k.name, key)
				if held, queued := counts(t, s); held != 0 || queued != 0 {
					t.Errorf("%s after the run: %d held, %d queued", s.keys[0], held, queued)
				}
			}
		}
	}
	// The subscriptions end a linger after their last waiter.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		hubsMu.Lock()
		open := 0
		for _, p := range procs {
			if hubs[p.c] != nil {
				open++
			}
		}
		hubsMu.Unlock()
		chans, err := admin.PubSubChannels(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if open == 0 && len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the run: %d subscriptions open, channels %q subscribed", open, chans)
		}
	}
}
