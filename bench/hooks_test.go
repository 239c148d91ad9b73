package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// The cost of the library's hooks for metrics, ours against ours: each
// operation with its hooks unset and with hooks set that do the least a
// collector does (an atomic add). With hooks unset the rows match those of
// BenchmarkPoolAcquireRelease, BenchmarkBreakerExecute and
// BenchmarkTokenBucketAllow; extra/ctxsyncprom and extra/ctxsyncotel measure
// their own hooks.

// counted is what the hooks set here add to: shared, as a collector's
// counters are.
var counted atomic.Int64

func poolHooks() pool.Hooks {
	return pool.Hooks{
		OnAcquire:         func(pool.AcquireEvent) { counted.Add(1) },
		OnRelease:         func() { counted.Add(1) },
		OnCreate:          func(pool.CreateEvent) { counted.Add(1) },
		OnClose:           func(pool.CloseReason) { counted.Add(1) },
		OnHealthCheckFail: func(error) { counted.Add(1) },
	}
}

// BenchmarkHooksPool: Acquire then Release of an idle resource.
func BenchmarkHooksPool(b *testing.B) {
	for _, hooks := range []string{"unset", "set"} {
		cfg := pool.Config[*benchConn]{New: newBenchConn, MaxSize: 64}
		if hooks == "set" {
			cfg.Hooks = poolHooks()
		}
		newPool := func(b *testing.B) *pool.Pool[*benchConn] {
			p, err := pool.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Close(context.Background()) })
			return p
		}
		b.Run("run=serial/hooks="+hooks, func(b *testing.B) {
			b.ReportAllocs()
			p := newPool(b)
			ctx := benchCtx(b)
			for b.Loop() {
				r, err := p.Acquire(ctx)
				must(err)
				r.Release()
			}
		})
		b.Run("run=parallel/hooks="+hooks, func(b *testing.B) {
			b.ReportAllocs()
			p := newPool(b)
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := p.Acquire(ctx)
					must(err)
					r.Release()
				}
			})
		})
	}
}

// BenchmarkHooksBreaker: a successful call through a closed breaker. With
// OnCall set, each call reads the clock twice for its duration.
func BenchmarkHooksBreaker(b *testing.B) {
	for _, hooks := range []string{"unset", "set"} {
		var s breaker.Settings
		if hooks == "set" {
			s.OnCall = func(breaker.CallEvent) { counted.Add(1) }
		}
		b.Run("run=serial/hooks="+hooks, func(b *testing.B) {
			b.ReportAllocs()
			br := breaker.New(s)
			ctx := benchCtx(b)
			for b.Loop() {
				must(br.Execute(ctx, okCall))
			}
		})
		b.Run("run=parallel/hooks="+hooks, func(b *testing.B) {
			b.ReportAllocs()
			br := breaker.New(s)
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					must(br.Execute(ctx, okCall))
				}
			})
		})
	}
}

// BenchmarkHooksTokenBucket: Allow on a bucket that always allows, bare and
// wrapped by a ratelimit.Tally.
func BenchmarkHooksTokenBucket(b *testing.B) {
	for _, hooks := range []string{"unset", "set"} {
		newLimiter := func() ratelimit.Limiter {
			l := ratelimit.NewTokenBucket(1e9, 1<<30)
			if hooks == "set" {
				return new(ratelimit.Tally).Wrap(l)
			}
			return l
		}
		b.Run("run=serial/hooks="+hooks, func(b *testing.B) {
			b.ReportAllocs()
			l := newLimiter()
			for b.Loop() {
				l.AllowN(1)
			}
		})
		b.Run("run=parallel/hooks="+hooks, func(b *testing.B) {
			b.ReportAllocs()
			l := newLimiter()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.AllowN(1)
				}
			})
		})
	}
}
