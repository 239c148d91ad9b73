package retry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// rv16aPanicker is a Base of the user's that panics with v, or calls
// runtime.Goexit if goexit is set.
type rv16aPanicker struct {
	v      any
	goexit bool
	calls  int
}

func (b *rv16aPanicker) RoundTrip(*http.Request) (*http.Response, error) {
	b.calls++
	if b.goexit {
		runtime.Goexit()
	}
	panic(b.v)
}

// rv16aRun runs f in a goroutine of its own and returns what it panicked
// with, "goexit" if it called runtime.Goexit, or nil.
func rv16aRun(f func()) (r any) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		finished := false
		defer func() {
			if r = recover(); r == nil && !finished {
				r = "goexit"
			}
		}()
		f()
		finished = true
	}()
	<-done
	return r
}

// rv16aMistake is the message of a mistake of the library's: a
// ratelimit.Transport with no limiter.
func rv16aMistake(t *testing.T) string {
	err := (&ratelimit.Transport{}).Check()
	require.Error(t, err)
	return err.Error()
}

// TestRV16aUserPanicWithMistakesMessage: a Base of the user's right under a
// breaker.Transport that panics with a string equal to a mistake message of
// the library's, or with an error that says it, counts as a failure of the
// host, as any panic of its: no Transport of the library under the breaker
// has that mistake, and the breaker opens after FailureThreshold of them.
func TestRV16aUserPanicWithMistakesMessage(t *testing.T) {
	msg := rv16aMistake(t)
	for name, v := range map[string]any{"string": msg, "error": errors.New(msg)} {
		t.Run(name, func(t *testing.T) {
			base := &rv16aPanicker{v: v}
			b := &breaker.Transport{Base: base, Settings: breaker.Settings{FailureThreshold: 3}}
			for range 3 {
				require.Equal(t, v, rv16aRun(func() { _, _ = b.RoundTrip(edge16Req(t)) }))
			}
			_, err := b.RoundTrip(edge16Req(t))
			require.ErrorIs(t, err, breaker.ErrOpen)
			require.Equal(t, 3, base.calls)
		})
	}
}

// rv16aZeroBucket is a Transport of the library's with a mistake that only
// some requests meet: its TokenBucket was not made by NewTokenBucket, which
// a request that costs nothing never asks, and goes by to Base.
func rv16aZeroBucket(base http.RoundTripper) *ratelimit.Transport {
	return &ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}, Cost: func(*http.Request) int { return 0 }, Base: base}
}

// TestRV16aPanicsPastALatentMistake: a breaker.Transport over a chain with
// a mistake that the request went by, to a Base of the user's that panics
// with nil, with a slice or a map (values that cannot be compared with a
// string), with another string, or calls runtime.Goexit: the panic goes on
// unchanged (a panic(nil) as the *runtime.PanicNilError it becomes), nothing
// panics in the look at it, and each counts as a failure of the host. So do
// the same panics under a retry.Transport with a Budget: its deposits stay.
func TestRV16aPanicsPastALatentMistake(t *testing.T) {
	slice, m := []int{1}, map[string]int{"a": 1}
	for name, user := range map[string]*rv16aPanicker{
		"nil":    {v: nil},
		"slice":  {v: slice},
		"map":    {v: m},
		"string": {v: "user: down"},
		"goexit": {goexit: true},
	} {
		t.Run(name, func(t *testing.T) {
			rl := rv16aZeroBucket(user)
			b := &breaker.Transport{Base: rl, Settings: breaker.Settings{FailureThreshold: 2}}
			require.Error(t, b.Check(), "the chain has the mistake")
			for range 2 {
				got := rv16aRun(func() { _, _ = b.RoundTrip(edge16Req(t)) })
				switch name {
				case "nil":
					var pn *runtime.PanicNilError
					require.ErrorAs(t, got.(error), &pn)
				case "slice":
					require.Equal(t, slice, got)
				case "map":
					require.Equal(t, m, got)
				case "goexit":
					require.Equal(t, "goexit", got)
				default:
					require.Equal(t, user.v, got)
				}
			}
			_, err := b.RoundTrip(edge16Req(t))
			require.ErrorIs(t, err, breaker.ErrOpen, "each panic counted as a failure")
			require.Equal(t, 2, user.calls)
		})
	}
}

