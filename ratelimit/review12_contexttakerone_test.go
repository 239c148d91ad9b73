package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// oneCtxTaker is a one-key limiter with TakeContext, as redislimit's Handle:
// its WaitN says the deadline is too close, TakeContext answers d and err
// (after calling during) and records its ctx; its Take must not be called.
type oneCtxTaker struct {
	t      *testing.T
	d      ratelimit.Decision
	err    error
	during func()
	ctx    context.Context
}

func (c *oneCtxTaker) AllowN(int) bool { c.t.Error("AllowN called"); return false }

func (c *oneCtxTaker) WaitN(context.Context, int) error { return ratelimit.ErrWouldExceedDeadline }

func (c *oneCtxTaker) Take(int) ratelimit.Decision {
	c.t.Error("Take called; the limiter has TakeContext")
	return c.d
}

func (c *oneCtxTaker) TakeContext(ctx context.Context, _ int) (ratelimit.Decision, error) {
	c.ctx = ctx
	if c.during != nil {
		c.during()
	}
	return c.d, c.err
}

// Global of a limiter with TakeContext(ctx, n), alone or in a Tally's
// wrapper, is asked by Middleware with the request's ctx; a request whose
// ctx ended before a decision gets nothing, and the Tally counts no
// decision for it.
func TestReview12GlobalTakeContext(t *testing.T) {
	type ctxKey struct{}
	for _, tallied := range []bool{false, true} {
		lim := &oneCtxTaker{t: t, err: context.Canceled}
		tally := new(ratelimit.Tally)
		var tk ratelimit.Taker = lim
		if tallied {
			tk = tally.Wrap(lim)
		}
		handled := false
		mw := ratelimit.Middleware(ratelimit.Global(tk), ratelimit.MiddlewareConfig{})(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "the request's"))
		cancel()
		w := &codeWriter{ResponseRecorder: httptest.NewRecorder()}
		mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		if handled || w.Code != 0 || w.Body.Len() != 0 {
			t.Fatalf("tallied %v: handled %v, code %d, body %q; want nothing", tallied, handled, w.Code, w.Body.String())
		}
		if lim.ctx == nil || lim.ctx.Value(ctxKey{}) != "the request's" {
			t.Fatalf("tallied %v: TakeContext was not given the request's ctx", tallied)
		}
		if c := tally.Counts(); c != (ratelimit.TallyCounts{}) {
			t.Fatalf("tallied %v: counts %+v for a request with no decision", tallied, c)
		}
	}
}

// A Tally's wrapper keeps the limiter's TakeContext, counting its decisions
// as Take's, and no more; a limiter without one gives a wrapper without one.
func TestReview12TallyKeepsTakeContext(t *testing.T) {
	tally := new(ratelimit.Tally)
	lim := &oneCtxTaker{t: t, d: ratelimit.Decision{Allowed: true, Limit: 1}}
	w, ok := tally.Wrap(lim).(interface {
		TakeContext(context.Context, int) (ratelimit.Decision, error)
	})
	if !ok {
		t.Fatal("the wrapper lost TakeContext")
	}
	if d, err := w.TakeContext(context.Background(), 1); !d.Allowed || err != nil {
		t.Fatalf("TakeContext = %+v, %v", d, err)
	}
	lim.d, lim.err = ratelimit.Decision{Limit: 1, RetryAfter: time.Second}, errors.New("store down")
	if d, err := w.TakeContext(context.Background(), 1); d.Allowed || err == nil {
		t.Fatalf("TakeContext = %+v, %v", d, err)
	}
	lim.d, lim.err = ratelimit.Decision{}, context.Canceled
	if _, err := w.TakeContext(context.Background(), 1); err != context.Canceled {
		t.Fatalf("TakeContext = %v", err)
	}
	if c := tally.Counts(); c.Allowed != 1 || c.Refused != 1 {
		t.Fatalf("counts %+v; want 1 allowed, 1 refused", c)
	}
	if _, ok := tally.Wrap(ratelimit.NewTokenBucket(1, 1)).(interface {
		TakeContext(context.Context, int) (ratelimit.Decision, error)
	}); ok {
		t.Fatal("a wrapper of a limiter without TakeContext has one")
	}
	if _, ok := ratelimit.Global(ratelimit.NewTokenBucket(1, 1)).(interface {
		TakeContext(context.Context, string, int) (ratelimit.Decision, error)
	}); ok {
		t.Fatal("Global of a limiter without TakeContext has one")
	}
}

