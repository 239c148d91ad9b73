package redissync

import (
	"context"
	"sync/atomic"
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
func TestHandoffAfterLongWaitFastServerClock(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.ClockTTL(true)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	t0 := time.Now()
	const rate = 1.015
	serverNow := func() time.Time {
		return start.Add(time.Duration(float64(time.Since(t0)) * rate))
	}
	mr.SetTime(serverNow())
	var stop atomic.Bool
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for !stop.Load() {
			mr.SetTime(serverNow())
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() { stop.Store(true); <-ticked }()

	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := context.Background()
	holder := mustNew(t, Config{Client: newClient(), Name: "drift", N: 1, Lease: time.Minute, Poll: time.Hour})
	w := mustNew(t, Config{Client: newClient(), Name: "drift", N: 1, Lease: 100 * time.Millisecond, Poll: time.Hour})
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
		time.Sleep(200 * time.Microsecond)
	}
	if gone := time.Now(); gone.Before(until) {
		t.Errorf("the waiter's lease is proven until %v after its key expired", until.Sub(gone))
	}
	_ = q.Release(ctx)
}
