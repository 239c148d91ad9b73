package ctxsyncotel_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// okTransport answers every request 200 without sending it.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: http.NoBody, Request: r}, nil
}

// TestLimiterMetricsOfTransportNoPhantomRefusals: the instruments of a Tally
// around a ratelimit.Transport's per-host limiters count each request once,
// as a wait: three requests to one host, none refused and two of them
// waiting, read ctxsync.ratelimit.decisions{refused} 2 (AllowN tried before
// WaitN); and a request refused for its deadline counted as a failed wait
// and a refusal both.
func TestLimiterMetricsOfTransportNoPhantomRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewLimiterMetrics("api", mp)
		if err != nil {
			t.Fatal(err)
		}
		tally := &ratelimit.Tally{OnWait: m.OnWait(nil)}
		reg, err := m.Observe(tally)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Unregister() }()
		tr := &ratelimit.Transport{Base: okTransport{}, PerHost: ratelimit.NewKeyed(func(string) ratelimit.Taker {
			return tally.Wrap(ratelimit.NewTokenBucket(10, 1))
		}, ratelimit.KeyedConfig{})}
		send := func(timeout time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			return err
		}
		for i := range 3 {
			if err := send(time.Hour); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		if err := send(50 * time.Millisecond); err == nil {
			t.Fatal("request with its deadline before the token: err = nil")
		}

		c := collect(t, r)
		for _, w := range []struct {
			name string
			kv   attribute.KeyValue
			want int64
		}{
			{"ctxsync.ratelimit.decisions", decision("allowed"), 0},
			{"ctxsync.ratelimit.decisions", decision("refused"), 0},
			{"ctxsync.ratelimit.waits", waitEnd("taken"), 3},
			{"ctxsync.ratelimit.waits", waitEnd("failed"), 1},
		} {
			if got := c.point(t, w.name, limiterName, w.kv); got != w.want {
				t.Errorf("%s{%v} = %d, want %d", w.name, w.kv.Value.String(), got, w.want)
			}
		}
		if h := c.hist(t, "ctxsync.ratelimit.wait.duration", limiterName, waitEnd("taken")); h.Count != 3 || !near(h.Sum, 0.2) {
			t.Errorf("wait.duration{taken}: count %d sum %v, want 3 and 0.2", h.Count, h.Sum)
		}
		if h := c.hist(t, "ctxsync.ratelimit.wait.duration", limiterName, waitEnd("failed")); h.Count != 1 {
			t.Errorf("wait.duration{failed}: count %d, want 1", h.Count)
		}
	})
}
