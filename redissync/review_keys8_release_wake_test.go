package redissync

import (
	"context"
	"errors"
	"testing"
	"time"
)

// errLateHookPanic is what a late armedHook panics with.
var errLateHookPanic = errors.New("a client hook panics after the reply")

// Regression: a client hook that panicked in Release after the release
// script ran lost the script's reply, which names the waiters it handed the
// permit to. A release that fails with an error wakes this Semaphore's
// waiters to ask again; one that panicked woke nobody, and the take-back's
// second run of the script finds nothing to give: the waiter the permit was
// handed to slept until its Poll (here an hour) while holding it, and its
// lease could lapse meanwhile. A panic in the release script's round trip
// must wake the waiters as an error does, before it goes on.
func TestReleaseLateHookPanicWakesTheWaiter(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.strictClient(t, true)
			h := &armedHook{late: true, value: errLateHookPanic}
			c.AddHook(h)
			cfg := b.config(c, "releaselatepanic", 1, time.Minute)
			cfg.Poll = time.Hour // a waiter is woken, not polled
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			var q *Permit
			go func() {
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second) // at once when woken; a lease's end (a minute) if not
				defer cancel()
				var err error
				q, err = s.Acquire(wctx)
				got <- err
			}()
			for { // until the waiter is in line
				s.mu.Lock()
				n := len(s.waiters)
				s.mu.Unlock()
				if n == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // its script has run: it is in Redis's line
			h.armed.Store(true)
			var r any
			func() {
				defer func() { r = recover() }()
				_ = p.Release(ctx)
			}()
			if r != errLateHookPanic {
				t.Fatalf("Release panicked with %v; want the hook's panic", r)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter's Acquire = %v after a Release that handed it the permit; want the permit, at once", err)
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
