package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// A handover is one use of a primitive with a goroutine that waits: take
// what the primitive guards, start a goroutine that waits for it, then give
// it back, which hands it to the waiter; and a wait that times out.
type handover struct {
	name  string
	take  func(ctx context.Context) error // returns once taken
	wait  func(ctx context.Context) error // blocks until handed over
	give  func()                          // hands over to the waiter
	after func()                          // gives back what the waiter got
}

func handovers() []handover {
	l := new(ctxsync.Lock)
	s := ctxsync.NewSemaphore(1)
	w := ctxsync.NewWeighted(2)
	rw := new(ctxsync.RWLock)
	q := new(ctxsync.Queue[int])
	pq := new(ctxsync.PriorityQueue[int])
	get := func(ctx context.Context) error { _, err := q.Get(ctx); return err }
	pget := func(ctx context.Context) error { _, err := pq.Get(ctx); return err }
	none := func(context.Context) error { return nil }
	return []handover{
		{"Lock", l.Lock, l.Lock, l.Unlock, l.Unlock},
		{"Semaphore", s.Acquire, s.Acquire, s.Release, s.Release},
		{"Weighted", acquireOf(w, 2), acquireOf(w, 2), func() { w.Release(2) }, func() { w.Release(2) }},
		{"RWLock", rw.Lock, rw.RLock, rw.Unlock, rw.RUnlock},
		{"Queue", none, get, func() { q.TryPut(1) }, func() {}},
		{"PriorityQueue", none, pget, func() { pq.TryPut(1, 1) }, func() {}},
	}
}

// run does one handover and one wait that times out, and checks that the
// primitive is free again.
func (h handover) run(t *testing.T) {
	t.Helper()
	require.NoError(t, h.take(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	require.Equal(t, context.DeadlineExceeded, h.wait(ctx), "%s: a wait that times out", h.name)
	cancel()
	got := make(chan error, 1)
	go func() { got <- h.wait(context.Background()) }()
	time.Sleep(time.Millisecond) // virtual inside a bubble; a pause outside
	h.give()
	require.NoError(t, <-got, h.name)
	h.after()
}

// TestPrimitivesAcrossBubbles: primitives made outside any bubble (as
// package-level ones are) are used by a bubble, where a goroutine waiting on
// them is durably blocked and timeouts fire on virtual time; then outside any
// bubble; then by another bubble. No channel of one bubble may carry over to
// the next use: that would be a fatal error.
func TestPrimitivesAcrossBubbles(t *testing.T) {
	hs := handovers()
	inBubble := func() {
		synctest.Test(t, func(t *testing.T) {
			for _, h := range hs {
				h.run(t)
			}
		})
	}
	inBubble()
	for _, h := range hs {
		h.run(t)
	}
	inBubble()
	inBubble()
}

// TestPrimitivesMadeInBubble: primitives made inside a bubble keep working
// after it ends.
func TestPrimitivesMadeInBubble(t *testing.T) {
	var hs []handover
	synctest.Test(t, func(t *testing.T) {
		hs = handovers()
		for _, h := range hs {
			h.run(t)
		}
	})
	for _, h := range hs {
		h.run(t)
	}
}
