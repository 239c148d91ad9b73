package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func newGet(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

// body is a response body that records what was read of it and its Close.
type body struct {
	mu     sync.Mutex
	r      io.Reader
	read   int
	closed bool
}

func newBody(s string) *body { return &body{r: strings.NewReader(s)} }

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

func response(code int, header http.Header, b *body) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Header: header, Body: b}
}

// script is a fake Base that answers each attempt with the next status of
// codes (the last one over and over), and keeps the bodies it gave.
type script struct {
	codes  []int
	header http.Header
	body   string
	reqs   []*http.Request
	bodies []*body
}

func (s *script) RoundTrip(r *http.Request) (*http.Response, error) {
	i := min(len(s.reqs), len(s.codes)-1)
	s.reqs = append(s.reqs, r)
	b := newBody(s.body + strconv.Itoa(len(s.reqs)))
	s.bodies = append(s.bodies, b)
	return response(s.codes[i], s.header.Clone(), b), nil
}

var noDelay = retry.Policy{NoDelay: true}

// TestTransportRetriesExactlyTheseStatuses: 429, 502, 503 and 504 are
// retried; 500 and other statuses are returned as they are.
func TestTransportRetriesExactlyTheseStatuses(t *testing.T) {
	for code := 100; code < 600; code++ {
		if http.StatusText(code) == "" || code < 200 {
			continue
		}
		s := &script{codes: []int{code, 200}}
		resp, err := (&retry.Transport{Base: s, Policy: noDelay}).RoundTrip(newGet(t, "http://x/"))
		require.NoError(t, err)
		retried := code == 429 || code == 502 || code == 503 || code == 504
		if retried {
			require.Equal(t, 200, resp.StatusCode, "status %d", code)
			require.Len(t, s.reqs, 2, "status %d", code)
		} else {
			require.Equal(t, code, resp.StatusCode)
			require.Len(t, s.reqs, 1, "status %d retried", code)
		}
		_ = resp.Body.Close()
	}
}

// TestTransportGivesUpWithLastResponse: when the attempts run out on a
// status, the last response comes back unread; the others were drained and
// closed before each wait.
func TestTransportGivesUpWithLastResponse(t *testing.T) {
	s := &script{codes: []int{503}, body: "down #"}
	var closedAtRetry []bool
	p := retry.Policy{NoDelay: true, MaxAttempts: 3, OnRetry: func(n int, err error, _ time.Duration) {
		closedAtRetry = append(closedAtRetry, s.bodies[n-1].closed)
		var se *retry.StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, 503, se.StatusCode)
		require.Equal(t, "ctxsync: response status 503 Service Unavailable", err.Error())
	}}
	resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/"))
	require.NoError(t, err)
	require.Equal(t, 503, resp.StatusCode)
	got, _ := io.ReadAll(resp.Body)
	require.Equal(t, "down #3", string(got))
	require.Equal(t, []bool{true, true}, closedAtRetry)
	for i, b := range s.bodies[:2] {
		require.True(t, b.closed, "body %d not closed", i)
		require.Equal(t, len("down #1"), b.read, "body %d not drained", i)
	}
	require.False(t, s.bodies[2].closed)
}