// TestRV16aLatentMistakeMessage: the decision the look at a Base's panic
// makes: a panic whose value is the very message of a mistake that a
// Transport of the library's under the breaker has is taken for that
// mistake, wherever under the breaker it was raised (here by a Base of the
// user's that a request reached past the Transport with the mistake, as it
// costs nothing). It counts as ignored, and goes on unchanged.
func TestRV16aLatentMistakeMessage(t *testing.T) {
	msg := (&ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}}).Check()
	require.Error(t, msg)
	user := &rv16aPanicker{v: msg.Error()}
	b := &breaker.Transport{Base: rv16aZeroBucket(user), Settings: breaker.Settings{FailureThreshold: 1}}
	for range 3 {
		require.Equal(t, msg.Error(), rv16aRun(func() { _, _ = b.RoundTrip(edge16Req(t)) }))
	}
	c := b.Breaker("h.example").Counts()
	require.Zero(t, c.Failures)
	require.Equal(t, int64(3), c.Ignored)
	require.Equal(t, 3, user.calls)
}

// TestRV16aRetryKeepsDepositOfOtherPanics: retry.Transport over a chain
// with a latent mistake, whose Base of the user's panics with something else
// (or calls runtime.Goexit): the panic goes on unchanged, and the request's
// first attempt stays counted in the Budget: a Budget of ratio 1 and no
// reserve then lets one retry per such request.
func TestRV16aRetryKeepsDepositOfOtherPanics(t *testing.T) {
	for name, user := range map[string]*rv16aPanicker{
		"slice":  {v: []int{1}},
		"goexit": {goexit: true},
		"string": {v: "user: down"},
	} {
		t.Run(name, func(t *testing.T) {
			budget := retry.NewBudget(1, 0)
			tr := &retry.Transport{Base: rv16aZeroBucket(user), Policy: retry.Policy{Budget: budget}}
			require.Error(t, tr.Check())
			const n = 5
			for range n {
				got := rv16aRun(func() { _, _ = tr.RoundTrip(edge16Req(t)) })
				if user.goexit {
					require.Equal(t, "goexit", got)
				} else {
					require.Equal(t, user.v, got)
				}
			}
			retries := 0
			_ = retry.Policy{Budget: budget, NoDelay: true, MaxAttempts: 100, OnRetry: func(int, error, time.Duration) { retries++ }}.
				Execute(context.Background(), func(context.Context) error { return errors.New("down") })
			require.Equal(t, n+1, retries, "the requests that panicked were counted as calls")
		})
	}
}

// TestRV16aHalfOpenHammerOverMistake: goroutines send requests, some with a
// ctx cancelled at random, through a half-open breaker.Transport (three
// trial slots) over a ratelimit.Transport with no limiter. Each request
// panics with the mistake, is refused with ErrOpen (every slot taken), or
// fails with its ctx's error; OnCall hears of each request that reached the
// breaker exactly once, as ignored or rejected; the breaker stays half-open
// and keeps no slot: three requests at once are let through after.
func TestRV16aHalfOpenHammerOverMistake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		told := map[breaker.Outcome]int{}
		rl := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1e9, 1<<20), Base: edge16Down{}}
		b := &breaker.Transport{Base: rl, Settings: breaker.Settings{
			FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 3, SuccessThreshold: 3,
			OnCall: func(e breaker.CallEvent) {
				mu.Lock()
				told[e.Outcome]++
				mu.Unlock()
			},
		}}
		_, err := b.RoundTrip(edge16Req(t))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		time.Sleep(time.Second)
		br := b.Breaker("h.example")
		require.Equal(t, breaker.HalfOpen, br.State())
		mu.Lock()
		told = map[breaker.Outcome]int{}
		mu.Unlock()
		lim := rl.Limiter
		rl.Limiter = nil // the mistake, while no request is in flight
		msg := b.Check()
		require.Error(t, msg)

		const goroutines, each = 8, 40
		var wg sync.WaitGroup
		var panics, refused, cancelled atomic.Int64
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					ctx, cancel := context.WithCancel(context.Background())
					if (g*each+i)%5 == 0 {
						cancel()
					}
					req := edge16Req(t).WithContext(ctx)
					var rerr error
					got := rv16aRun(func() { _, rerr = b.RoundTrip(req) })
					cancel()
					switch {
					case got != nil:
						require.Equal(t, msg.Error(), got)
						panics.Add(1)
					case errors.Is(rerr, breaker.ErrOpen):
						refused.Add(1)
					default:
						require.ErrorIs(t, rerr, context.Canceled)
						cancelled.Add(1)
					}
					if i%4 == 0 {
						runtime.Gosched()
					}
				}
			})
		}
		wg.Wait()
		require.Equal(t, int64(goroutines*each), panics.Load()+refused.Load()+cancelled.Load())
		require.NotZero(t, panics.Load())
		require.Equal(t, breaker.HalfOpen, br.State())
		mu.Lock()
		require.Equal(t, mapNonZero(map[breaker.Outcome]int{breaker.Ignored: int(panics.Load()), breaker.Rejected: int(refused.Load())}), mapNonZero(told))
		mu.Unlock()

		// No slot kept: three trials at once are let through.
		rl.Limiter = lim
		rl.Base = &rv16aBlock{release: make(chan struct{})}
		for range 3 {
			wg.Go(func() {
				_, err := b.RoundTrip(edge16Req(t))
				require.NoError(t, err)
			})
		}
		synctest.Wait()
		_, err = b.RoundTrip(edge16Req(t))
		require.ErrorIs(t, err, breaker.ErrOpen, "the three slots are taken by the three trials")
		close(rl.Base.(*rv16aBlock).release)
		wg.Wait()
		require.Equal(t, breaker.Closed, br.State())
	})
}

