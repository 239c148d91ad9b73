package retry_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// TestTransportRetryablePanicLeaksBody pins a bug: a panic in
// Policy.Retryable, which runs after a 503 is kept and before the wait that
// drains it, reached the caller with the 503's body left open, and its
// connection with it. Every user function Transport calls (Retryable,
// OnRetry, GetBody, Base) may panic: the panic reaches the caller, every
// body Transport took is closed, and every attempt's ctx is released.
func TestTransportRetryablePanicLeaksBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name string
			// setup changes the policy and the request, and returns the
			// Base to use.
			setup func(p *retry.Policy, req **http.Request, s *script) http.RoundTripper
		}{
			{"Retryable", func(p *retry.Policy, _ **http.Request, s *script) http.RoundTripper {
				p.Retryable = func(error) bool { panic("boom") }
				return s
			}},
			{"Retryable after a wait", func(p *retry.Policy, _ **http.Request, s *script) http.RoundTripper {
				n := 0
				p.Retryable = func(error) bool {
					if n++; n == 2 {
						panic("boom")
					}
					return true
				}
				return s
			}},
			{"OnRetry", func(p *retry.Policy, _ **http.Request, s *script) http.RoundTripper {
				p.OnRetry = func(int, error, time.Duration) { panic("boom") }
				return s
			}},
			{"GetBody", func(_ *retry.Policy, req **http.Request, s *script) http.RoundTripper {
				r, _ := http.NewRequest(http.MethodPut, "http://x/", strings.NewReader("payload"))
				r.GetBody = func() (io.ReadCloser, error) { panic("boom") }
				*req = r
				return s
			}},
			{"Base", func(_ *retry.Policy, _ **http.Request, s *script) http.RoundTripper {
				return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					if len(s.reqs) == 1 {
						s.reqs = append(s.reqs, r)
						panic("boom")
					}
					return s.RoundTrip(r)
				})
			}},
		} {
			for _, timeout := range []time.Duration{0, time.Hour} {
				s := &script{codes: []int{503}}
				p := retry.Policy{MaxAttempts: 3, InitialDelay: ms, AttemptTimeout: timeout}
				req := newGet(t, "http://x/")
				base := c.setup(&p, &req, s)
				func() {
					defer func() { require.Equal(t, "boom", recover(), "%s: recover()", c.name) }()
					resp, err := (&retry.Transport{Base: base, Policy: p}).RoundTrip(req)
					t.Fatalf("%s: RoundTrip = %v, %v, want a panic", c.name, resp, err)
				}()
				require.NotEmpty(t, s.bodies, c.name)
				for i, b := range s.bodies {
					require.True(t, b.closed, "%s, AttemptTimeout %v: the body of response %d was left open", c.name, timeout, i+1)
				}
				for i, r := range s.reqs {
					if timeout > 0 {
						require.Error(t, r.Context().Err(), "%s: the ctx of attempt %d was not released", c.name, i+1)
					}
				}
			}
		}
		synctest.Wait() // no timer of an attempt is left to fire
	})
}

// TestTransportBaseReturnsNothing pins a bug: a Base that broke the
// RoundTripper contract, returning neither a response nor an error, made
// RoundTrip panic on a nil response. It is an error, and not retried: a
// broken RoundTripper does not mend itself.
func TestTransportBaseReturnsNothing(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		n := 0
		base := roundTripperFunc(func(*http.Request) (*http.Response, error) { n++; return nil, nil })
		resp, err := (&retry.Transport{Base: base, Policy: retry.Policy{NoDelay: true, AttemptTimeout: timeout}}).RoundTrip(newGet(t, "http://x/"))
		require.Nil(t, resp)
		require.ErrorContains(t, err, "returned no response and no error")
		require.Equal(t, retry.NotRetryable, asError(t, err).Reason)
		require.Equal(t, 1, n)
	}
}
