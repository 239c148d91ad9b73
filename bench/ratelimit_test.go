package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	uber "go.uber.org/ratelimit"
	"golang.org/x/time/rate"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// A rate high enough that Allow is mostly granted: the benchmarks measure the
// decision, not the refusals.
const (
	benchRate  = 1e9
	benchBurst = 1000
)

// BenchmarkTokenBucketAllow: one Allow, serially and from every core; beside
// x/time/rate and a bare clock read, the floor of any limiter that reads the
// time.
func BenchmarkTokenBucketAllow(b *testing.B) {
	b.Run("mode=serial/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		l := ratelimit.NewTokenBucket(benchRate, benchBurst)
		n := 0
		for b.Loop() {
			if l.Allow() {
				n++
			}
		}
		sink = n
	})
	b.Run("mode=serial/impl=x-time-rate", func(b *testing.B) {
		b.ReportAllocs()
		l := rate.NewLimiter(benchRate, benchBurst)
		n := 0
		for b.Loop() {
			if l.Allow() {
				n++
			}
		}
		sink = n
	})
	b.Run("mode=serial/impl=time.Now", func(b *testing.B) {
		b.ReportAllocs()
		var t time.Time
		for b.Loop() {
			t = time.Now()
		}
		sink = t
	})
	b.Run("mode=parallel/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		l := ratelimit.NewTokenBucket(benchRate, benchBurst)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow()
			}
		})
	})
	b.Run("mode=parallel/impl=x-time-rate", func(b *testing.B) {
		b.ReportAllocs()
		l := rate.NewLimiter(benchRate, benchBurst)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow()
			}
		})
	})
}

// BenchmarkTokenBucketWait: Wait for a token that is there, the common case of
// a client pacing itself below its limit. go.uber.org/ratelimit's Take is a
// pacer that cannot be cancelled.
func BenchmarkTokenBucketWait(b *testing.B) {
	ctx := benchCtx(b)
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		l := ratelimit.NewTokenBucket(benchRate, benchBurst)
		for b.Loop() {
			must(l.Wait(ctx))
		}
	})
	b.Run("impl=x-time-rate", func(b *testing.B) {
		b.ReportAllocs()
		l := rate.NewLimiter(benchRate, benchBurst)
		for b.Loop() {
			must(l.Wait(ctx))
		}
	})
	b.Run("impl=uber-ratelimit", func(b *testing.B) {
		b.ReportAllocs()
		l := uber.New(int(benchRate), uber.WithSlack(benchBurst))
		for b.Loop() {
			l.Take()
		}
	})
}

// BenchmarkKeyedAllow: Allow on one of 10 000 keys, from every core; beside
// sethvargo/go-limiter's memorystore, a per-key store of token buckets.
func BenchmarkKeyedAllow(b *testing.B) {
	const keys = 10_000
	names := make([]string, keys)
	for i := range names {
		names[i] = "client-" + strconv.Itoa(i)
	}
	b.Run("keys=10000/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		k := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
			return ratelimit.NewTokenBucket(benchRate, benchBurst)
		}, ratelimit.KeyedConfig{})
		for _, n := range names {
			k.Allow(n)
		}
		var next atomic.Uint64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := next.Add(7919)
			for pb.Next() {
				i++
				k.Allow(names[i%keys])
			}
		})
	})
	b.Run("keys=10000/impl=sethvargo-memorystore", func(b *testing.B) {
		b.ReportAllocs()
		store, err := memorystore.New(&memorystore.Config{Tokens: benchBurst, Interval: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = store.Close(context.Background()) })
		ctx := context.Background()
		for _, n := range names {
			_, _, _, _, _ = store.Take(ctx, n)
		}
		var next atomic.Uint64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := next.Add(7919)
			for pb.Next() {
				i++
				_, _, _, _, _ = store.Take(ctx, names[i%keys])
			}
		})
	})
}
