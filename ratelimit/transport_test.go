package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sentLog is a Base that answers 200 and records when each request came.
type sentLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	urls  []string
}

func newSentLog() *sentLog { return &sentLog{start: time.Now()} }

func (l *sentLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.at = append(l.at, time.Since(l.start))
	l.urls = append(l.urls, r.URL.String())
	l.mu.Unlock()
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: http.NoBody, Request: r}, nil
}

func (l *sentLog) sent() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.at...)
}

// trackedBody is a request body that records its Close.
type trackedBody struct {
	io.Reader
	closed atomic.Int32
}

func (b *trackedBody) Close() error { b.closed.Add(1); return nil }

func newReqCtx(t *testing.T, ctx context.Context, url string) (*http.Request, *trackedBody) {
	t.Helper()
	body := &trackedBody{Reader: strings.NewReader("payload")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, body)
	require.NoError(t, err)
	return req, body
}

func roundTrip(t *testing.T, tr http.RoundTripper, ctx context.Context, url string) (*http.Response, *trackedBody, error) {
	t.Helper()
	req, body := newReqCtx(t, ctx, url)
	resp, err := tr.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	return resp, body, err
}

// TestTransportGlobalPaces: with one Limiter, requests to any host wait their
// turn, spaced at the rate.
func TestTransportGlobalPaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		tr := &Transport{Base: base, Limiter: NewTokenBucket(10, 1)}
		for _, u := range []string{"http://a.test/", "http://b.test/", "http://a.test/x"} {
			_, body, err := roundTrip(t, tr, context.Background(), u)
			require.NoError(t, err)
			require.EqualValues(t, 1, body.closed.Load(), "Base closes the body of a request it sends")
		}
		require.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, base.sent())
	})
}

// TestTransportPerHost: each host has its own limiter, under the default key,
// which ignores case and the scheme's default port.
func TestTransportPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		perHost := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
		tr := &Transport{Base: base, PerHost: perHost}
		for _, u := range []string{"http://a.test/", "http://b.test/", "HTTP://A.test:80/x", "https://a.test:443/", "https://a.test:8443/"} {
			_, _, err := roundTrip(t, tr, context.Background(), u)
			require.NoError(t, err)
		}
		// a.test twice after its first, waiting a second each; a.test
		// over https (port 443) is a.test as well; a.test:8443 is its own.
		require.Equal(t, []time.Duration{0, 0, time.Second, 2 * time.Second, 2 * time.Second}, base.sent())
		require.Equal(t, 3, perHost.Len())
		for _, k := range []string{"a.test", "a.test:8443"} { // used just now
			require.False(t, perHost.Allow(k), "key %q was not used", k)
		}
	})
}

// TestTransportKeyAndCost: a custom Key, and a Cost of 0 (sent at once,
// taking nothing) or several events.
func TestTransportKeyAndCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		perKey := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 3) }, KeyedConfig{})
		tr := &Transport{
			Base:    base,
			PerHost: perKey,
			Key:     func(r *http.Request) string { return r.Header.Get("X-Tenant") },
			Cost: func(r *http.Request) int {
				if r.URL.Path == "/free" {
					return 0
				}
				return 2
			},
		}
		do := func(tenant, path string) {
			req, _ := newReqCtx(t, context.Background(), "http://api.test"+path)
			req.Header.Set("X-Tenant", tenant)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
		}
		do("t1", "/heavy") // 2 of 3
		do("t1", "/free")  // nothing taken
		do("t2", "/heavy") // t2's own bucket
		do("t1", "/heavy") // 1 left: waits a second for the second event
		require.Equal(t, []time.Duration{0, 0, 0, time.Second}, base.sent())
		require.Equal(t, 2, perKey.Len())
	})
}

