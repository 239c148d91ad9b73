package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/adaptive"
)

// BenchmarkAdaptiveAcquireDone: Acquire then Done, one goroutine, beside
// failsafe-go's adaptive limiter (AcquirePermit then Record) and, as the floor
// of what a limiter costs here, ctxsync's Semaphore, which reads no clock.
func BenchmarkAdaptiveAcquireDone(b *testing.B) {
	ctx := benchCtx(b)
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		l := adaptive.New(adaptive.Config{})
		for b.Loop() {
			t, err := l.Acquire(ctx)
			must(err)
			t.Done(nil)
		}
	})
	b.Run("impl=failsafe-go", func(b *testing.B) {
		b.ReportAllocs()
		l := adaptivelimiter.NewWithDefaults[any]()
		for b.Loop() {
			p, err := l.AcquirePermit(ctx)
			must(err)
			p.Record()
		}
	})
	b.Run("impl=ctxsync-semaphore", func(b *testing.B) {
		b.ReportAllocs()
		s := ctxsync.NewSemaphore(20)
		for b.Loop() {
			must(s.Acquire(ctx))
			s.Release()
		}
	})
}

// BenchmarkAdaptiveAcquireDoneContended: 16 goroutines, with a limit far
// above them (the lock is shared, nobody waits) and pinned at 2 (nearly every
// Acquire waits for a Done to hand it a slot).
func BenchmarkAdaptiveAcquireDoneContended(b *testing.B) {
	for _, limit := range []int{1000, 2} {
		name := fmt.Sprintf("goroutines=16/limit=%d/impl=", limit)
		b.Run(name+"ctxsync", func(b *testing.B) {
			cfg := adaptive.Config{MaxLimit: limit, InitialLimit: limit, MinLimit: limit}
			if limit == 2 {
				cfg.MaxWait = 1 << 62 // wait as the ctx allows, as failsafe-go's AcquirePermit does
			}
			l := adaptive.New(cfg)
			inGoroutines(b, 16, func(ctx context.Context) {
				t, err := l.Acquire(ctx)
				must(err)
				t.Done(nil)
			})
		})
		b.Run(name+"failsafe-go", func(b *testing.B) {
			l := adaptivelimiter.NewBuilder[any]().WithLimits(uint(limit), uint(limit), uint(limit)).Build()
			inGoroutines(b, 16, func(ctx context.Context) {
				p, err := l.AcquirePermit(ctx)
				must(err)
				p.Record()
			})
		})
	}
}
