package breaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// trackedBody is a request body that records its Close.
type trackedBody struct {
	io.Reader
	closed atomic.Int32
}

func (b *trackedBody) Close() error { b.closed.Add(1); return nil }

// statusBase answers each request with the status its path names ("/503"),
// or with a transport error for "/err"; it counts the requests it gets.
type statusBase struct{ sent atomic.Int32 }

var errConnRefused = errors.New("connection refused")

func (s *statusBase) RoundTrip(r *http.Request) (*http.Response, error) {
	s.sent.Add(1)
	if r.Body != nil {
		_ = r.Body.Close()
	}
	var code int
	switch p := strings.TrimPrefix(r.URL.Path, "/"); p {
	case "err":
		return nil, errConnRefused
	case "canceled":
		return nil, context.Canceled
	case "", "ok":
		code = 200
	default:
		_, _ = fmt.Sscan(p, &code)
	}
	return &http.Response{
		StatusCode: code,
		Status:     fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Body:       io.NopCloser(strings.NewReader("body")),
		Request:    r,
	}, nil
}

func send(t *testing.T, tr http.RoundTripper, ctx context.Context, url string) (*http.Response, *trackedBody, error) {
	t.Helper()
	body := &trackedBody{Reader: strings.NewReader("payload")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return resp, body, err
}

// TestTransportOutcomes: transport errors and 5xx are failures, 4xx and the
// rest successes, a canceled ctx's error is ignored; a 5xx response comes back
// to the caller with no error.
func TestTransportOutcomes(t *testing.T) {
	base := &statusBase{}
	tr := &Transport{Base: base, Settings: Settings{FailureThreshold: 100}}
	for _, want := range []int{200, 204, 404, 429, 500, 503} {
		path := fmt.Sprint("/", want)
		resp, _, err := send(t, tr, context.Background(), "http://a.test"+path)
		require.NoError(t, err, path)
		require.Equal(t, want, resp.StatusCode, path)
	}
	resp, _, err := send(t, tr, context.Background(), "http://a.test/err")
	require.Nil(t, resp)
	require.Equal(t, errConnRefused, err)
	_, _, err = send(t, tr, context.Background(), "http://a.test/canceled")
	require.Equal(t, context.Canceled, err)

	c := tr.Breaker("a.test").Counts()
	require.Equal(t, Counts{Requests: 8, Successes: 4, Failures: 3, Ignored: 1, ConsecutiveFailures: 3}, c)
	require.EqualValues(t, 8, base.sent.Load())
}

// TestTransportStatusError: Settings.IsFailure sees a 5xx as a *StatusError,
// and may judge it otherwise.
func TestTransportStatusError(t *testing.T) {
	var seen []string
	tr := &Transport{Base: &statusBase{}, Settings: Settings{
		FailureThreshold: 1,
		IsFailure: func(err error) bool {
			var se *StatusError
			if errors.As(err, &se) {
				seen = append(seen, se.Error())
				return se.StatusCode != http.StatusNotImplemented
			}
			return err != nil
		},
	}}
	_, _, err := send(t, tr, context.Background(), "http://a.test/501")
	require.NoError(t, err)
	require.Equal(t, Closed, tr.Breaker("a.test").State())
	_, _, err = send(t, tr, context.Background(), "http://a.test/502")
	require.NoError(t, err)
	require.Equal(t, Open, tr.Breaker("a.test").State())
	require.Equal(t, []string{"ctxsync: response status 501 Not Implemented", "ctxsync: response status 502 Bad Gateway"}, seen)
	require.Equal(t, "ctxsync: response status 599", (&StatusError{StatusCode: 599}).Error())
}

// TestTransportPerHost: a host that fails is refused at once, with an
// *OpenError named for it and the request's body closed, while other hosts
// go on; after the open time a trial request closes it again.
func TestTransportPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &statusBase{}
		var changes []string
		var mu sync.Mutex
		tr := &Transport{
			Base: base,
			Settings: Settings{
				Name:             "api",
				FailureThreshold: 2,
				OpenTimeout:      5 * time.Second,
				OnStateChange: func(from, to State, _ Counts) {
					mu.Lock()
					changes = append(changes, "settings: "+from.String()+">"+to.String())
					mu.Unlock()
				},
			},
			OnStateChange: func(host string, from, to State, _ Counts) {
				mu.Lock()
				changes = append(changes, host+": "+from.String()+">"+to.String())
				mu.Unlock()
			},
		}
		send(t, tr, context.Background(), "http://a.test/503")
		send(t, tr, context.Background(), "http://A.test:80/err")
		require.Equal(t, Open, tr.Breaker("a.test").State())

		time.Sleep(time.Second)
		resp, body, err := send(t, tr, context.Background(), "http://a.test/ok")
		require.Nil(t, resp)
		require.ErrorIs(t, err, ErrOpen)
		var oe *OpenError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, "api a.test", oe.Name)
		require.Equal(t, 4*time.Second, oe.RetryAfter())
		require.EqualValues(t, 1, body.closed.Load(), "a refused request's body was not closed")
		require.EqualValues(t, 2, base.sent.Load())

		_, _, err = send(t, tr, context.Background(), "http://b.test/ok")
		require.NoError(t, err, "another host's breaker refused")
		require.Equal(t, 2, tr.Hosts())

		time.Sleep(4 * time.Second)
		_, _, err = send(t, tr, context.Background(), "http://a.test/ok")
		require.NoError(t, err)
		require.Equal(t, Closed, tr.Breaker("a.test").State())
		require.Equal(t, []string{
			"settings: closed>open", "a.test: closed>open",
			"settings: open>half-open", "a.test: open>half-open",
			"settings: half-open>closed", "a.test: half-open>closed",
		}, changes)
		require.Nil(t, tr.Breaker("c.test"))
	})
}

