package ctxsyncotel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/ratelimit"
)

var limiterName = ctxsyncotel.LimiterNameKey.String("api")

func decision(d string) attribute.KeyValue { return ctxsyncotel.LimiterDecisionKey.String(d) }
func waitEnd(w string) attribute.KeyValue  { return ctxsyncotel.LimiterWaitKey.String(w) }

// TestLimiterMetrics: a bucket of 10 tokens a second and a burst of 1; an
// Allow that takes the token, one refused, a Wait of 100ms for the next, and
// a Wait whose ctx ends after 50ms.
func TestLimiterMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewLimiterMetrics("api", mp)
		if err != nil {
			t.Fatal(err)
		}
		var mine int
		tally := &ratelimit.Tally{OnWait: m.OnWait(func(time.Duration, error) { mine++ })}
		l := tally.Wrap(ratelimit.NewTokenBucket(10, 1))
		reg, err := m.Observe(tally)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		if !l.AllowN(1) {
			t.Fatal("first AllowN = false")
		}
		if l.AllowN(1) {
			t.Fatal("second AllowN = true")
		}
		if err := l.WaitN(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := l.WaitN(ctx, 1); err == nil {
			t.Fatal("WaitN past its ctx's deadline = nil")
		}

		c := collect(t, r)
		c.checkKinds(t, map[string]struct {
			kind kind
			unit string
		}{
			"ctxsync.ratelimit.decisions":     {counter, "{decision}"},
			"ctxsync.ratelimit.waits":         {counter, "{wait}"},
			"ctxsync.ratelimit.wait.duration": {histogram, "s"},
		})
		for _, w := range []struct {
			name string
			kv   attribute.KeyValue
			want int64
		}{
			{"ctxsync.ratelimit.decisions", decision("allowed"), 1},
			{"ctxsync.ratelimit.decisions", decision("refused"), 1},
			{"ctxsync.ratelimit.waits", waitEnd("taken"), 1},
			{"ctxsync.ratelimit.waits", waitEnd("failed"), 1},
		} {
			if got := c.point(t, w.name, limiterName, w.kv); got != w.want {
				t.Errorf("%s{%v} = %d, want %d", w.name, w.kv.Value.String(), got, w.want)
			}
		}
		if h := c.hist(t, "ctxsync.ratelimit.wait.duration", limiterName, waitEnd("taken")); h.Count != 1 || !near(h.Sum, 0.1) {
			t.Errorf("wait.duration{taken}: count %d sum %v, want 1 and 0.1", h.Count, h.Sum)
		}
		// The token bucket refuses at once a wait that cannot end before
		// the deadline, or waits until it ends: either way, one failure.
		if h := c.hist(t, "ctxsync.ratelimit.wait.duration", limiterName, waitEnd("failed")); h.Count != 1 {
			t.Errorf("wait.duration{failed}: count %d, want 1", h.Count)
		}
		if mine != 2 {
			t.Errorf("the user's OnWait was called %d times, want 2", mine)
		}
	})
}