// TestTransportDeadlineError: a request whose wait would pass its deadline
// fails at once with a *DeadlineError that says how long the wait would be;
// its body is closed, nothing is sent and nothing is taken.
func TestTransportDeadlineError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		bucket := NewTokenBucket(1, 1)
		for _, tr := range []*Transport{
			{Base: base, Limiter: bucket},
			{Base: base, PerHost: NewKeyed(func(string) *TokenBucket { return bucket }, KeyedConfig{})},
		} {
			_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			start := time.Now()
			_, body, err := roundTrip(t, tr, ctx, "http://a.test/")
			cancel()
			require.Zero(t, time.Since(start), "a wait that cannot succeed was not skipped")
			var de *DeadlineError
			require.ErrorAs(t, err, &de)
			require.Equal(t, time.Second, de.RetryAfter())
			require.ErrorIs(t, err, ErrWouldExceedDeadline)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.EqualValues(t, 1, body.closed.Load(), "refused request's body not closed")
			if tr.PerHost != nil {
				require.Equal(t, "a.test", de.Key)
				require.Equal(t, "ratelimit: wait of 1s for a.test would exceed the context deadline", err.Error())
			} else {
				require.Equal(t, "", de.Key)
				require.Equal(t, "ratelimit: wait of 1s would exceed the context deadline", err.Error())
			}
			time.Sleep(time.Second) // the token the first request took comes back: none lost
			require.True(t, bucket.Allow())
			time.Sleep(time.Second)
		}
		require.Len(t, base.sent(), 2)
	})
}

// fakeLimiter is a Limiter whose answers a test sets.
type fakeLimiter struct {
	waitErr error
	take    Decision
}

func (f *fakeLimiter) AllowN(int) bool                  { return false }
func (f *fakeLimiter) WaitN(context.Context, int) error { return f.waitErr }
func (f *fakeLimiter) Take(int) Decision                { return f.take }

// errLimiter is a Limiter that is not a Taker.
type errLimiter struct{ err error }

func (p errLimiter) AllowN(int) bool                  { return false }
func (p errLimiter) WaitN(context.Context, int) error { return p.err }

// plainKeyWaiter is a KeyWaiter that is not a KeyTaker; it records keys.
type plainKeyWaiter struct {
	err  error
	keys []string
}

func (p *plainKeyWaiter) WaitN(_ context.Context, key string, _ int) error {
	p.keys = append(p.keys, key)
	return p.err
}

// TestTransportDeadlineUnknown: a limiter that cannot tell how long the wait
// would be gives ErrWouldExceedDeadline as it is; one whose Take allows the
// events after all lets the request go.
func TestTransportDeadlineUnknown(t *testing.T) {
	base := newSentLog()
	for name, tr := range map[string]*Transport{
		"not a Taker":     {Base: base, Limiter: errLimiter{ErrWouldExceedDeadline}},
		"not a KeyTaker":  {Base: base, PerHost: &plainKeyWaiter{err: ErrWouldExceedDeadline}},
		"Take says 0":     {Base: base, Limiter: &fakeLimiter{waitErr: ErrWouldExceedDeadline}},
		"Take says never": {Base: base, Limiter: &fakeLimiter{waitErr: ErrWouldExceedDeadline, take: Decision{RetryAfter: -1}}},
		"Keyed of non-Takers": {Base: base, PerHost: NewKeyed(func(string) errLimiter {
			return errLimiter{ErrWouldExceedDeadline}
		}, KeyedConfig{})},
	} {
		_, body, err := roundTrip(t, tr, context.Background(), "http://a.test/")
		require.Equal(t, ErrWouldExceedDeadline, err, name)
		require.EqualValues(t, 1, body.closed.Load(), name)
	}
	require.Empty(t, base.sent())

	tr := &Transport{Base: base, Limiter: &fakeLimiter{waitErr: ErrWouldExceedDeadline, take: Decision{Allowed: true}}}
	_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
	require.NoError(t, err, "events that Take allowed were not used")
	require.Len(t, base.sent(), 1)
}

// TestTransportLimiterErrors: the limiter's other errors are returned as they
// are, the body closed and nothing sent.
func TestTransportLimiterErrors(t *testing.T) {
	base := newSentLog()
	other := errors.New("redis down")
	for _, want := range []error{other, ErrExceedsBurst, context.Canceled} {
		for _, tr := range []*Transport{
			{Base: base, Limiter: &fakeLimiter{waitErr: want, take: Decision{RetryAfter: time.Second}}},
			{Base: base, PerHost: &plainKeyWaiter{err: want}},
		} {
			_, body, err := roundTrip(t, tr, context.Background(), "http://a.test/")
			require.Equal(t, want, err)
			require.EqualValues(t, 1, body.closed.Load())
		}
	}
	// ErrExceedsBurst from a real bucket: a cost beyond its burst.
	tr := &Transport{Base: base, Limiter: NewTokenBucket(1, 2), Cost: func(*http.Request) int { return 3 }}
	_, body, err := roundTrip(t, tr, context.Background(), "http://a.test/")
	require.Equal(t, ErrExceedsBurst, err)
	require.EqualValues(t, 1, body.closed.Load())
	require.Empty(t, base.sent())
}