// TestTransportCtxDone: a request whose ctx is done is not sent, fails with
// ctx.Err(), has its body closed, and counts for nothing.
func TestTransportCtxDone(t *testing.T) {
	base := &statusBase{}
	tr := &Transport{Base: base}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp, body, err := send(t, tr, ctx, "http://a.test/ok")
	require.Nil(t, resp)
	require.Equal(t, context.Canceled, err)
	require.EqualValues(t, 1, body.closed.Load())
	require.Zero(t, base.sent.Load())
	require.Nil(t, tr.Breaker("a.test"), "a request never sent made a breaker")
	require.Zero(t, tr.Hosts())
}

// TestTransportCustomKey: requests with the same key share a breaker.
func TestTransportCustomKey(t *testing.T) {
	tr := &Transport{
		Base:     &statusBase{},
		Settings: Settings{FailureThreshold: 2},
		Key:      func(r *http.Request) string { return "svc:" + r.Header.Get("X-Service") },
	}
	for _, host := range []string{"a.test", "b.test"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/500", nil)
		req.Header.Set("X-Service", "billing")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	require.Equal(t, Open, tr.Breaker("svc:billing").State())
	require.Equal(t, 1, tr.Hosts())
}

// TestTransportNoResponse: a Base that returns neither a response nor an
// error breaks the RoundTripper contract: that is a failure, and an error.
func TestTransportNoResponse(t *testing.T) {
	tr := &Transport{Base: rtFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}
	resp, _, err := send(t, tr, context.Background(), "http://a.test/")
	require.Nil(t, resp)
	require.Equal(t, errNoResponse, err)
	require.EqualValues(t, 1, tr.Breaker("a.test").Counts().Failures)
}

// TestTransportPanickingBase: a panic in Base goes on to the caller and counts
// as a failure; a trial request that panics gives its slot back, so that the
// next opening's trial gets through.
func TestTransportPanickingBase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		panicky := true
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			if panicky {
				panic("base")
			}
			return (&statusBase{}).RoundTrip(r)
		})
		tr := &Transport{Base: base, Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 1}}
		require.PanicsWithValue(t, "base", func() { send(t, tr, context.Background(), "http://a.test/") })
		b := tr.Breaker("a.test")
		require.Equal(t, Open, b.State())
		time.Sleep(time.Second)
		require.PanicsWithValue(t, "base", func() { send(t, tr, context.Background(), "http://a.test/") })
		require.Equal(t, Open, b.State(), "a panicking trial was not a failure")
		require.Zero(t, b.probes)
		time.Sleep(time.Second)
		panicky = false
		_, _, err := send(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err, "the trial slot was kept by a panicking request")
		require.Equal(t, Closed, b.State())
	})
}

