package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/ctxsync/ctxsync"
	"golang.org/x/sync/semaphore"
)

// BenchmarkSemaphoreUncontended: Acquire then Release, one goroutine.
func BenchmarkSemaphoreUncontended(b *testing.B) {
	ctxKinds(b, func(b *testing.B, newCtx func() context.Context) {
		ctx := newCtx()
		b.Run("impl=ctxsync", func(b *testing.B) {
			b.ReportAllocs()
			s := ctxsync.NewSemaphore(4)
			for b.Loop() {
				must(s.Acquire(ctx))
				s.Release()
			}
		})
		b.Run("impl=ctxsync-weighted", func(b *testing.B) {
			b.ReportAllocs()
			s := ctxsync.NewWeighted(4)
			for b.Loop() {
				must(s.Acquire(ctx, 1))
				s.Release(1)
			}
		})
		uncontendedPeers(b, ctx, 4)
	})
}

// BenchmarkSemaphoreContended: more goroutines than permits. At 16 on 2, nearly
// every Acquire waits, so this measures the hand-off from Release to a waiter.
func BenchmarkSemaphoreContended(b *testing.B) {
	for _, c := range []struct{ g, n int }{{2, 1}, {16, 2}} {
		name := fmt.Sprintf("goroutines=%d/capacity=%d/impl=", c.g, c.n)
		b.Run(name+"ctxsync", func(b *testing.B) {
			s := ctxsync.NewSemaphore(c.n)
			inGoroutines(b, c.g, func(ctx context.Context) {
				must(s.Acquire(ctx))
				s.Release()
			})
		})
		b.Run(name+"ctxsync-weighted", func(b *testing.B) {
			s := ctxsync.NewWeighted(int64(c.n))
			inGoroutines(b, c.g, func(ctx context.Context) {
				must(s.Acquire(ctx, 1))
				s.Release(1)
			})
		})
		b.Run(name+"chan", func(b *testing.B) {
			ch := make(chan struct{}, c.n)
			inGoroutines(b, c.g, func(ctx context.Context) {
				ch <- struct{}{}
				<-ch
			})
		})
		b.Run(name+"chan-select", func(b *testing.B) {
			ch := make(chan struct{}, c.n)
			inGoroutines(b, c.g, func(ctx context.Context) {
				select {
				case ch <- struct{}{}:
				case <-ctx.Done():
					panic(ctx.Err())
				}
				<-ch
			})
		})
		b.Run(name+"x-sync", func(b *testing.B) {
			s := semaphore.NewWeighted(int64(c.n))
			inGoroutines(b, c.g, func(ctx context.Context) {
				must(s.Acquire(ctx, 1))
				s.Release(1)
			})
		})
	}
}

// BenchmarkSemaphoreHold: 16 goroutines share 2 permits, as in
// BenchmarkSemaphoreContended, but each does some work while it holds one
// (about half a microsecond here), as a caller that guards real work would.
func BenchmarkSemaphoreHold(b *testing.B) {
	const g, n, work = 16, 2, 1000
	name := fmt.Sprintf("goroutines=%d/capacity=%d/work=%d/impl=", g, n, work)
	b.Run(name+"ctxsync", func(b *testing.B) {
		s := ctxsync.NewSemaphore(n)
		inGoroutines(b, g, func(ctx context.Context) {
			must(s.Acquire(ctx))
			busyWork(work)
			s.Release()
		})
	})
	b.Run(name+"chan-select", func(b *testing.B) {
		ch := make(chan struct{}, n)
		inGoroutines(b, g, func(ctx context.Context) {
			select {
			case ch <- struct{}{}:
			case <-ctx.Done():
				panic(ctx.Err())
			}
			busyWork(work)
			<-ch
		})
	})
	b.Run(name+"x-sync", func(b *testing.B) {
		s := semaphore.NewWeighted(n)
		inGoroutines(b, g, func(ctx context.Context) {
			must(s.Acquire(ctx, 1))
			busyWork(work)
			s.Release(1)
		})
	})
}
