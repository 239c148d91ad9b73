package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
)

// moreHandovers are the handovers of the primitives that handovers leaves
// out: a KeyedLock's key, a WaitGroup's zero, a Watch's next version, an
// Event's Set.
func moreHandovers() []handover {
	var k ctxsync.KeyedLock[string]
	var wg ctxsync.WaitGroup
	var w ctxsync.Watch[int]
	var ver uint64
	var ev ctxsync.Event
	return []handover{
		{"KeyedLock", func(ctx context.Context) error { return k.Lock(ctx, "k") },
			func(ctx context.Context) error { return k.Lock(ctx, "k") },
			func() { k.Unlock("k") }, func() { k.Unlock("k") }},
		{"WaitGroup", func(context.Context) error { wg.Add(1); return nil },
			wg.Wait, wg.Done, func() {}},
		{"Watch", func(context.Context) error { ver = w.Version(); return nil },
			func(ctx context.Context) error { _, _, err := w.Wait(ctx, ver); return err },
			func() { w.Store(int(ver)) }, func() {}},
		{"Event", func(context.Context) error { ev.Clear(); return nil },
			ev.Wait, ev.Set, func() {}},
	}
}

// TestMorePrimitivesAcrossBubbles is TestPrimitivesAcrossBubbles for the
// zero values of KeyedLock, WaitGroup, Watch and Event: made outside any
// bubble, used by a bubble, then outside any, then by two more bubbles.
func TestMorePrimitivesAcrossBubbles(t *testing.T) {
	hs := moreHandovers()
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

// TestMorePrimitivesMadeInBubble: the same primitives, made inside a bubble,
// keep working after it ends.
func TestMorePrimitivesMadeInBubble(t *testing.T) {
	var hs []handover
	synctest.Test(t, func(t *testing.T) {
		hs = moreHandovers()
		for _, h := range hs {
			h.run(t)
		}
	})
	for _, h := range hs {
		h.run(t)
	}
}
