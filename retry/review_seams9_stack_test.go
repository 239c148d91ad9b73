package retry_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// seams9Service answers as net/http would, on virtual time: after a random
// delay, or with context.Cause(ctx) when the request's ctx ends first; with
// 200, 503 (Retry-After: 1), 429 (Retry-After: 0), 502, or a transport
// error. It keeps every body it hands out.
type seams9Service struct {
	mu     sync.Mutex
	rng    *rand.Rand
	bodies []*seams9Body
	calls  atomic.Int64
	good   atomic.Bool // answer 200 at once, from now on
}

func (s *seams9Service) RoundTrip(r *http.Request) (*http.Response, error) {
	s.calls.Add(1)
	s.mu.Lock()
	delay := time.Duration(s.rng.Int64N(int64(300 * time.Millisecond)))
	kind := s.rng.IntN(10)
	s.mu.Unlock()
	if s.good.Load() {
		delay, kind = 0, 0
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return nil, context.Cause(r.Context())
		}
	}
	h := http.Header{}
	code := http.StatusOK
	switch kind {
	case 6:
		code = http.StatusServiceUnavailable
		h.Set("Retry-After", "1")
	case 7:
		code = http.StatusTooManyRequests
		h.Set("Retry-After", "0")
	case 8:
		code = http.StatusBadGateway
	case 9:
		return nil, errors.New("connection reset by peer")
	}
	b := &seams9Body{Reader: strings.NewReader(strings.Repeat("x", 100))}
	s.mu.Lock()
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code), Header: h, Body: b, Request: r}, nil
}

// seams9Count counts the requests that pass a seam of the stack.
type seams9Count struct {
	base  http.RoundTripper
	calls atomic.Int64
}

func (c *seams9Count) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.base.RoundTrip(r)
}

func (c *seams9Count) Precheck(r *http.Request) error {
	if p, ok := c.base.(interface{ Precheck(*http.Request) error }); ok {
		return p.Precheck(r)
	}
	return nil
}

