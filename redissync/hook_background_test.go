package redissync

import (
	"context"
	"testing"
	"time"
)

// hookedLock returns a Lock on a client whose armedHook, panicking before
// the command is sent, the test arms.
func hookedLock(t *testing.T, b backend, name string, lease time.Duration) (*Semaphore, *armedHook) {
	t.Helper()
	c := b.strictClient(t, true)
	h := &armedHook{value: errEarlyHookPanic}
	c.AddHook(h)
	s, err := NewLock(b.config(c, name, 1, lease))
	if err != nil {
		t.Fatal(err)
	}
	warm(t, s)
	return s, h
}

// Regression: a take-back runs in the background (a timer's goroutine, or
// one of its own), where a panic of a client hook (the user's code) ended
// the program: nobody can receive it there. takeBack drops it, and the
// permit is left to its lease, as when Redis does not answer.
func TestTakeBackSurvivesHookPanic(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s, h := hookedLock(t, b, "takebackpanic", time.Minute)
			h.armed.Store(true)
			s.takeBack(s.newID()) // panicked: in a timer's goroutine, the program's end
			if h.armed.Load() {
				t.Fatal("the take-back sent no command")
			}
		})
	}
}

// Regression: a renewal runs in a timer's goroutine, where a panic of a
// client hook ended the program. It counts as a renewal that failed: it is
// tried again sooner, and the holder keeps its permit.
//
// The Lease is long (15 s), and the first renewal is brought forward to now
// rather than waited for: with a Lease of 3 s, the renewals after the one
// that panicked had under two seconds to get an answer, which a loaded
// machine's scheduler (and an embedded Redis starved with the test) did not
// always leave them. The retry comes a twelfth of the Lease later.
func TestRenewalSurvivesHookPanic(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s, h := hookedLock(t, b, "renewpanic", 15*time.Second)
			ctx := context.Background()
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			first := p.until
			h.armed.Store(true) // the next command is the first renewal
			p.next = time.Now()
			p.t.Reset(0)
			p.mu.Unlock()
			deadline := time.Now().Add(20 * time.Second)
			for {
				p.mu.Lock()
				renewed := p.until.After(first)
				p.mu.Unlock()
				if renewed && !h.armed.Load() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no renewal after the one whose hook panicked")
				}
				time.Sleep(10 * time.Millisecond)
			}
			select {
			case <-p.Lost():
				t.Fatal("the permit was lost")
			default:
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Regression: a caller that gives up takes back what its call left (here a
// place in line) in a round trip of its own; a client hook that panicked
// there reached the caller, as it should, but the place stayed in line, and
// the permit was handed to it, held by nobody, for a Lease. It is taken
// back in the background before the panic goes on.
func TestAbandonHookPanicLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s, h := hookedLock(t, b, "abandonpanic", time.Minute)
			ctx := context.Background()
			holder, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := s.newID()
			if r, err := s.attempt(ctx, id, s.entryArg, false); err != nil || r.granted {
				t.Fatalf("attempt = %+v, %v; want a place in line", r, err)
			}
			h.armed.Store(true)
			var panicked any
			func() {
				defer func() { panicked = recover() }()
				s.abandon(ctx, id, time.Now().Add(time.Minute))
			}()
			if panicked != errEarlyHookPanic {
				t.Fatalf("abandon panicked with %v; want the hook's panic", panicked)
			}
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// The place given up in the background: the lock is free at
			// once, not handed to a place nobody holds.
			actx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			p, err := s.Acquire(actx)
			if err != nil {
				t.Fatalf("Acquire = %v; the place of the call that gave up kept the lock", err)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
