package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/semaphore"
)

// BenchmarkWeightedFloor measures the least that any Weighted keeping the
// README's rules can cost for an uncontended Acquire(ctx, 1) and Release(1),
// beside x/sync's Weighted: the floor under SemaphoreUncontended's
// ctxsync-weighted ratio.
//
// The rules ask for two looks at ctx: one before the take (a ctx already done
// fails, even with units free, and changes nothing) and one after it (units
// freed after the ctx ended are not kept, see Lock.Lock). A take and a give
// back are each an atomic read-modify-write on a word that holds the free
// units, whatever the layout. So the rows are built up from the bare
// atomics: two atomic adds; then one look before the take; then both looks.
// Each is inlined into the loop, with no checks of n, no queue and no
// recovery from a ctx that panics, which a real Weighted also needs.
func BenchmarkWeightedFloor(b *testing.B) {
	ctxKinds(b, func(b *testing.B, newCtx func() context.Context) {
		ctx := newCtx()
		b.Run("impl=x-sync", func(b *testing.B) {
			b.ReportAllocs()
			s := semaphore.NewWeighted(4)
			for b.Loop() {
				must(s.Acquire(ctx, 1))
				s.Release(1)
			}
		})
		// A take and a give-back, nothing else: no Weighted can do less.
		b.Run("impl=floor-atomics", func(b *testing.B) {
			b.ReportAllocs()
			var free atomic.Int64
			free.Store(4)
			for b.Loop() {
				if free.Add(-1) < 0 {
					b.Fatal("no units")
				}
				free.Add(1)
			}
		})
		// A look at ctx before the take.
		b.Run("impl=floor-one-look", func(b *testing.B) {
			b.ReportAllocs()
			var free atomic.Int64
			free.Store(4)
			for b.Loop() {
				if ctx.Err() != nil || free.Add(-1) < 0 {
					b.Fatal("no units")
				}
				free.Add(1)
			}
		})
		// A look before the take and one after it, as the rules ask.
		b.Run("impl=floor-two-looks", func(b *testing.B) {
			b.ReportAllocs()
			var free atomic.Int64
			free.Store(4)
			for b.Loop() {
				if ctx.Err() != nil || free.Add(-1) < 0 || ctx.Err() != nil {
					b.Fatal("no units")
				}
				free.Add(1)
			}
		})
	})
}