// TestTransportDrainIsBounded: a large discarded body is read up to a bound,
// then closed.
func TestTransportDrainIsBounded(t *testing.T) {
	s := &script{codes: []int{502, 200}, body: strings.Repeat("x", 1<<20)}
	resp, err := (&retry.Transport{Base: s, Policy: noDelay}).RoundTrip(newGet(t, "http://x/"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.True(t, s.bodies[0].closed)
	require.Equal(t, 64<<10, s.bodies[0].read)
}

// TestTransportRetryAfter: Retry-After in seconds and as an HTTP date sets
// the next wait, beyond MaxDelay; one past the deadline gives up with the
// response.
func TestTransportRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		date := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }
		for _, c := range []struct {
			value func() string
			want  time.Duration
		}{
			{func() string { return date(5 * time.Second) }, 5 * time.Second}, // first: the clock is on a whole second
			{func() string { return date(-time.Hour) }, 100 * ms},             // past: the backoff
			{func() string { return "3" }, 3 * time.Second},
			{func() string { return " 7 " }, 7 * time.Second},
			{func() string { return "0" }, 100 * ms},
			{func() string { return "soon" }, 100 * ms},
			{func() string { return "-5" }, 100 * ms},
			{func() string { return "1.5" }, 100 * ms},
		} {
			s := &script{codes: []int{429, 200}, header: http.Header{"Retry-After": {c.value()}}}
			var rec recorder
			p := retry.Policy{InitialDelay: 100 * ms, MaxDelay: time.Second, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
			start := time.Now()
			resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/"))
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, []time.Duration{c.want}, rec.delays, "Retry-After: %q", c.value())
			require.Equal(t, c.want, time.Since(start))
		}

		// A Retry-After beyond the deadline, or beyond any duration: the
		// response, at once.
		for _, v := range []string{"60", "99999999999999999999999", "9223372036854775807"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s := &script{codes: []int{503}, header: http.Header{"Retry-After": {v}}}
			start := time.Now()
			resp, err := (&retry.Transport{Base: s}).RoundTrip(newGet(t, "http://x/").WithContext(ctx))
			cancel()
			require.NoError(t, err)
			require.Equal(t, 503, resp.StatusCode)
			require.Len(t, s.reqs, 1)
			require.Zero(t, time.Since(start))
		}
	})
}

// TestTransportRespectsRequestCtx: the request's ctx ending during a wait
// ends RoundTrip at once with its error; the kept response is closed. A ctx
// done before the first attempt sends nothing and closes the body.
func TestTransportRespectsRequestCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*ms, cancel)
		s := &script{codes: []int{503}}
		p := retry.Policy{InitialDelay: time.Second, Jitter: retry.NoJitter}
		resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/").WithContext(ctx))
		require.Nil(t, resp)
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, s.bodies[0].closed)

		b := newBody("payload")
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://x/", b)
		req.GetBody = func() (io.ReadCloser, error) { return newBody("payload"), nil }
		s = &script{codes: []int{200}}
		resp, err = (&retry.Transport{Base: s, Policy: p}).RoundTrip(req)
		require.Nil(t, resp)
		require.True(t, err == context.Canceled, "RoundTrip = %v, want context.Canceled", err)
		require.Empty(t, s.reqs)
		require.True(t, b.closed, "the body of a request not sent was not closed")
	})
}

// TestTransportTransportErrors: transport errors are retried; giving up
// returns an error that wraps the last one.
func TestTransportTransportErrors(t *testing.T) {
	errConn := errors.New("connection reset")
	n := 0
	base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		if n++; n < 3 {
			return nil, errConn
		}
		return response(200, nil, newBody("ok")), nil
	})
	resp, err := (&retry.Transport{Base: base, Policy: noDelay}).RoundTrip(newGet(t, "http://x/"))
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	n = -100
	resp, err = (&retry.Transport{Base: base, Policy: noDelay}).RoundTrip(newGet(t, "http://x/"))
	require.Nil(t, resp)
	require.ErrorIs(t, err, errConn)
	require.Equal(t, 3, asError(t, err).Attempts)
}