// TestTransportCtxDone: a ctx done before the request fails it with ctx.Err()
// even when the limiter has events, and takes none; one that ends during the
// wait fails it too, and takes none.
func TestTransportCtxDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		bucket := NewTokenBucket(1, 1)
		tr := &Transport{Base: base, Limiter: bucket}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, body, err := roundTrip(t, tr, ctx, "http://a.test/")
		require.Equal(t, context.Canceled, err)
		require.EqualValues(t, 1, body.closed.Load())
		require.Equal(t, 1.0, bucket.Tokens(), "a done ctx took a token")

		// A request that costs nothing: the same.
		free := &Transport{Base: base, Limiter: bucket, Cost: func(*http.Request) int { return 0 }}
		_, body, err = roundTrip(t, free, ctx, "http://a.test/")
		require.Equal(t, context.Canceled, err)
		require.EqualValues(t, 1, body.closed.Load())

		// A breaker behind that would refuse: the ctx's error wins.
		tr2 := &Transport{Base: prechecked{base, errors.New("open")}, Limiter: bucket}
		_, _, err = roundTrip(t, tr2, ctx, "http://a.test/")
		require.Equal(t, context.Canceled, err)

		_, _, err = roundTrip(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err)
		ctx, cancel = context.WithCancel(context.Background())
		errc := make(chan error)
		var wbody *trackedBody
		go func() {
			var err error
			_, wbody, err = roundTrip(t, tr, ctx, "http://a.test/")
			errc <- err
		}()
		time.Sleep(500 * time.Millisecond)
		cancel()
		require.Equal(t, context.Canceled, <-errc)
		require.EqualValues(t, 1, wbody.closed.Load())
		time.Sleep(500 * time.Millisecond)
		require.True(t, bucket.Allow(), "a waiter that gave up took the token")
		require.Len(t, base.sent(), 1)
	})
}

// prechecked is a Base with a Precheck, as breaker.Transport has.
type prechecked struct {
	http.RoundTripper
	err error
}

func (p prechecked) Precheck(*http.Request) error { return p.err }

// TestTransportPrecheck: a Base whose Precheck refuses gets no call, and the
// request takes no event; Transport's own Precheck passes Base's on.
func TestTransportPrecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		bucket := NewTokenBucket(1, 1)
		open := errors.New("breaker: circuit open")
		tr := &Transport{Base: prechecked{base, open}, Limiter: bucket}
		_, body, err := roundTrip(t, tr, context.Background(), "http://a.test/")
		require.Equal(t, open, err)
		require.EqualValues(t, 1, body.closed.Load())
		require.Equal(t, 1.0, bucket.Tokens(), "a refused request took a token")
		require.Empty(t, base.sent())

		req, _ := newReqCtx(t, context.Background(), "http://a.test/")
		require.Equal(t, open, tr.Precheck(req))
		outer := &Transport{Base: tr, Limiter: NewTokenBucket(1, 1)}
		require.Equal(t, open, outer.Precheck(req))
		_, _, err = roundTrip(t, outer, context.Background(), "http://a.test/")
		require.Equal(t, open, err, "the outer Transport did not see the breaker's refusal")
		require.Equal(t, 1.0, bucket.Tokens())

		require.NoError(t, (&Transport{Base: base, Limiter: NewTokenBucket(1, 1)}).Precheck(req), "a Base without Precheck refuses nothing")
		require.NoError(t, (&Transport{Limiter: NewTokenBucket(1, 1)}).Precheck(req))
		// A Transport that RoundTrip would panic on panics in Precheck
		// too, before the Transport in front takes anything.
		require.PanicsWithValue(t, "ratelimit: Transport with neither Limiter nor PerHost", func() { _ = (&Transport{}).Precheck(req) })

		tr.Base = prechecked{base, nil}
		_, _, err = roundTrip(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err)
		require.Len(t, base.sent(), 1)
	})
}