// TestReviewSeams9_FullStackHammer: the README's client stack, every layer
// at once: retry.Transport with a Hedge and a Budget shared with its
// Policy, a global ratelimit.Transport, a per-host one, adaptive.Transport,
// breaker.Transport, over a service that is slow, fails in every way and
// answers the ctx's cause when a request is given up; callers whose ctxs
// end by deadline, by a cancel, or by a cancel with a cause, at random
// moments, and who read their bodies, or not, or close them early. After
// everything returns: every body closed once; the adaptive limiter holds
// nothing; each Tally counted one wait per request that passed its
// limiter; and every breaker lets a request through again once the
// service is well.
func TestReviewSeams9_FullStackHammer(t *testing.T) {
	for seed := range uint64(8) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			svc := &seams9Service{rng: rand.New(rand.NewPCG(seed, 10))}
			lim := adaptive.New(adaptive.Config{InitialLimit: 8, MinLimit: 1, MaxLimit: 16})
			// In the order adaptive.Transport's doc gives: retry, the rate
			// limits, adaptive, the breaker; a counter at each seam.
			toSvc := &seams9Count{base: svc}
			br := &breaker.Transport{Base: toSvc,
				Settings: breaker.Settings{FailureThreshold: 3, OpenTimeout: time.Second}}
			toAdaptive := &seams9Count{base: &adaptive.Transport{Base: br, Limiter: lim}}
			var hostTally, allTally ratelimit.Tally
			perHost := ratelimit.NewKeyed(func(string) ratelimit.Taker {
				return hostTally.Wrap(ratelimit.NewTokenBucket(20, 4))
			}, ratelimit.KeyedConfig{})
			hostRL := &ratelimit.Transport{Base: toAdaptive, PerHost: perHost}
			toHost := &seams9Count{base: hostRL}
			allRL := &ratelimit.Transport{Base: toHost, Limiter: allTally.Wrap(ratelimit.NewTokenBucket(40, 8))}
			budget := retry.NewBudget(0.5, 5)
			policy := retry.Policy{MaxAttempts: 3, InitialDelay: 50 * time.Millisecond, Budget: budget}
			if seed%2 == 1 {
				policy.AttemptTimeout = 200 * time.Millisecond
			}
			client := &http.Client{Transport: &retry.Transport{Base: allRL, Policy: policy,
				Hedge: &retry.Hedge{Delay: 80 * time.Millisecond, Budget: budget}}}

			var wg sync.WaitGroup
			var rmu sync.Mutex
			rnd := func(n int) int { rmu.Lock(); defer rmu.Unlock(); return rng.IntN(n) }
			for w := range 6 {
				wg.Go(func() {
					for i := range 8 {
						host := "h" + strconv.Itoa((w+i)%3) + ".example"
						var ctx context.Context
						var stop func()
						switch rnd(3) {
						case 0:
							c, cancel := context.WithTimeout(context.Background(), time.Duration(50+rnd(3000))*time.Millisecond)
							ctx, stop = c, cancel
						case 1:
							c, cancel := context.WithCancel(context.Background())
							tm := time.AfterFunc(time.Duration(rnd(2000))*time.Millisecond, cancel)
							ctx, stop = c, func() { tm.Stop(); cancel() }
						default:
							c, cancel := context.WithCancelCause(context.Background())
							tm := time.AfterFunc(time.Duration(rnd(2000))*time.Millisecond, func() { cancel(errors.New("caller shut down")) })
							ctx, stop = c, func() { tm.Stop(); cancel(nil) }
						}
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/x", nil)
						resp, err := client.Do(req)
						if err == nil {
							switch rnd(3) {
							case 0:
								_, _ = io.Copy(io.Discard, resp.Body)
							case 1:
								_, _ = resp.Body.Read(make([]byte, 1))
							}
							_ = resp.Body.Close()
						}
						stop()
					}
				})
			}
			wg.Wait()
			synctest.Wait() // the hedges' losers end

			svc.mu.Lock()
			for i, b := range svc.bodies {
				if n := b.closed.Load(); n != 1 {
					t.Errorf("body %d closed %d times, want 1", i, n)
				}
			}
			svc.mu.Unlock()
			if n := lim.InFlight(); n != 0 {
				t.Errorf("adaptive InFlight = %d after everything returned, want 0", n)
			}
			if c := allTally.Counts(); c.Waited != toHost.calls.Load() {
				t.Errorf("global Tally %+v: Waited should be the %d requests it let through", c, toHost.calls.Load())
			}
			if c := hostTally.Counts(); c.Waited != toAdaptive.calls.Load() {
				t.Errorf("per-host Tally %+v: Waited should be the %d requests it let through", c, toAdaptive.calls.Load())
			}
			var total breaker.Counts
			for h := range 3 {
				if b := br.Breaker("h" + strconv.Itoa(h) + ".example"); b != nil {
					m := b.Metrics().Total
					total.Requests += m.Requests
					total.Successes += m.Successes
					total.Failures += m.Failures
					total.Ignored += m.Ignored
				}
			}
			if total.Requests != toSvc.calls.Load() || total.Requests != total.Successes+total.Failures+total.Ignored {
				t.Errorf("breakers' Total %+v: Requests should be the %d requests they let through", total, toSvc.calls.Load())
			}
			t.Logf("seed %d: service %d calls, global %+v, per host %+v", seed, svc.calls.Load(), allTally.Counts(), hostTally.Counts())

			// The service is well again: after an open time, each host's
			// breaker lets a request through, and closes.
			svc.good.Store(true)
			time.Sleep(2 * time.Second)
			for h := range 3 {
				host := "h" + strconv.Itoa(h) + ".example"
				for range 3 {
					req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/x", nil)
					resp, err := client.Do(req)
					if err != nil {
						t.Errorf("%s once well: %v", host, err)
						continue
					}
					_ = resp.Body.Close()
				}
				if b := br.Breaker(host); b != nil && b.State() != breaker.Closed {
					t.Errorf("%s's breaker %v once well, want closed: %+v", host, b.State(), b.Metrics())
				}
			}
		})
	}
}
