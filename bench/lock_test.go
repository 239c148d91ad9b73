package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ctxsync/ctxsync"
	"golang.org/x/sync/semaphore"
)

// BenchmarkLockUncontended: Lock then Unlock, one goroutine.
func BenchmarkLockUncontended(b *testing.B) {
	ctxKinds(b, func(b *testing.B, newCtx func() context.Context) {
		ctx := newCtx()
		b.Run("impl=ctxsync", func(b *testing.B) {
			b.ReportAllocs()
			var l ctxsync.Lock
			for b.Loop() {
				must(l.Lock(ctx))
				l.Unlock()
			}
		})
		b.Run("impl=sync.Mutex", func(b *testing.B) {
			b.ReportAllocs()
			var mu sync.Mutex
			for b.Loop() {
				mu.Lock()
				//lint:ignore SA2001 the empty section is what is measured
				mu.Unlock()
			}
		})
		uncontendedPeers(b, ctx, 1)
	})
}

// BenchmarkLockContended: goroutines take turns on one lock.
func BenchmarkLockContended(b *testing.B) {
	for _, g := range []int{2, 16} {
		b.Run(fmt.Sprintf("goroutines=%d/impl=ctxsync", g), func(b *testing.B) {
			var l ctxsync.Lock
			inGoroutines(b, g, func(ctx context.Context) {
				must(l.Lock(ctx))
				l.Unlock()
			})
		})
		b.Run(fmt.Sprintf("goroutines=%d/impl=sync.Mutex", g), func(b *testing.B) {
			var mu sync.Mutex
			inGoroutines(b, g, func(ctx context.Context) {
				mu.Lock()
				//lint:ignore SA2001 the empty section is what is measured
				mu.Unlock()
			})
		})
		b.Run(fmt.Sprintf("goroutines=%d/impl=chan-select", g), func(b *testing.B) {
			ch := make(chan struct{}, 1)
			inGoroutines(b, g, func(ctx context.Context) {
				select {
				case ch <- struct{}{}:
				case <-ctx.Done():
					panic(ctx.Err())
				}
				<-ch
			})
		})
		b.Run(fmt.Sprintf("goroutines=%d/impl=x-sync", g), func(b *testing.B) {
			s := semaphore.NewWeighted(1)
			inGoroutines(b, g, func(ctx context.Context) {
				must(s.Acquire(ctx, 1))
				s.Release(1)
			})
		})
	}
}