// TestTransportMisuse: a Transport without a limiter, with two, with a Key
// but no PerHost, or with a Cost below 0 panics, and closes the request's
// body first.
func TestTransportMisuse(t *testing.T) {
	var nilBucket *TokenBucket
	var nilKeyed *Keyed[string, *TokenBucket]
	bucket := NewTokenBucket(1, 1)
	perHost := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	key := func(*http.Request) string { return "k" }
	for _, c := range []struct {
		tr   *Transport
		want string
	}{
		{&Transport{}, "ratelimit: Transport with neither Limiter nor PerHost"},
		{&Transport{Limiter: nilBucket, PerHost: nilKeyed}, "ratelimit: Transport with neither Limiter nor PerHost"},
		{&Transport{Limiter: bucket, PerHost: perHost}, "ratelimit: Transport with both Limiter and PerHost; nest two Transports to apply both"},
		{&Transport{Limiter: bucket, PerHost: perHost, Key: key}, "ratelimit: Transport with both Limiter and PerHost; nest two Transports to apply both"},
		{&Transport{Limiter: bucket, Key: key}, "ratelimit: Transport with Key but no PerHost"},
		{&Transport{Limiter: bucket, Cost: func(*http.Request) int { return -1 }}, "ratelimit: Transport's Cost returned -1; it must be at least 0"},
	} {
		c.tr.Base = rtFunc(func(*http.Request) (*http.Response, error) { panic("sent") })
		req, body := newReqCtx(t, context.Background(), "http://a.test/")
		require.PanicsWithValue(t, c.want, func() { _, _ = c.tr.RoundTrip(req) })
		require.EqualValues(t, 1, body.closed.Load(), c.want)
	}
	require.Equal(t, 1.0, bucket.Tokens())
}

// TestTransportPanickingBase: a panic in Base goes on to the caller; the
// event it took is spent, as for any request sent.
func TestTransportPanickingBase(t *testing.T) {
	bucket := NewTokenBucket(1, 2)
	tr := &Transport{Base: rtFunc(func(*http.Request) (*http.Response, error) { panic("base") }), Limiter: bucket}
	req, _ := newReqCtx(t, context.Background(), "http://a.test/")
	require.PanicsWithValue(t, "base", func() { _, _ = tr.RoundTrip(req) })
	tr.Base = newSentLog()
	_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
	require.NoError(t, err, "the Transport was left broken")
}

// TestTransportNilBase: a nil Base is http.DefaultTransport.
func TestTransportNilBase(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hi")
	}))
	defer srv.Close()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	client := &http.Client{Transport: &Transport{Limiter: NewTokenBucket(100, 10)}}
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, "hi", string(b))
}

// TestTransportBaseErrors: Base's response and error come back as they are.
func TestTransportBaseErrors(t *testing.T) {
	boom := errors.New("boom")
	tr := &Transport{Limiter: NewTokenBucket(100, 10), Base: rtFunc(func(r *http.Request) (*http.Response, error) {
		_ = r.Body.Close()
		return nil, boom
	})}
	resp, body, err := roundTrip(t, tr, context.Background(), "http://a.test/")
	require.Nil(t, resp)
	require.Equal(t, boom, err)
	require.EqualValues(t, 1, body.closed.Load())
}

// TestTransportDeadlineErrorTimeout: through http.Client, a DeadlineError is
// a timeout, as a context deadline is.
func TestTransportDeadlineErrorTimeout(t *testing.T) {
	bucket := NewTokenBucket(1.0/60, 1)
	client := &http.Client{Transport: &Transport{Base: newSentLog(), Limiter: bucket}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	_, err = client.Do(req)
	var ne interface{ Timeout() bool }
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
	var de *DeadlineError
	require.ErrorAs(t, err, &de)
	require.Greater(t, de.Delay, 59*time.Second)
}

// TestTransportManyHosts: PerHost's keys stay within the Keyed's cap however
// many hosts a client is sent to.
func TestTransportManyHosts(t *testing.T) {
	perHost := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{MaxKeys: 100})
	tr := &Transport{Base: newSentLog(), PerHost: perHost}
	for i := range 5000 {
		_, _, err := roundTrip(t, tr, context.Background(), "http://h"+strconv.Itoa(i)+".test/")
		require.NoError(t, err)
	}
	require.LessOrEqual(t, perHost.Len(), 100)
}

// TestHammerTransport: many goroutines send through one Transport, with
// deadlines and cancellations at random and a breaker behind that refuses at
// random; then no more requests were sent than the limit allows, every body
// was closed once, every error is one Transport documents, and no token is
// lost.
func TestHammerTransport(t *testing.T) {
	for _, perHost := range []bool{false, true} {
		for _, tallied := range []bool{false, true} {
			t.Run(fmt.Sprintf("perHost=%v/tally=%v", perHost, tallied), func(t *testing.T) { hammerTransport(t, perHost, tallied) })
		}
	}
}