// TestTransportPrecheck: Precheck refuses what RoundTrip would refuse, counts
// the refusal, takes no trial slot, and makes no breaker.
func TestTransportPrecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &Transport{Base: &statusBase{}, Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 2}}
		req := func(path string) *http.Request {
			r, err := http.NewRequest(http.MethodGet, "http://a.test"+path, nil)
			require.NoError(t, err)
			return r
		}
		require.NoError(t, tr.Precheck(req("/")))
		require.Zero(t, tr.Hosts(), "Precheck made a breaker")

		resp, err := tr.RoundTrip(req("/500"))
		require.NoError(t, err)
		_ = resp.Body.Close()
		b := tr.Breaker("a.test")
		err = tr.Precheck(req("/"))
		require.ErrorIs(t, err, ErrOpen)
		require.Same(t, b.openErr.Load(), err)
		require.EqualValues(t, 1, b.Counts().Rejected)

		time.Sleep(time.Second) // half-open, with two slots
		require.NoError(t, tr.Precheck(req("/")))
		require.Equal(t, HalfOpen, b.State())
		done1, err := b.Allow(context.Background())
		require.NoError(t, err)
		require.NoError(t, tr.Precheck(req("/")), "one slot is free")
		done2, err := b.Allow(context.Background())
		require.NoError(t, err)
		err = tr.Precheck(req("/"))
		require.Same(t, b.halfOpenErr, err, "every slot is taken")
		done1(nil)
		require.NoError(t, tr.Precheck(req("/")))
		done2(nil)
		require.Equal(t, Closed, b.State())
		require.Zero(t, b.probes, "Precheck took a slot")

		b.ForceOpen()
		err = tr.Precheck(req("/"))
		var oe *OpenError
		require.ErrorAs(t, err, &oe)
		require.True(t, oe.Forced)
		time.Sleep(time.Hour)
		require.Error(t, tr.Precheck(req("/")), "a forced opening ended with time")
		b.Disable()
		require.NoError(t, tr.Precheck(req("/")))
	})
}

// TestTransportMaxHosts: the breakers held never pass MaxHosts, however many
// hosts come; the least recently used goes first, and an open breaker is
// spared while a closed one may go instead.
func TestTransportMaxHosts(t *testing.T) {
	tr := &Transport{Base: &statusBase{}, MaxHosts: 4, Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Hour}}
	get := func(host, path string) {
		resp, _, err := send(t, tr, context.Background(), "http://"+host+path)
		if err == nil {
			_ = resp.Body.Close()
		}
	}
	for _, h := range []string{"a", "b", "c", "d", "a", "e"} {
		get(h, "/")
	}
	require.Equal(t, 4, tr.Hosts())
	require.Nil(t, tr.Breaker("b"), "not the least recently used was dropped")
	for _, h := range []string{"a", "c", "d", "e"} {
		require.NotNil(t, tr.Breaker(h), h)
	}

	get("bad", "/500")
	require.Equal(t, Open, tr.Breaker("bad").State())
	for i := range 1000 {
		get(fmt.Sprint("h", i), "/")
		require.LessOrEqual(t, tr.Hosts(), 4)
	}
	require.NotNil(t, tr.Breaker("bad"), "an open breaker was dropped while closed ones were held")

	// Every breaker open: one goes anyway, so the cap holds.
	for i := range 10 {
		get(fmt.Sprint("down", i), "/500")
		require.Equal(t, 4, tr.Hosts())
	}

	// A large set, sampled: still capped, the open breaker still spared.
	big := &Transport{Base: &statusBase{}, MaxHosts: 64, Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Hour}}
	resp, _, _ := send(t, big, context.Background(), "http://bad/500")
	require.Equal(t, 500, resp.StatusCode)
	for i := range 5000 {
		_, _, err := send(t, big, context.Background(), fmt.Sprintf("http://h%d/", i))
		require.NoError(t, err)
	}
	require.Equal(t, 64, big.Hosts())
	require.NotNil(t, big.Breaker("bad"))
	require.Equal(t, Open, big.Breaker("bad").State())
	big.hosts.mu.Lock()
	for i, e := range big.hosts.all {
		require.Equal(t, i, e.idx)
		v, ok := big.hosts.m.Load(e.key)
		require.True(t, ok)
		require.Same(t, e, v)
	}
	require.Equal(t, 64, big.hostsInMap())
	big.hosts.mu.Unlock()
}

