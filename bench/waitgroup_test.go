package bench

import (
	"sync"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// BenchmarkWaitGroupAddDone: Add(1) then Done, one goroutine, nobody waiting:
// what every task started under a WaitGroup pays.
func BenchmarkWaitGroupAddDone(b *testing.B) {
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		var wg ctxsync.WaitGroup
		for b.Loop() {
			wg.Add(1)
			wg.Done()
		}
	})
	b.Run("impl=sync.WaitGroup", func(b *testing.B) {
		b.ReportAllocs()
		var wg sync.WaitGroup
		for b.Loop() {
			wg.Add(1)
			wg.Done()
		}
	})
}

// BenchmarkWaitGroupGoWait: start 16 goroutines with Go, each doing a little
// work, and Wait for them; ours waits with a cancelable ctx.
func BenchmarkWaitGroupGoWait(b *testing.B) {
	const tasks = 16
	task := func() { busyWork(100) }
	b.Run("tasks=16/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		ctx := benchCtx(b)
		var wg ctxsync.WaitGroup
		for b.Loop() {
			for range tasks {
				wg.Go(task)
			}
			must(wg.Wait(ctx))
		}
	})
	b.Run("tasks=16/impl=sync.WaitGroup", func(b *testing.B) {
		b.ReportAllocs()
		var wg sync.WaitGroup
		for b.Loop() {
			for range tasks {
				wg.Go(task)
			}
			wg.Wait()
		}
	})
}
