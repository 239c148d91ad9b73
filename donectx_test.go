package ctxsync_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// hookCtx is a ctx whose first Err reports it alive and then, before the
// caller can act on the answer, runs hook: as if the caller were preempted
// right after its check while another goroutine cancelled the ctx and freed
// what the caller wants. It makes the narrowest window of the grant rule
// happen every time.
type hookCtx struct {
	context.Context
	once sync.Once
	hook func()
}

func (c *hookCtx) Err() error {
	err := c.Context.Err()
	c.once.Do(c.hook)
	return err
}

// probeCtx is a ctx that ended long ago, whose Err runs probe first: it shows
// what the primitive looks like to others while a call looks at its ctx.
type probeCtx struct {
	context.Context
	probe func()
}

func (c probeCtx) Err() error { c.probe(); return c.Context.Err() }

// A primitive as these tests see it: hold it, give it back, the call under
// test, and whether it is free now.
type takeFree struct {
	name string
	hold func(ctx context.Context) error
	give func()
	take func(ctx context.Context) error // fails in these tests: holds nothing
	free func() bool
}

func takeFrees() []takeFree {
	l := ctxsync.NewLock()
	s := ctxsync.NewSemaphore(1)
	b := ctxsync.NewBoundedSemaphore(1)
	w := ctxsync.NewWeighted(3)
	big := ctxsync.NewWeighted(1 << 33) // beyond the fast path's Add
	rw := ctxsync.NewRWLock()
	rwFree := func() bool {
		if rw.TryLock() {
			rw.Unlock()
			return true
		}
		return false
	}
	return []takeFree{
		{"Lock", l.Lock, l.Unlock, l.Lock, func() bool { return !l.Locked() }},
		{"Semaphore", s.Acquire, s.Release, s.Acquire, func() bool { return s.Available() == 1 }},
		{"BoundedSemaphore", b.Acquire, b.Release, b.Acquire, func() bool { return b.Available() == 1 }},
		{"Weighted", acquireOf(w, 3), func() { w.Release(3) }, acquireOf(w, 3), func() bool { return w.Available() == 3 }},
		{"Weighted/big", acquireOf(big, 1<<33), func() { big.Release(1 << 33) }, acquireOf(big, 1<<33),
			func() bool { return big.Available() == 1<<33 }},
		{"RWLock/Lock", rw.Lock, rw.Unlock, rw.Lock, rwFree},
		{"RWLock/RLock", rw.Lock, rw.Unlock, rw.RLock, rwFree},
	}
}

// TestFreedAfterCtxCheckNotTaken: the caller looked at its ctx, alive; then,
// before it took anything, its ctx ended and what it wants was freed. It
// must not take it: a caller whose ctx ended before the free never gets it.
// (A Weighted request above 1<<32 units took them: its first try skipped the
// second look.)
func TestFreedAfterCtxCheckNotTaken(t *testing.T) {
	for _, p := range takeFrees() {
		t.Run(p.name, func(t *testing.T) {
			require.NoError(t, p.hold(context.Background()))
			inner, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx := &hookCtx{Context: inner, hook: func() {
				cancel() // the ctx ends, and only then ...
				p.give() // ... is it freed
			}}
			require.Equal(t, context.Canceled, p.take(ctx), "got what was freed after its ctx ended")
			require.True(t, p.free(), "given back")
		})
	}
}

// TestDoneCtxChangesNothing: a call whose ctx is already done fails and
// changes nothing, not even for a moment: while it looks at its ctx, the
// primitive is free for others.
func TestDoneCtxChangesNothing(t *testing.T) {
	for _, p := range takeFrees() {
		t.Run(p.name, func(t *testing.T) {
			wasTaken := false
			ctx := probeCtx{testutil.Cancelled(), func() { wasTaken = wasTaken || !p.free() }}
			require.Equal(t, context.Canceled, p.take(ctx))
			require.False(t, wasTaken, "taken, for a moment, by a call whose ctx was done")
			require.True(t, p.free())
		})
	}
}

// TestTakenAndFreedAfterCtxCheckNotTaken: the caller looked at its ctx, alive,
// with what it wants free; then, before it took it, its ctx ended and another
// goroutine took it and freed it again. The caller must not take it: it was
// freed after the ctx ended. (A fast path that looks at ctx once, then takes
// by a CAS from the state it saw before the look, would take it if a take and
// a free left the state as it was.)
func TestTakenAndFreedAfterCtxCheckNotTaken(t *testing.T) {
	for _, p := range takeFrees() {
		t.Run(p.name, func(t *testing.T) {
			inner, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx := &hookCtx{Context: inner, hook: func() {
				cancel() // the ctx ends, and only then ...
				require.NoError(t, p.hold(context.Background()))
				p.give() // ... is it taken and freed
			}}
			require.Equal(t, context.Canceled, p.take(ctx), "got what was freed after its ctx ended")
			require.True(t, p.free(), "given back")
		})
	}
}
