package retry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// trackedBody is a response body that records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

// slowBase answers its i'th request after delays[i] with statuses[i], and
// keeps the requests, their bodies and the responses' bodies.
type slowBase struct {
	delays   []time.Duration
	statuses []int

	mu        sync.Mutex
	n         int
	reqBodies []string
	bodies    []*trackedBody
	ctxErrs   []error // the ctx error each request saw when it returned
}

func (b *slowBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	i := b.n
	b.n++
	b.mu.Unlock()
	var sent string
	if req.Body != nil {
		p, _ := io.ReadAll(req.Body)
		sent = string(p)
	}
	var err error
	select {
	case <-time.After(b.delays[i]):
	case <-req.Context().Done():
		err = req.Context().Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqBodies = append(b.reqBodies, sent)
	b.ctxErrs = append(b.ctxErrs, err)
	if err != nil {
		return nil, err
	}
	body := &trackedBody{Reader: strings.NewReader("answer " + string(rune('0'+i)))}
	b.bodies = append(b.bodies, body)
	status := 200
	if i < len(b.statuses) && b.statuses[i] != 0 {
		status = b.statuses[i]
	}
	return &http.Response{StatusCode: status, Body: body, Header: http.Header{}, Request: req}, nil
}

func TestTransportHedgeCopyWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{time.Hour, 5 * time.Millisecond}}
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		synctest.Wait()
		p, err := io.ReadAll(resp.Body) // the winner's ctx lives until Close
		require.NoError(t, err)
		require.Equal(t, "answer 1", string(p))
		require.NoError(t, resp.Body.Close())
		base.mu.Lock()
		defer base.mu.Unlock()
		require.Len(t, base.ctxErrs, 2)
		require.ErrorIs(t, base.ctxErrs[1], context.Canceled, "the loser's ctx is cancelled")
	})
}

func TestTransportHedgeLoserBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first answers 503 after 15ms, the copy 200 after 10ms more.
		base := &slowBase{delays: []time.Duration{15 * time.Millisecond, 15 * time.Millisecond}, statuses: []int{503}}
		tr := &retry.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 1}, Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, "the 503 is a failure; the copy in flight wins")
		require.NoError(t, resp.Body.Close())
		synctest.Wait()
		base.mu.Lock()
		defer base.mu.Unlock()
		require.True(t, base.bodies[0].closed.Load(), "the 503's body is closed")
	})
}

func TestTransportHedgesOnlyReplayable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{50 * time.Millisecond, time.Millisecond}}
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://x/", strings.NewReader("pay"))
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, 1, base.n, "a POST without an Idempotency-Key is sent once")
	})
}

func TestTransportHedgeCopySendsItsOwnBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{time.Hour, time.Millisecond}}
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://x/", strings.NewReader("pay once"))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		synctest.Wait()
		base.mu.Lock()
		defer base.mu.Unlock()
		require.Equal(t, []string{"pay once", "pay once"}, base.reqBodies)
	})
}

func TestTransportRetryResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{1, 1, 1}, statuses: []int{500, 503, 503}}
		tr := &retry.Transport{
			Base:   base,
			Policy: retry.Policy{NoDelay: true},
			// A 500 is retried (the service is known to be idempotent);
			// a 503 for maintenance is not.
			RetryResponse: func(resp *http.Response) bool {
				return resp.StatusCode == 500 || resp.StatusCode == 503 && resp.Header.Get("X-Maintenance") == ""
			},
		}
		base.statuses[1] = 503
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, 503, resp.StatusCode)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, 3, base.n, "500 retried, 503 retried, the last 503 returned")
	})
}

func TestTransportRetryResponseRefuses(t *testing.T) {
	base := &slowBase{delays: []time.Duration{0, 0}, statuses: []int{503, 200}}
	tr := &retry.Transport{
		Base:          base,
		Policy:        retry.Policy{NoDelay: true},
		RetryResponse: func(resp *http.Response) bool { return resp.StatusCode >= 500 && resp.StatusCode != 503 },
	}
	req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.Equal(t, 503, resp.StatusCode, "the 503 is not retried")
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 1, base.n)
}

func TestTransportDelayFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{0, 0, 0}, statuses: []int{502, 504}}
		var seen []string
		tr := &retry.Transport{
			Base:   base,
			Policy: retry.Policy{MaxAttempts: 3},
			DelayFunc: func(attempt int, resp *http.Response, err error) time.Duration {
				seen = append(seen, resp.Status+" "+err.Error())
				return time.Duration(attempt) * time.Second
			},
		}
		start := time.Now()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, 3*time.Second, time.Since(start), "waits of 1s then 2s")
		require.Len(t, seen, 2)
	})
}