// Transport's Limiter with TakeContext(ctx, n), alone or in a Tally's
// wrapper, tells the delay of a refused wait when asked with the request's
// ctx, and a ctx that ends meanwhile fails the request with ctx.Err(),
// counted by the Tally as one failed wait.
func TestReview12TransportLimiterTakeContext(t *testing.T) {
	send := roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the request was sent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	for _, tallied := range []bool{false, true} {
		tally := new(ratelimit.Tally)
		wrap := func(l ratelimit.Limiter) ratelimit.Limiter {
			if tallied {
				return tally.Wrap(l)
			}
			return l
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		lim := &oneCtxTaker{t: t, d: ratelimit.Decision{Limit: 1, RetryAfter: 2 * time.Hour}}
		tr := &ratelimit.Transport{Limiter: wrap(lim), Base: send}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://h.example/", nil)
		var de *ratelimit.DeadlineError
		if _, err := tr.RoundTrip(req); !errors.As(err, &de) || de.Delay != 2*time.Hour {
			t.Errorf("tallied %v: RoundTrip = %v; want a DeadlineError of 2h", tallied, err)
		}
		if lim.ctx != ctx {
			t.Errorf("tallied %v: TakeContext was not given the request's ctx", tallied)
		}
		lim = &oneCtxTaker{t: t, err: context.Canceled, during: cancel}
		tr = &ratelimit.Transport{Limiter: wrap(lim), Base: send}
		if _, err := tr.RoundTrip(req); err != context.Canceled {
			t.Errorf("tallied %v: cancelled during TakeContext: RoundTrip = %v", tallied, err)
		}
		if c := tally.Counts(); tallied && (c.Waited != 0 || c.WaitFailed != 2 || c.Allowed != 0 || c.Refused != 0) {
			t.Errorf("counts %+v; want 2 failed waits and nothing else", c)
		}
	}
}

// saysDelay is a limiter whose WaitN says the delay itself, as redislimit's
// does (a *DeadlineError under its own key): Transport must pass it on under
// the request's key without asking the limiter again.
type saysDelay struct {
	t     *testing.T
	delay time.Duration
}

func (s *saysDelay) AllowN(int) bool { s.t.Error("AllowN called"); return false }
func (s *saysDelay) Take(int) ratelimit.Decision {
	s.t.Error("Take called; WaitN said the delay")
	return ratelimit.Decision{}
}
func (s *saysDelay) WaitN(context.Context, int) error {
	return &ratelimit.DeadlineError{Key: "its own", Delay: s.delay}
}

type saysDelayKeyed struct{ saysDelay }

func (s *saysDelayKeyed) WaitN(ctx context.Context, _ string, n int) error {
	return s.saysDelay.WaitN(ctx, n)
}
func (s *saysDelayKeyed) Take(string, int) ratelimit.Decision { return s.saysDelay.Take(1) }

func TestTransportPassesOnASaidDelay(t *testing.T) {
	send := roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the request was sent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	tally := new(ratelimit.Tally)
	for _, tc := range []struct {
		name string
		tr   *ratelimit.Transport
		key  string
	}{
		{"Limiter", &ratelimit.Transport{Limiter: &saysDelay{t: t, delay: 2 * time.Hour}, Base: send}, ""},
		{"tallied Limiter", &ratelimit.Transport{Limiter: tally.Wrap(&saysDelay{t: t, delay: 2 * time.Hour}), Base: send}, ""},
		{"PerHost", &ratelimit.Transport{PerHost: &saysDelayKeyed{saysDelay{t: t, delay: 2 * time.Hour}},
			Key: func(*http.Request) string { return "h" }, Base: send}, "h"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://h.example/", nil)
		_, err := tc.tr.RoundTrip(req)
		var de *ratelimit.DeadlineError
		if !errors.As(err, &de) || de.Delay != 2*time.Hour || de.Key != tc.key {
			t.Errorf("%s: RoundTrip = %#v; want a DeadlineError of 2h under %q", tc.name, err, tc.key)
		}
	}
	if c := tally.Counts(); c != (ratelimit.TallyCounts{WaitFailed: 1}) {
		t.Errorf("counts %+v; want one failed wait", c)
	}
}

// A limiter that says a delay as the request's ctx ends (its WaitN looked at
// the deadline before the cancel): the request fails with ctx.Err(), the
// caller's error, not with a delay for a retry to honour.
func TestTransportSaidDelayAfterCtxEnded(t *testing.T) {
	send := roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the request was sent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	for _, perHost := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		lim := &cancelsThenSays{saysDelay: saysDelay{t: t, delay: 2 * time.Hour}, cancel: cancel}
		tr := &ratelimit.Transport{Limiter: lim, Base: send}
		if perHost {
			tr = &ratelimit.Transport{PerHost: &cancelsThenSaysKeyed{lim}, Base: send}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://h.example/", nil)
		if _, err := tr.RoundTrip(req); err != context.Canceled {
			t.Errorf("perHost %v: RoundTrip = %v, want %v", perHost, err, context.Canceled)
		}
		if !lim.called {
			t.Errorf("perHost %v: WaitN was not called", perHost)
		}
		cancel()
	}
}

// cancelsThenSays cancels the request's ctx in WaitN, then says a delay.
type cancelsThenSays struct {
	saysDelay
	cancel context.CancelFunc
	called bool
}

func (c *cancelsThenSays) WaitN(ctx context.Context, n int) error {
	c.called = true
	c.cancel()
	return c.saysDelay.WaitN(ctx, n)
}

// cancelsThenSaysKeyed is cancelsThenSays as a PerHost.
type cancelsThenSaysKeyed struct{ c *cancelsThenSays }

func (k *cancelsThenSaysKeyed) WaitN(ctx context.Context, _ string, n int) error {
	return k.c.WaitN(ctx, n)
}
func (k *cancelsThenSaysKeyed) Take(string, int) ratelimit.Decision { return k.c.Take(1) }