// TestTransportMisuse: a negative MaxHosts and Settings out of range panic at
// the first request, and leave nothing behind.
func TestTransportMisuse(t *testing.T) {
	tr := &Transport{Base: &statusBase{}, MaxHosts: -1}
	require.PanicsWithValue(t, "breaker: Transport with negative MaxHosts -1", func() { send(t, tr, context.Background(), "http://a.test/") })
	tr = &Transport{Base: &statusBase{}, Settings: Settings{Jitter: 2}}
	require.PanicsWithValue(t, "breaker: bad Settings: Jitter 2 is not between 0 and 1", func() { send(t, tr, context.Background(), "http://a.test/") })
	require.Zero(t, tr.Hosts())
}

// TestTransportZeroValue: the zero Transport sends through
// http.DefaultTransport with the default Settings.
func TestTransportZeroValue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "hi")
	}))
	defer srv.Close()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	var tr Transport
	client := &http.Client{Transport: &tr}
	for range 5 {
		resp, err := client.Get(srv.URL + "/fail")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 500, resp.StatusCode)
	}
	_, err := client.Get(srv.URL + "/")
	require.ErrorIs(t, err, ErrOpen, "five failures did not open the default breaker")
	host := strings.TrimPrefix(srv.URL, "http://")
	require.Equal(t, Open, tr.Breaker(host).State())
}

// TestHammerTransport: many goroutines send requests to a few hosts through
// one Transport with a small cap, with failures, panics and cancellations at
// random; then no breaker holds a trial slot, no body is left open, and the
// cap held.
func TestHammerTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodies, closed atomic.Int64
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			_ = r.Body.Close()
			time.Sleep(time.Duration(len(r.URL.Path)) * time.Millisecond)
			switch r.URL.Path[1] {
			case 'p':
				panic("base")
			case 'e':
				return nil, errConnRefused
			case 'c':
				return nil, r.Context().Err()
			case 'f':
				return &http.Response{StatusCode: 503, Body: http.NoBody}, nil
			}
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})
		tr := &Transport{Base: base, MaxHosts: 3, Settings: Settings{
			FailureThreshold: 3, OpenTimeout: 20 * time.Millisecond, HalfOpenMaxCalls: 2,
		}}
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 200 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration((g*7+i)%13)*time.Millisecond)
					paths := []string{"/ok", "/okk", "/fail", "/err", "/panic", "/c"}
					path := paths[(g+i*5)%len(paths)]
					body := &trackedBody{Reader: strings.NewReader("x")}
					bodies.Add(1)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://h%d%s", (g+i)%5, path), body)
					func() {
						defer func() {
							if r := recover(); r != nil && r != "base" {
								panic(r)
							}
						}()
						if i%3 == 0 {
							// As ratelimit.Transport does: ask first.
							if err := tr.Precheck(req); err != nil {
								if !errors.Is(err, ErrOpen) {
									t.Errorf("Precheck = %v", err)
								}
								_ = req.Body.Close()
								return
							}
						}
						resp, err := tr.RoundTrip(req)
						if err == nil {
							_ = resp.Body.Close()
						}
					}()
					if i%50 == 49 {
						if b := tr.Breaker(fmt.Sprint("h", g%5)); b != nil {
							if g%2 == 0 {
								b.ForceOpen()
							} else {
								b.Reset()
							}
						}
					}
					closed.Add(int64(body.closed.Load()))
					cancel()
					if i%17 == 0 {
						time.Sleep(25 * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		require.Equal(t, bodies.Load(), closed.Load(), "bodies left open")
		require.LessOrEqual(t, tr.Hosts(), 3)
		time.Sleep(time.Second)
		tr.hosts.mu.Lock()
		defer tr.hosts.mu.Unlock()
		require.Len(t, tr.hosts.all, tr.hostsInMap())
		for _, e := range tr.hosts.all {
			e.b.mu.Lock()
			probes := e.b.probes
			e.b.mu.Unlock()
			require.Zero(t, probes, "%s keeps a trial slot", e.key)
		}
	})
}

