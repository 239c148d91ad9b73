package redissync

import (
	"context"
	"errors"
	"testing"
)

// TestTryAcquireNilPermitNilError pins a bug: TryAcquire of a held lock
// returned a nil Permit and a nil error, which the usual
// "if err != nil { return err }; defer p.Release(ctx)" took for a permit,
// and then panicked on. It must return ErrWouldWait with the nil Permit:
// for a held lock (its fast way and its full script), one with a waiter in
// line, one handed to that waiter, and a Semaphore whose permits are all
// held.
func TestTryAcquireNilPermitNilError(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			wantWouldWait := func(what string, s *Semaphore) {
				t.Helper()
				p, err := s.TryAcquire(ctx)
				if p != nil || !errors.Is(err, ErrWouldWait) {
					t.Errorf("TryAcquire of %s = %v, %v; want a nil Permit and ErrWouldWait", what, p != nil, err)
				}
				if p != nil {
					_ = p.Release(ctx)
				}
			}

			lock := mustNew(t, b.roomyConfig(t, "wouldwait-lock", 1))
			other := mustNew(t, b.roomyConfig(t, "wouldwait-lock", 1))
			p, err := lock.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantWouldWait("a lock held by another Semaphore", other) // the fast way
			wantWouldWait("a lock held by another Semaphore, again", other)
			wantWouldWait("a lock held by the same Semaphore", lock)

			// A waiter in line: when the holder releases, the permit is
			// handed to it, and a TryAcquire meanwhile must not take it.
			got := make(chan *Permit, 1)
			go func() {
				q, _ := other.Acquire(ctx)
				got <- q
			}()
			waitQueued(t, lock, 1)
			wantWouldWait("a lock held with a waiter in line", lock)
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			q := <-got
			if q == nil {
				t.Fatal("the waiter got no permit")
			}
			wantWouldWait("a lock handed to the waiter", lock)
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}

			sem := mustNew(t, b.roomyConfig(t, "wouldwait-sem", 2))
			var held []*Permit
			for range 2 {
				p, err := sem.TryAcquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, p)
			}
			wantWouldWait("a Semaphore of 2 with both permits held", sem)
			for _, p := range held {
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
