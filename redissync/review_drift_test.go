package redissync

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestHandoffAfterLongWaitFastServerClock: a waiter handed the lock by
// message places the start of its lease by the time the server's clock moved
// since its last attempt. A server clock running a little fast (1.5%, within
// the 2% the leases allow for) makes that time longer than the real one, by
// as much more as the wait was long: the waiter must not believe it holds
// past the moment its key expires and another may take the lock.
//
// The server's clock is set before each command the test's clients send
// (a hook of theirs), from the real clock at that moment: so every reading
// of it, and every expiry, is where a clock running fast would put it,
// whatever the machine's load. (A goroutine that set it every 200 µs fell
// behind on a loaded machine, and its lags, not the waiter, made the
// failures.)
func TestHandoffAfterLongWaitFastServerClock(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.ClockTTL(true)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	t0 := time.Now()
	const rate = 1.015
	var mu sync.Mutex // the clock set never steps back
	tick := func() {
		mu.Lock()
		defer mu.Unlock()
		mr.SetTime(start.Add(time.Duration(float64(time.Since(t0)) * rate)))
	}
	tick()

	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		c.AddHook(clockHook(tick))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := context.Background()
	holder := mustNew(t, Config{Client: newClient(), Name: "drift", N: 1, Lease: time.Minute, Poll: time.Hour})
	// A lease of 2 s, not less: its Timeout (600 ms) is no race for a
	// loaded machine's round trips, and 1.5% of the wait (30 ms) still
	// exceeds the 2% that validUntil allows of the lease (40 ms) less the
	// clock's 1.5% of it (30 ms) and the milliseconds rounded off: a waiter
	// that did not allow for the clock over the wait fails.
	w := mustNew(t, Config{Client: newClient(), Name: "drift", N: 1, Lease: 2 * time.Second, Timeout: 600 * time.Millisecond, Poll: time.Hour})
	w.noRenew.Store(true) // its lease ends by the key's expiry, unrenewed
	p, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Permit, 1)
	go func() {
		q, err := w.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- q
	}()
	waitQueued(t, holder, 1)
	time.Sleep(2 * time.Second)
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if q == nil {
		t.Fatal("no permit")
	}
	q.mu.Lock()
	until := q.until
	q.mu.Unlock()
	for _, ok := holderEnd(t, w, q.id); ok; _, ok = holderEnd(t, w, q.id) {
		time.Sleep(200 * time.Microsecond) // each look sets the server's clock
	}
	if gone := time.Now(); gone.Before(until) {
		t.Errorf("the waiter's lease is proven until %v after its key expired", until.Sub(gone))
	}
	_ = q.Release(ctx)
}

// clockHook calls its function before each command or pipeline its client
// sends.
type clockHook func()

func (h clockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h()
		return next(ctx, cmd)
	}
}

func (h clockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h()
		return next(ctx, cmds)
	}
}
