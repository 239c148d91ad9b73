// Package bench measures every ctxsync primitive beside the library or idiom a
// user would pick instead, in the same `go test -bench` run, so that the ratios
// hold on a noisy machine. Sub-benchmarks use benchstat's key=value form:
// BenchmarkSemaphoreContended/goroutines=16/capacity=2/impl=ctxsync.
package bench

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sync/semaphore"
)

// benchCtx returns a cancelable context, as a request would carry: the
// context-aware implementations then pay for a real Done channel, not for the
// nil one of context.Background.
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx
}

// ctxKinds runs f once with context.Background, whose Done channel is nil,
// and once with a cancelable context, as a request would carry, as
// sub-benchmarks ctx=background and ctx=cancel. newCtx makes a context of
// the kind: call it once per goroutine, as each request has its own; the
// cancelable ones are cancelled when the benchmark ends.
func ctxKinds(b *testing.B, f func(b *testing.B, newCtx func() context.Context)) {
	b.Run("ctx=background", func(b *testing.B) {
		f(b, context.Background)
	})
	b.Run("ctx=cancel", func(b *testing.B) {
		var mu sync.Mutex
		var cancels []context.CancelFunc
		b.Cleanup(func() {
			for _, c := range cancels {
				c()
			}
		})
		f(b, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			mu.Lock()
			cancels = append(cancels, cancel)
			mu.Unlock()
			return ctx
		})
	})
}

// inGoroutines runs op b.N times in total, spread over g goroutines, and
// reports allocations. Each goroutine passes op its own cancelable context, as
// each request in a server carries its own: goroutines that shared one would
// all contend on the lock of its Done channel, which is not what users see.
func inGoroutines(b *testing.B, g int, op func(ctx context.Context)) {
	b.ReportAllocs()
	ctxs := make([]context.Context, g)
	for i := range ctxs {
		ctxs[i] = benchCtx(b)
	}
	per, extra := b.N/g, b.N%g
	var wg sync.WaitGroup
	b.ResetTimer()
	for i, ctx := range ctxs {
		n := per
		if i < extra {
			n++
		}
		wg.Go(func() {
			for range n {
				op(ctx)
			}
		})
	}
	wg.Wait()
}

// must panics when a context-aware acquire fails: with a live context it never
// does. (b.Fatal may not be called from the goroutines inGoroutines starts.)
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// sink keeps results alive; sinkInt keeps ints alive without boxing them,
// which would allocate in the timed loop.
var (
	sink    any
	sinkInt int
)

// spinYield gives other goroutines a chance to run while a benchmark's driver
// waits for them to reach a state.
func spinYield() { runtime.Gosched() }

// busyWork spends CPU in proportion to n, without touching shared memory, as
// the work a caller does while it holds a lock or a permit.
func busyWork(n int) {
	x := 0
	for i := range n {
		x += i * i
	}
	if x == -1 { // never: keeps the loop from being optimized away, race-free
		sinkInt = x
	}
}

// uncontendedPeers runs the peers of an uncontended acquire and release of
// one of capacity permits, one goroutine: a buffered channel, the same in a
// select with ctx.Done(), and x/sync's semaphore.
func uncontendedPeers(b *testing.B, ctx context.Context, capacity int) {
	b.Run("impl=chan", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan struct{}, capacity)
		for b.Loop() {
			ch <- struct{}{}
			<-ch
		}
	})
	b.Run("impl=chan-select", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan struct{}, capacity)
		for b.Loop() {
			select {
			case ch <- struct{}{}:
			case <-ctx.Done():
				panic(ctx.Err())
			}
			<-ch
		}
	})
	b.Run("impl=x-sync", func(b *testing.B) {
		b.ReportAllocs()
		s := semaphore.NewWeighted(int64(capacity))
		for b.Loop() {
			must(s.Acquire(ctx, 1))
			s.Release(1)
		}
	})
}
