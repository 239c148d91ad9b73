package ratelimit_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

type seams9RT func(*http.Request) (*http.Response, error)

func (f seams9RT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// seams9Sends sends, through the Transport mk builds, two requests to host
// a, then one to each of ten other hosts, each a millisecond after the last,
// all at once; it returns the moments they reached the wire, in order.
func seams9Sends(t *testing.T, mk func(base http.RoundTripper) http.RoundTripper) []time.Duration {
	var sends []time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		rt := mk(seams9RT(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sends = append(sends, time.Since(start))
			mu.Unlock()
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		}))
		var wg sync.WaitGroup
		for _, h := range []string{"a", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"} {
			time.Sleep(time.Millisecond)
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+h+".example/", nil)
				if resp, err := rt.RoundTrip(req); err != nil {
					t.Errorf("%s: %v", h, err)
				} else {
					_ = resp.Body.Close()
				}
			})
		}
		wg.Wait()
	})
	slices.Sort(sends)
	return sends
}

// TestReviewSeams9_GlobalAndPerHostLimitsAtTheWire: a global limit (1 a
// second, bursts of 1) and a per-host one (1 in 10 s) applied together.
// Nested, as two Transports, the outer limit is taken before the inner
// wait: host a's second request takes its global event at 1 s, waits for
// its host until 10 s, and goes out then with the request whose global
// event came at 10 s: two sends at once, past the global burst, while the
// global event of 1 s sent nothing then. Transport's doc says so; this
// pins both the nesting's behaviour and the composition that keeps both
// limits at the wire: PerHost over a Keyed whose limiters are each All of
// the host's bucket and one global bucket, shared.
func TestReviewSeams9_GlobalAndPerHostLimitsAtTheWire(t *testing.T) {
	nested := seams9Sends(t, func(base http.RoundTripper) http.RoundTripper {
		perHost := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
			return ratelimit.NewTokenBucket(0.1, 1)
		}, ratelimit.KeyedConfig{})
		return &ratelimit.Transport{
			Base:    &ratelimit.Transport{Base: base, PerHost: perHost},
			Limiter: ratelimit.NewTokenBucket(1, 1),
		}
	})
	if len(slices.Compact(slices.Clone(nested))) == len(nested) {
		t.Errorf("nested Transports sent at %v: no two at once; the doc of Transport says the outer limit may be passed at the wire", nested)
	}

	exact := seams9Sends(t, func(base http.RoundTripper) http.RoundTripper {
		global := ratelimit.NewTokenBucket(1, 1)
		perHost := ratelimit.NewKeyed(func(string) *ratelimit.Combined {
			return ratelimit.All(ratelimit.NewTokenBucket(0.1, 1), global)
		}, ratelimit.KeyedConfig{})
		return &ratelimit.Transport{Base: base, PerHost: perHost}
	})
	if len(exact) != 12 {
		t.Fatalf("%d requests sent, want 12", len(exact))
	}
	for i := 1; i < len(exact); i++ {
		if gap := exact[i] - exact[i-1]; gap < time.Second-time.Millisecond {
			t.Errorf("sends at %v and %v: %v apart, under the global limit's 1 s", exact[i-1], exact[i], gap)
		}
	}
}
