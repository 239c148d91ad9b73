package bench

import (
	"context"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/ratelimit/redislimit"
)

// BenchmarkRedisAllowLimits: one decision of two limits per key through a
// real Redis server on loopback, serially. ctxsync checks and takes both in
// one script, one round trip; redis_rate-pair is what its users build: one
// Allow per limit, two round trips, and the first limit's event is lost
// when the second refuses (redis_rate cannot give it back).
func BenchmarkRedisAllowLimits(b *testing.B) {
	b.Run("limits=2/impl=ctxsync", func(b *testing.B) {
		c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true})
		defer c.Close()
		l, err := redislimit.New(redislimit.Config{Client: c, Rate: 1e6, Burst: 1e6, Timeout: time.Second,
			Prefix: "limits:", Limits: []redislimit.Limit{{Rate: 1e6, Burst: 1e6}}})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if _, err := l.TakeContext(ctx, "warm-up", 1); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := l.TakeContext(ctx, "bench-key", 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("limits=2/impl=redis_rate-pair", func(b *testing.B) {
		c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true})
		defer c.Close()
		l := redis_rate.NewLimiter(c)
		limit := redis_rate.Limit{Rate: 1e6, Burst: 1e6, Period: time.Second}
		ctx := context.Background()
		if _, err := l.Allow(ctx, "warm-up", limit); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r, err := l.Allow(ctx, "pair:bench-key:1", limit)
			if err != nil {
				b.Fatal(err)
			}
			if r.Allowed > 0 {
				if _, err := l.Allow(ctx, "pair:bench-key:2", limit); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
