package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync"
	"golang.org/x/sync/singleflight"
)

// BenchmarkFlightNewKey: one goroutine, a new key per call, and an fn that
// returns at once: what deduplication costs when there is nothing to share.
// Flight runs fn in a goroutine of its own (a caller must be able to leave),
// where singleflight runs it in the caller's.
func BenchmarkFlightNewKey(b *testing.B) {
	ctx := benchCtx(b)
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		var f ctxsync.Flight[int, int]
		fn := func(context.Context) (int, error) { return 1, nil }
		i := 0
		for b.Loop() {
			i++
			v, err, _ := f.Do(ctx, i, fn)
			must(err)
			sinkInt = v
		}
	})
	b.Run("impl=x-sync-singleflight", func(b *testing.B) {
		b.ReportAllocs()
		var g singleflight.Group
		fn := func() (any, error) { return 1, nil }
		keys := make([]string, 1024) // strconv outside the timed loop
		for i := range keys {
			keys[i] = strconv.Itoa(i)
		}
		i := 0
		for b.Loop() {
			i++
			v, err, _ := g.Do(keys[i&1023], fn)
			must(err)
			sink = v
		}
	})
}

// BenchmarkFlightOneKey: 16 goroutines call Do for one key, with an fn that
// returns at once: the callers that come while a call is in flight share it.
// It reports the calls of fn per Do, as fn-calls/op.
func BenchmarkFlightOneKey(b *testing.B) {
	const g = 16
	b.Run("goroutines=16/impl=ctxsync", func(b *testing.B) {
		var f ctxsync.Flight[string, int]
		var calls atomic.Int64
		fn := func(context.Context) (int, error) { calls.Add(1); return 1, nil }
		inGoroutines(b, g, func(ctx context.Context) {
			v, err, _ := f.Do(ctx, "key", fn)
			must(err)
			if v != 1 {
				panic("wrong result")
			}
		})
		b.ReportMetric(float64(calls.Load())/float64(b.N), "fn-calls/op")
	})
	b.Run("goroutines=16/impl=x-sync-singleflight", func(b *testing.B) {
		var sf singleflight.Group
		var calls atomic.Int64
		fn := func() (any, error) { calls.Add(1); return 1, nil }
		inGoroutines(b, g, func(ctx context.Context) {
			v, err, _ := sf.Do("key", fn)
			must(err)
			if v != 1 {
				panic("wrong result")
			}
		})
		b.ReportMetric(float64(calls.Load())/float64(b.N), "fn-calls/op")
	})
}

// BenchmarkLazyGet: Get of a value made already, against the function that
// sync.OnceValues returns.
func BenchmarkLazyGet(b *testing.B) {
	ctx := benchCtx(b)
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		l := ctxsync.NewLazy(func(context.Context) (int, error) { return 1, nil })
		_, err := l.Get(ctx)
		must(err)
		for b.Loop() {
			v, err := l.Get(ctx)
			if err != nil {
				panic(err)
			}
			sinkInt = v
		}
	})
	b.Run("impl=sync.OnceValues", func(b *testing.B) {
		b.ReportAllocs()
		get := sync.OnceValues(func() (int, error) { return 1, nil })
		_, err := get()
		must(err)
		for b.Loop() {
			v, err := get()
			if err != nil {
				panic(err)
			}
			sinkInt = v
		}
	})
}