// hammerTransport is TestHammerTransport with one Limiter for two hosts, or
// a limiter per host (of the same rate and burst); with tallied, the limiters
// are wrapped in a Tally, which must count each request that reached them
// once, as a wait.
func hammerTransport(t *testing.T, perHost, tallied bool) {
	synctest.Test(t, func(t *testing.T) {
		const rate, burst = 100, 5
		hosts := []string{"a.test", "b.test"}
		buckets := map[string]*TokenBucket{}
		base := newSentLog()
		var refuse atomic.Int32
		open := errors.New("open")
		tr := &Transport{Base: randomPrecheck{base, &refuse, open}}
		var tally Tally
		wrap := func(b *TokenBucket) Limiter {
			if tallied {
				return tally.Wrap(b)
			}
			return b
		}
		if perHost {
			for _, h := range hosts {
				buckets[h] = NewTokenBucket(rate, burst)
			}
			tr.PerHost = NewKeyed(func(h string) Limiter { return wrap(buckets[h]) }, KeyedConfig{})
		} else {
			buckets["all"] = NewTokenBucket(rate, burst)
			tr.Limiter = wrap(buckets["all"])
		}
		start := time.Now()
		var wg sync.WaitGroup
		var bodies, closed, failed atomic.Int64
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for range 100 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(80))*time.Millisecond)
					if r.IntN(8) == 0 {
						after := time.Duration(r.IntN(30)) * time.Millisecond
						go func() {
							time.Sleep(after)
							cancel()
						}()
					}
					if r.IntN(10) == 0 {
						refuse.Add(1)
					}
					_, body, err := roundTrip(t, tr, ctx, "http://"+hosts[r.IntN(len(hosts))]+"/")
					bodies.Add(1)
					closed.Add(int64(body.closed.Load()))
					if err != nil && err != open {
						failed.Add(1)
					}
					var de *DeadlineError
					switch {
					case err == nil, err == open, err == context.Canceled, err == context.DeadlineExceeded:
					case errors.As(err, &de):
						if de.Delay <= 0 {
							t.Errorf("DeadlineError with delay %v", de.Delay)
						}
					default:
						t.Errorf("RoundTrip = %v", err)
					}
					cancel()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		sent := map[string]int{}
		base.mu.Lock()
		for _, u := range base.urls {
			if perHost {
				sent[strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/")]++
			} else {
				sent["all"]++
			}
		}
		base.mu.Unlock()
		limit := burst + int(int64(elapsed)*rate/int64(time.Second)) // in integers: exact
		for k := range buckets {
			require.LessOrEqual(t, sent[k], limit, "more requests sent to %s than the limit allows", k)
		}
		require.Equal(t, bodies.Load(), closed.Load(), "bodies not closed once each")
		if tallied {
			// A request whose ctx was done before it reached the limiter
			// failed without a wait: WaitFailed is at most the failures.
			c := tally.Counts()
			require.Equal(t, TallyCounts{Waited: int64(len(base.sent())), WaitFailed: c.WaitFailed}, c, "a request counted as other than one wait")
			require.LessOrEqual(t, c.WaitFailed, failed.Load())
		}
		time.Sleep(time.Second)
		for k, b := range buckets {
			require.Equal(t, float64(burst), b.Tokens(), "tokens of %s lost", k)
			require.True(t, b.AllowN(burst))
		}
	})
}

// randomPrecheck refuses in Precheck as many requests as refuse counts.
type randomPrecheck struct {
	http.RoundTripper
	refuse *atomic.Int32
	err    error
}

func (p randomPrecheck) Precheck(*http.Request) error {
	for {
		n := p.refuse.Load()
		if n == 0 {
			return nil
		}
		if p.refuse.CompareAndSwap(n, n-1) {
			return p.err
		}
	}
}

// TestTransportAcrossBubbles: a Transport and its limiters used outside a
// synctest bubble work inside one, and the reverse.
func TestTransportAcrossBubbles(t *testing.T) {
	perHost := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	tr := &Transport{Base: newSentLog(), PerHost: perHost}
	_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		for range 3 {
			_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
			require.NoError(t, err)
		}
		require.LessOrEqual(t, time.Since(start), 3*time.Second)
		_, _, err := roundTrip(t, tr, context.Background(), "http://b.test/")
		require.NoError(t, err)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err = roundTrip(t, tr, ctx, "http://b.test/")
	require.NoError(t, err)
}
