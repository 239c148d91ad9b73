package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// TestTransportWithServer: through an http.Client against a real server, a
// flaky endpoint succeeds, a POST without a key is sent once, and a PUT's
// body arrives whole on every attempt.
func TestTransportWithServer(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.Method+r.URL.Path]++
		n := hits[r.Method+r.URL.Path]
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			bodies = append(bodies, string(b))
		}
		mu.Unlock()
		if n < 3 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "done after %d", n)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &retry.Transport{Base: srv.Client().Transport, Policy: noDelay}}
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL + "/get")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, "done after 3", string(b))

	resp, err = client.Post(srv.URL+"/post", "text/plain", strings.NewReader("once"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 503, resp.StatusCode)

	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/put", strings.NewReader("whole"))
	resp, err = client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, []string{"once", "whole", "whole", "whole"}, bodies)

	// A server that is gone: transport errors, retried, then given up.
	srv.Close()
	_, err = client.Get(srv.URL + "/gone")
	require.Error(t, err)
	require.Equal(t, 3, asError(t, err).Attempts)
}

// TestZeroTransportUsesDefaults: the zero Transport retries with the zero
// Policy over http.DefaultTransport.
func TestZeroTransportUsesDefaults(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n++; n == 1 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	resp, err := (&retry.Transport{}).RoundTrip(newGet(t, srv.URL))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, 2, n)
}

// TestHammerTransport: goroutines share a Transport and its Budget against
// a server that fails half the time (some of its 503s asking for an hour),
// some with ctxs cancelled at random, some with a Retryable that panics,
// some with a header net/http will not send. Every request ends with a
// response (200, or the 503 given up on) or an error that matches its
// ctx's, a panic, or, for the malformed, an error after one attempt; no
// body is left open (goleak would see the connections' goroutines).
func TestHammerTransport(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		fail, later := n%2 == 0, n%6 == 0
		mu.Unlock()
		if later {
			w.Header().Set("Retry-After", "3600")
		}
		if fail {
			http.Error(w, strings.Repeat("x", 1000), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	shared := &retry.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 4, InitialDelay: 50 * time.Microsecond, Budget: retry.NewBudget(0.5, 10)}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				// Only some ctxs end: cancelling a request's ctx would
				// also free the connection of a body left open.
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if (g+i)%5 == 0 {
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(time.Duration(i*20)*time.Microsecond, cancel)
				}
				tr := *shared // a Transport may be copied: its Budget is shared
				sent := 0
				tr.Base = roundTripperFunc(func(r *http.Request) (*http.Response, error) { sent++; return base.RoundTrip(r) })
				panics := (g+i)%7 == 3
				if panics {
					tr.Policy.Retryable = func(error) bool { panic("boom") }
				}
				req := newGet(t, srv.URL).WithContext(ctx)
				malformed := (g+i)%9 == 4
				if malformed {
					req.Header["Bad Name"] = []string{"v"}
				}
				resp, recovered, err := func() (resp *http.Response, recovered any, err error) {
					defer func() { recovered = recover() }()
					resp, err = tr.RoundTrip(req)
					return resp, nil, err
				}()
				switch {
				case recovered != nil:
					if recovered != "boom" || !panics {
						t.Errorf("RoundTrip panicked with %v", recovered)
					}
				case malformed:
					if err == nil || (sent != 1 && ctx.Err() == nil) {
						t.Errorf("malformed request: RoundTrip = %v, %v after %d attempts", resp, err, sent)
					}
				case err != nil:
					if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
						t.Errorf("RoundTrip = %v with ctx %v", err, ctx.Err())
					}
				case resp.StatusCode != 200 && resp.StatusCode != 503:
					t.Errorf("status %d", resp.StatusCode)
				}
				if resp != nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				cancel()
			}
		})
	}
	wg.Wait()
}