func mapNonZero(m map[breaker.Outcome]int) map[breaker.Outcome]int {
	out := map[breaker.Outcome]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// rv16aBlock answers 200 once release is closed.
type rv16aBlock struct{ release chan struct{} }

func (b *rv16aBlock) RoundTrip(req *http.Request) (*http.Response, error) {
	<-b.release
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// rv16aBadErr is an error of the user's whose Error panics, as a nil
// pointer's would.
type rv16aBadErr struct{ msg *string }

func (e *rv16aBadErr) Error() string { return *e.msg }

// rv16aCheckedLimiter is a limiter of the user's with a Check whose error's
// Error panics.
type rv16aCheckedLimiter struct{ ratelimit.Limiter }

func (rv16aCheckedLimiter) Check() error { return &rv16aBadErr{} }

// TestRV16aMistakesErrorPanics: the look at a panic of Base asks the check
// of each of the library's Transports under the breaker, which asks a
// limiter's Check, code of the user's; the Error of the error it returns is
// the user's code too. If that panics, it is taken as no mistake found
// there, as a Check that panics is: the Base's panic goes on unchanged and
// counts as a failure. On main the Error's nil dereference replaced the
// Base's panic.
func TestRV16aMistakesErrorPanics(t *testing.T) {
	user := &rv16aPanicker{v: "user: down"}
	rl := &ratelimit.Transport{Limiter: rv16aCheckedLimiter{ratelimit.NewTokenBucket(1e9, 1<<20)}, Base: user}
	for _, top := range []http.RoundTripper{
		&breaker.Transport{Base: rl, Settings: breaker.Settings{FailureThreshold: 1}},
		&retry.Transport{Base: rl, Policy: retry.Policy{Budget: retry.NewBudget(1, 0)}},
	} {
		require.Equal(t, "user: down", rv16aRun(func() { _, _ = top.RoundTrip(edge16Req(t)) }), "%T", top)
		if b, ok := top.(*breaker.Transport); ok {
			_, err := b.RoundTrip(edge16Req(t))
			require.ErrorIs(t, err, breaker.ErrOpen, "the panic counted as a failure")
		}
	}
}

// rv16a503 answers 503 to every request.
type rv16a503 struct{}

func (rv16a503) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// TestRV16aRetryableAfterFirstAttempt: a first attempt that was sent and
// returned (a 503) stays counted in the Budget when a function of the
// user's that runs after Base returned, before a second attempt
// (RetryResponse, Retryable, OnRetry, DelayFunc), panics, whatever the value: the request was sent. Only a
// first attempt that did not return is looked at for a mistake. On main a
// panic of Retryable with the message of a mistake the chain has (one that
// a request that costs nothing goes by) took the deposit back.
func TestRV16aRetryableAfterFirstAttempt(t *testing.T) {
	msg := (&ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}}).Check()
	require.Error(t, msg)
	for _, where := range []string{"RetryResponse", "Retryable", "OnRetry", "DelayFunc"} {
		t.Run(where, func(t *testing.T) {
			budget := retry.NewBudget(1, 0)
			boom := func() { panic(msg.Error()) }
			tr := &retry.Transport{Base: rv16aZeroBucket(rv16a503{}), Policy: retry.Policy{Budget: budget, NoDelay: true}}
			switch where {
			case "RetryResponse":
				tr.RetryResponse = func(*http.Response) bool { boom(); return true }
			case "Retryable":
				tr.Policy.Retryable = func(error) bool { boom(); return true }
			case "OnRetry":
				tr.Policy.OnRetry = func(int, error, time.Duration) { boom() }
			case "DelayFunc":
				tr.DelayFunc = func(int, *http.Response, error) time.Duration { boom(); return 0 }
			}
			require.Equal(t, msg.Error(), rv16aRun(func() { _, _ = tr.RoundTrip(edge16Req(t)) }))
			retries := 0
			_ = retry.Policy{Budget: budget, NoDelay: true, MaxAttempts: 100, OnRetry: func(int, error, time.Duration) { retries++ }}.
				Execute(context.Background(), func(context.Context) error { return errors.New("down") })
			want := 2 // this call's first attempt, and the request's
			if where == "OnRetry" {
				want = 1 // the request's retry was let through before OnRetry
			}
			require.Equal(t, want, retries, "the request's first attempt was counted")
		})
	}
}