// hostsInMap counts the entries of the map of breakers.
func (t *Transport) hostsInMap() int {
	n := 0
	t.hosts.m.Range(func(any, any) bool { n++; return true })
	return n
}

// TestTransportPanickingSettings: a panic in IsFailure or OnStateChange,
// after Base answered, goes on to the caller with the response's body closed,
// and the breaker keeps no trial slot.
func TestTransportPanickingSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var respBody *trackedBody
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			respBody = &trackedBody{Reader: strings.NewReader("x")}
			code := 200
			if r.URL.Path == "/fail" {
				code = 503
			}
			return &http.Response{StatusCode: code, Body: respBody}, nil
		})
		panicky := true
		tr := &Transport{Base: base, Settings: Settings{
			FailureThreshold: 1,
			OpenTimeout:      time.Second,
			IsFailure: func(err error) bool {
				if panicky {
					panic("IsFailure")
				}
				return err != nil
			},
		}}
		require.PanicsWithValue(t, "IsFailure", func() { send(t, tr, context.Background(), "http://a.test/fail") })
		require.EqualValues(t, 1, respBody.closed.Load(), "the response of a panicking outcome was left open")

		panicky = false
		_, _, err := send(t, tr, context.Background(), "http://a.test/fail")
		require.NoError(t, err)
		b := tr.Breaker("a.test")
		require.Equal(t, Open, b.State())
		time.Sleep(time.Second)
		panicky = true
		require.PanicsWithValue(t, "IsFailure", func() { send(t, tr, context.Background(), "http://a.test/") })
		require.EqualValues(t, 1, respBody.closed.Load())
		require.Zero(t, b.probes, "a trial whose outcome panicked kept its slot")
		panicky = false
		_, _, err = send(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err)
		require.Equal(t, Closed, b.State())

		tr2 := &Transport{Base: base, Settings: Settings{FailureThreshold: 1},
			OnStateChange: func(string, State, State, Counts) { panic("OnStateChange") }}
		require.PanicsWithValue(t, "OnStateChange", func() { send(t, tr2, context.Background(), "http://a.test/fail") })
		require.EqualValues(t, 1, respBody.closed.Load())
		require.Equal(t, Open, tr2.Breaker("a.test").State())
	})
}

// TestTransportAcrossBubbles: a Transport used outside a synctest bubble
// works inside one, and one first used inside works after it ends; an
// opening set on the other clock counts as over.
func TestTransportAcrossBubbles(t *testing.T) {
	tr := &Transport{Base: &statusBase{}, Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Minute}}
	send(t, tr, context.Background(), "http://a.test/503")
	require.Equal(t, Open, tr.Breaker("a.test").State())
	synctest.Test(t, func(t *testing.T) {
		// The breaker's refusals may take a while to read the clock and
		// find that out (see Breaker); Precheck and State read it at once.
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		require.NoError(t, tr.Precheck(req))
		require.Equal(t, HalfOpen, tr.Breaker("a.test").State())
		_, _, err := send(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err, "an opening from outside the bubble still refused")
		send(t, tr, context.Background(), "http://b.test/503")
		require.Equal(t, Open, tr.Breaker("b.test").State())
		_, _, err = send(t, tr, context.Background(), "http://b.test/")
		require.ErrorIs(t, err, ErrOpen)
	})
	_, _, err := send(t, tr, context.Background(), "http://b.test/")
	require.NoError(t, err, "an opening from inside the bubble still refused after it")
	require.Equal(t, Closed, tr.Breaker("b.test").State())
	require.Equal(t, 2, tr.Hosts())
}