// TestTransportOnlyReplayableRequests: a request is retried only when it can
// be sent again: no body or GetBody, and an idempotent method or an
// idempotency key. Each retry sends the body anew from GetBody.
func TestTransportOnlyReplayableRequests(t *testing.T) {
	type req struct {
		method  string
		body    bool
		getBody bool
		key     string
	}
	for _, c := range []struct {
		req
		retried bool
	}{
		{req{method: "GET"}, true},
		{req{method: ""}, true},
		{req{method: "HEAD"}, true},
		{req{method: "OPTIONS"}, true},
		{req{method: "TRACE"}, true},
		{req{method: "DELETE"}, true},
		{req{method: "PUT", body: true, getBody: true}, true},
		{req{method: "PUT", body: true}, false},
		{req{method: "POST"}, false},
		{req{method: "PATCH", body: true, getBody: true}, false},
		{req{method: "POST", body: true, getBody: true}, false},
		{req{method: "POST", body: true, getBody: true, key: "Idempotency-Key"}, true},
		{req{method: "POST", body: true, getBody: true, key: "X-Idempotency-Key"}, true},
		{req{method: "POST", body: true, key: "Idempotency-Key"}, false},
	} {
		t.Run(fmt.Sprintf("%+v", c.req), func(t *testing.T) {
			var r *http.Request
			if c.body {
				r, _ = http.NewRequest(c.method, "http://x/", nil)
				r.Body = io.NopCloser(strings.NewReader("payload"))
				if c.getBody {
					r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }
				}
			} else {
				r, _ = http.NewRequest(c.method, "http://x/", nil)
			}
			if c.key != "" {
				r.Header.Set(c.key, "k1")
			}
			var sent []string
			base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				s := ""
				if r.Body != nil {
					b, _ := io.ReadAll(r.Body)
					s = string(b)
				}
				sent = append(sent, s)
				if len(sent) == 1 {
					return response(503, nil, newBody("")), nil
				}
				return response(200, nil, newBody("")), nil
			})
			resp, err := (&retry.Transport{Base: base, Policy: noDelay}).RoundTrip(r)
			require.NoError(t, err)
			if c.retried {
				require.Equal(t, 200, resp.StatusCode)
				require.Len(t, sent, 2)
				require.Equal(t, sent[0], sent[1], "the body was not sent anew")
			} else {
				require.Equal(t, 503, resp.StatusCode)
				require.Len(t, sent, 1)
			}
		})
	}
}

// TestTransportGetBodyFails: a GetBody that fails ends the retries with its
// error.
func TestTransportGetBodyFails(t *testing.T) {
	errGet := errors.New("cannot rewind")
	r, _ := http.NewRequest(http.MethodPut, "http://x/", strings.NewReader("x"))
	r.GetBody = func() (io.ReadCloser, error) { return nil, errGet }
	s := &script{codes: []int{503}}
	resp, err := (&retry.Transport{Base: s, Policy: noDelay}).RoundTrip(r)
	// The 503 of the first attempt was discarded before the wait.
	require.Nil(t, resp)
	require.ErrorIs(t, err, errGet)
	require.Equal(t, retry.NotRetryable, asError(t, err).Reason)
	require.Len(t, s.reqs, 1)
	require.True(t, s.bodies[0].closed)
}

// TestTransportAttemptTimeout: an attempt that outlives AttemptTimeout is
// retried; the response returned can be read after RoundTrip, its timeout
// released when its body is closed.
func TestTransportAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		var last context.Context
		base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			n++
			last = r.Context()
			if n == 1 {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return response(200, nil, newBody("hello")), nil
		})
		p := retry.Policy{NoDelay: true, AttemptTimeout: time.Second}
		resp, err := (&retry.Transport{Base: base, Policy: p}).RoundTrip(newGet(t, "http://x/"))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.NoError(t, last.Err(), "the attempt's ctx ended before the body was read")
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "hello", string(b))
		require.NoError(t, resp.Body.Close())
		require.ErrorIs(t, last.Err(), context.Canceled)
	})
}

// TestTransportDoesNotChangeRequest: the caller's request is left as it was.
func TestTransportDoesNotChangeRequest(t *testing.T) {
	r, _ := http.NewRequest(http.MethodPut, "http://x/", strings.NewReader("payload"))
	body, getBody := r.Body, r.GetBody
	r.Header.Set("A", "1")
	s := &script{codes: []int{503, 503, 200}}
	_, err := (&retry.Transport{Base: s, Policy: noDelay}).RoundTrip(r)
	require.NoError(t, err)
	require.True(t, r.Body == body)
	require.NotNil(t, getBody)
	require.Equal(t, http.Header{"A": {"1"}}, r.Header)
	require.True(t, s.reqs[0] == r)
	require.False(t, s.reqs[1] == r)
}
