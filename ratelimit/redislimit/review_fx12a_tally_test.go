package redislimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Seams that hold: a Tally around Handles counts each request through
// ratelimit.Middleware (under Global, or a Keyed of Handles) and
// ratelimit.Transport (its Limiter, or a PerHost Keyed of Handles) exactly
// once: a decision for a Middleware's request, a wait for a Transport's;
// with Redis up, down under each Policy, and with the request's ctx ending
// during the round trip, when a Middleware's request has no decision and
// counts nothing, and a Transport's is one failed wait. A Middleware's
// request cancelled before its decision runs no handler and gets nothing
// written.
func TestFx12aTallyCountsEachRequestOnce(t *testing.T) {
	type path struct {
		name      string
		transport bool
		// build returns a handler or a client over l, counted by tally.
		mw func(l *Limiter, tally *ratelimit.Tally) ratelimit.KeyTaker
		tr func(l *Limiter, tally *ratelimit.Tally) *ratelimit.Transport
	}
	paths := []path{
		{name: "Middleware/Global", mw: func(l *Limiter, tally *ratelimit.Tally) ratelimit.KeyTaker {
			return ratelimit.Global(tally.Wrap(l.For("k")))
		}},
		{name: "Middleware/Keyed", mw: func(l *Limiter, tally *ratelimit.Tally) ratelimit.KeyTaker {
			return ratelimit.NewKeyed(func(k string) ratelimit.Taker { return tally.Wrap(l.For(k)) }, ratelimit.KeyedConfig{})
		}},
		{name: "Transport/Limiter", transport: true, tr: func(l *Limiter, tally *ratelimit.Tally) *ratelimit.Transport {
			return &ratelimit.Transport{Limiter: tally.Wrap(l.For("k"))}
		}},
		{name: "Transport/PerHost", transport: true, tr: func(l *Limiter, tally *ratelimit.Tally) *ratelimit.Transport {
			return &ratelimit.Transport{PerHost: ratelimit.NewKeyed(func(k string) ratelimit.Limiter {
				return tally.Wrap(l.For(k))
			}, ratelimit.KeyedConfig{})}
		}},
	}
	addr := requireRealRedis(t)
	down := "127.0.0.1:" + strconv.Itoa(freePort(t)) // nothing listens there
	total := func(c ratelimit.TallyCounts) int64 { return c.Allowed + c.Refused + c.Waited + c.WaitFailed }

	// serve sends one request through p over l with ctx, and returns
	// whether it reached the handler (or Base), and the status written (0:
	// none) for a Middleware's.
	serve := func(t *testing.T, p path, l *Limiter, tally *ratelimit.Tally, ctx context.Context) (reached bool, status int) {
		if p.transport {
			tr := p.tr(l, tally)
			tr.Base = rtFunc(func(req *http.Request) (*http.Response, error) {
				reached = true
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://k/", nil)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
			return reached, 0
		}
		h := ratelimit.Middleware(p.mw(l, tally), ratelimit.MiddlewareConfig{Key: func(*http.Request) string { return "k" }})(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
		w := &wroteWriter{ResponseRecorder: httptest.NewRecorder()}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		return reached, w.wrote
	}

	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			t.Run("up", func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 1, Prefix: "fx12a" + strconv.FormatInt(prefixes.Add(1), 10) + ":"})
				tally := new(ratelimit.Tally)
				for i := range 2 {
					// The second is refused (Middleware) or its wait of
					// 1000s exceeds its deadline (Transport).
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					reached, _ := serve(t, p, l, tally, ctx)
					cancel()
					require.Equal(t, i == 0, reached, "request %d reached the handler", i)
					require.Equal(t, int64(i+1), total(tally.Counts()), "counts %+v after %d requests", tally.Counts(), i+1)
				}
			})
			for _, policy := range []Policy{FailOpen, FailClosed, FailLocal} {
				t.Run("down/"+policy.String(), func(t *testing.T) {
					c := redis.NewClient(&redis.Options{Addr: down, MaxRetries: -1, DialTimeout: time.Second})
					t.Cleanup(func() { _ = c.Close() })
					// The Timeout alone ends each call: no ctx deadline
					// races with it. FailClosed's WaitN waits for Redis
					// until its ctx ends: ended at the first failure.
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, Policy: policy, Timeout: 20 * time.Millisecond,
						OnError: func(string, error) {
							if p.transport && policy == FailClosed {
								cancel()
							}
						}})
					tally := new(ratelimit.Tally)
					reached, _ := serve(t, p, l, tally, ctx)
					require.Equal(t, policy != FailClosed, reached, "reached the handler")
					require.Equal(t, int64(1), total(tally.Counts()), "counts %+v", tally.Counts())
				})
			}
			t.Run("ctx ends in the round trip", func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				g := newGate(c)
				l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, Timeout: time.Hour, Prefix: "fx12a" + strconv.FormatInt(prefixes.Add(1), 10) + ":"})
				tally := new(ratelimit.Tally)
				ctx, cancel := context.WithCancel(context.Background())
				type result struct {
					reached bool
					status  int
				}
				done := make(chan result)
				go func() {
					reached, status := serve(t, p, l, tally, ctx)
					done <- result{reached, status}
				}()
				require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 10*time.Second, time.Millisecond,
					"the round trip never reached Redis")
				cancel()
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second): // a bound on a failure, not a timing
					close(g.open)
					<-done
					t.Fatal("the request waited for Redis after its ctx ended")
				}
				close(g.open)
				require.False(t, r.reached, "reached the handler")
				require.Zero(t, r.status, "status written")
				want := ratelimit.TallyCounts{}
				if p.transport {
					want.WaitFailed = 1
				}
				require.Equal(t, want, tally.Counts())
			})
		})
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
