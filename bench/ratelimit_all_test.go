package bench

import (
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// BenchmarkCombinedAllowN: AllowN(1) of two limits at once. ctxsync is
// ratelimit.All of two TokenBuckets; one-tokenbucket is a single bucket's
// AllowN, the floor All is measured against (the target is at most 2.2
// times it); x-time-rate-pair is what users of x/time/rate build by hand:
// a reservation on each limiter, both cancelled if either would have to
// wait. case=granted has room in both; case=refused finds the second empty,
// so the first must give its token back.
func BenchmarkCombinedAllowN(b *testing.B) {
	for _, refused := range []bool{false, true} {
		name := "case=granted"
		second := func() (*ratelimit.TokenBucket, *rate.Limiter) {
			return ratelimit.NewTokenBucket(benchRate, benchBurst), rate.NewLimiter(benchRate, benchBurst)
		}
		if refused {
			name = "case=refused"
			second = func() (*ratelimit.TokenBucket, *rate.Limiter) {
				tb, xl := ratelimit.NewTokenBucket(1e-3, 1), rate.NewLimiter(1e-3, 1)
				tb.Allow()
				xl.Allow()
				return tb, xl
			}
		}
		b.Run(name+"/impl=ctxsync", func(b *testing.B) {
			b.ReportAllocs()
			tb2, _ := second()
			l := ratelimit.All(ratelimit.NewTokenBucket(benchRate, benchBurst), tb2)
			n := 0
			for b.Loop() {
				if l.AllowN(1) {
					n++
				}
			}
			sink = n
		})
		b.Run(name+"/impl=one-tokenbucket", func(b *testing.B) {
			b.ReportAllocs()
			l, _ := second()
			n := 0
			for b.Loop() {
				if l.AllowN(1) {
					n++
				}
			}
			sink = n
		})
		b.Run(name+"/impl=x-time-rate-pair", func(b *testing.B) {
			b.ReportAllocs()
			_, l2 := second()
			l1 := rate.NewLimiter(benchRate, benchBurst)
			n := 0
			for b.Loop() {
				now := time.Now()
				r1 := l1.ReserveN(now, 1)
				r2 := l2.ReserveN(now, 1)
				if r1.OK() && r2.OK() && r1.DelayFrom(now) == 0 && r2.DelayFrom(now) == 0 {
					n++
					continue
				}
				// Cancelled in reverse, as the peers do; x/time/rate gives
				// back only what no later reservation depends on.
				r2.CancelAt(now)
				r1.CancelAt(now)
			}
			sink = n
		})
	}
}
