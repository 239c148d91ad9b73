package ctxsyncprom_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// okTransport answers every request 200 without sending it.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: http.NoBody, Request: r}, nil
}

// TestTallyOfTransportNoPhantomRefusals: the metrics of a Tally around the
// limiters of a ratelimit.Transport count each request once, as a wait. Per
// host, three requests to one host, none refused and two of them waiting,
// read decisions_total{decision="refused"} 2; globally, a request refused for
// its deadline counted as a failed wait and a refusal both.
func TestTallyOfTransportNoPhantomRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		perHostTally := &ratelimit.Tally{OnWait: c.TallyOnWait("per-host")}
		globalTally := &ratelimit.Tally{OnWait: c.TallyOnWait("global")}
		for name, tally := range map[string]*ratelimit.Tally{"per-host": perHostTally, "global": globalTally} {
			if err := c.AddTally(name, tally); err != nil {
				t.Fatal(err)
			}
		}
		perHost := &ratelimit.Transport{Base: okTransport{}, PerHost: ratelimit.NewKeyed(func(string) ratelimit.Taker {
			return perHostTally.Wrap(ratelimit.NewTokenBucket(10, 1))
		}, ratelimit.KeyedConfig{})}
		global := &ratelimit.Transport{Base: okTransport{}, Limiter: globalTally.Wrap(ratelimit.NewTokenBucket(1, 1))}
		send := func(tr http.RoundTripper, timeout time.Duration) error {
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
			if err := send(perHost, time.Hour); err != nil {
				t.Fatalf("per-host request %d: %v", i, err)
			}
		}
		if err := send(global, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := send(global, 300*time.Millisecond); err == nil {
			t.Fatal("global request with its deadline before the token: err = nil")
		}

		for _, want := range []string{
			`ctxsync_ratelimit_decisions_total{decision="refused",name="per-host"} 0`,
			`ctxsync_ratelimit_decisions_total{decision="allowed",name="per-host"} 0`,
			`ctxsync_ratelimit_decisions_total{decision="refused",name="global"} 0`,
		} {
			if got := scrapeText(t, c, "ctxsync_ratelimit_decisions_total"); !strings.Contains(got, want) {
				t.Errorf("decisions: want %s in\n%s", want, got)
			}
		}
		for _, want := range []string{
			`ctxsync_ratelimit_waits_total{name="per-host",result="taken"} 3`,
			`ctxsync_ratelimit_waits_total{name="per-host",result="failed"} 0`,
			`ctxsync_ratelimit_waits_total{name="global",result="taken"} 1`,
			`ctxsync_ratelimit_waits_total{name="global",result="failed"} 1`,
		} {
			if got := scrapeText(t, c, "ctxsync_ratelimit_waits_total"); !strings.Contains(got, want) {
				t.Errorf("waits: want %s in\n%s", want, got)
			}
		}
		for _, want := range []string{
			`ctxsync_ratelimit_wait_seconds_count{name="per-host",result="taken"} 3`,
			`ctxsync_ratelimit_wait_seconds_count{name="global",result="failed"} 1`,
		} {
			if got := scrapeText(t, c, "ctxsync_ratelimit_wait_seconds"); !strings.Contains(got, want) {
				t.Errorf("wait histogram: want %s in\n%s", want, got)
			}
		}
	})
}
