package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// A TokenBucket allows a burst, then a steady rate.
func ExampleTokenBucket() {
	b := ratelimit.NewTokenBucket(10, 3) // 10 per second, bursts of 3
	for range 4 {
		fmt.Println(b.Allow())
	}
	// Output:
	// true
	// true
	// true
	// false
}

// WaitN waits its turn; a wait that cannot end before the deadline fails at
// once instead of sleeping until it.
func ExampleNewTokenBucket() {
	b := ratelimit.NewTokenBucket(1, 1) // one per second
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fmt.Println(b.Wait(ctx))
	fmt.Println(b.Wait(ctx))
	// Output:
	// <nil>
	// ratelimit: wait would exceed the context deadline: context deadline exceeded
}

// ValidateTokenBucket checks a rate and burst read from configuration,
// which NewTokenBucket would panic on.
func ExampleValidateTokenBucket() {
	for _, c := range []struct {
		rate  float64
		burst int
	}{{100, 10}, {0, 10}, {1e-12, 1}} {
		fmt.Println(ratelimit.ValidateTokenBucket(c.rate, c.burst))
	}
	// Output:
	// <nil>
	// ratelimit: rate 0; the rate must be above 0
	// ratelimit: rate 1e-12 and burst 1: refilling would take over four years
}

// Take explains a decision: what remains, and when to come back.
func ExampleTokenBucket_Take() {
	b := ratelimit.NewTokenBucket(1, 5)
	d := b.Take(4)
	fmt.Println(d.Allowed, d.Remaining, d.Limit)
	d = b.Take(3)
	fmt.Println(d.Allowed, d.Remaining, d.RetryAfter.Round(time.Second))
	// Output:
	// true 1 5
	// false 1 2s
}

// A SlidingWindow holds a limit exactly, in every interval: here, 3 calls per
// minute to an API with such a quota.
func ExampleSlidingWindow() {
	quota := ratelimit.NewSlidingWindow(3, time.Minute)
	for i := range 4 {
		fmt.Println("call", i, quota.Allow())
	}
	// Output:
	// call 0 true
	// call 1 true
	// call 2 true
	// call 3 false
}

func ExampleNewSlidingWindow() {
	w := ratelimit.NewSlidingWindow(100, time.Hour)
	fmt.Println(w.AllowN(60), w.AllowN(60), w.AllowN(40))
	// Output: true false true
}

// A SlidingWindowCounter approximates a sliding window in constant memory.
func ExampleSlidingWindowCounter() {
	c := ratelimit.NewSlidingWindowCounter(2, time.Second)
	fmt.Println(c.Allow(), c.Allow(), c.Allow())
	// Output: true true false
}

func ExampleNewSlidingWindowCounter() {
	c := ratelimit.NewSlidingWindowCounter(1000, time.Minute)
	d := c.Take(10)
	fmt.Println(d.Allowed, d.Remaining, d.Window)
	// Output: true 990 1m0s
}

// Keyed gives each key its own limiter: one client's burst does not limit
// another.
func ExampleKeyed() {
	perUser := ratelimit.NewKeyed(func(user string) *ratelimit.TokenBucket {
		return ratelimit.NewTokenBucket(1, 2)
	}, ratelimit.KeyedConfig{})
	fmt.Println(perUser.Allow("alice"), perUser.Allow("alice"), perUser.Allow("alice"))
	fmt.Println(perUser.Allow("bob"))
	// Output:
	// true true false
	// true
}

// The options bound the memory: idle keys are evicted, and the number of keys
// is capped.
func ExampleNewKeyed() {
	perDomain := ratelimit.NewKeyed(func(domain string) *ratelimit.SlidingWindow {
		return ratelimit.NewSlidingWindow(10, time.Second)
	}, ratelimit.KeyedConfig{TTL: 5 * time.Minute, MaxKeys: 10_000})
	fmt.Println(perDomain.Allow("example.com"), perDomain.Len())
	// Output: true 1
}

// Middleware limits each client of an HTTP server, and tells it so in the
// response headers.
func ExampleMiddleware() {
	perClient := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
		return ratelimit.NewTokenBucket(1, 2)
	}, ratelimit.KeyedConfig{})
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") })
	h := ratelimit.Middleware(perClient, ratelimit.MiddlewareConfig{})(hello)

	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil) // from 192.0.2.1
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("RateLimit"))
		if retry := w.Header().Get("Retry-After"); retry != "" {
			fmt.Println("Retry-After:", retry)
		}
	}
	// Output:
	// 200 "default";r=1;t=1
	// 200 "default";r=0;t=2
	// 429 "default";r=0;t=2
	// Retry-After: 1
}

// Global shares one limit among all clients.
func ExampleGlobal() {
	h := ratelimit.Middleware(ratelimit.Global(ratelimit.NewTokenBucket(1, 1)),
		ratelimit.MiddlewareConfig{})(http.NotFoundHandler())
	for _, addr := range []string{"192.0.2.1:1", "198.51.100.7:1"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(addr, w.Code)
	}
	// Output:
	// 192.0.2.1:1 404
	// 198.51.100.7:1 429
}

// Code that takes a Limiter works with every limiter of the package.
func ExampleLimiter() {
	send := func(l ratelimit.Limiter, batch int) bool { return l.AllowN(batch) }
	fmt.Println(send(ratelimit.NewTokenBucket(100, 50), 20))
	fmt.Println(send(ratelimit.NewSlidingWindow(10, time.Second), 20))
	// Output:
	// true
	// false
}

// A Decision tells a caller what to tell its own callers: how many events
// are left, when to come back, when the allowance is whole again.
func ExampleDecision() {
	b := ratelimit.NewTokenBucket(1.0/60, 4) // one a minute, bursts of 4
	b.AllowN(4)
	d := b.Take(1)
	fmt.Println(d.Allowed, d.Limit, d.Window, d.Remaining,
		d.RetryAfter.Round(time.Second), d.ResetAfter.Round(time.Second))
	// Output: false 4 4m0s 0 1m0s 4m0s
}

// Code that needs the details of decisions takes a Taker, which every limiter
// of the package is.
func ExampleTaker() {
	report := func(t ratelimit.Taker) {
		d := t.Take(1)
		fmt.Println(d.Allowed, d.Remaining)
	}
	report(ratelimit.NewTokenBucket(1, 3))
	report(ratelimit.NewSlidingWindow(3, time.Minute))
	// Output:
	// true 2
	// true 2
}

// The middleware takes a KeyTaker: a Keyed limiter (a limit per client), or
// Global of one limiter (one limit for all).
func ExampleKeyTaker() {
	perClient := ratelimit.NewKeyed(func(string) *ratelimit.SlidingWindow {
		return ratelimit.NewSlidingWindow(1, time.Minute)
	}, ratelimit.KeyedConfig{})
	for _, kt := range []ratelimit.KeyTaker{perClient, ratelimit.Global(ratelimit.NewSlidingWindow(1, time.Minute))} {
		fmt.Println(kt.Take("alice", 1).Allowed, kt.Take("bob", 1).Allowed)
	}
	// Output:
	// true true
	// true false
}

// KeyedConfig bound the memory a Keyed may use: here one key at most, so a
// new key evicts the one before, which starts over when it comes back.
func ExampleKeyedConfig() {
	k := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
		return ratelimit.NewTokenBucket(1.0/60, 1) // one a minute
	}, ratelimit.KeyedConfig{MaxKeys: 1, TTL: time.Hour})
	fmt.Println(k.Allow("a"), k.Allow("a"))
	fmt.Println(k.Allow("b"), k.Len())
	fmt.Println(k.Allow("a"))
	// Output:
	// true false
	// true 1
	// true
}

// MiddlewareConfig keys requests by API key rather than address, and makes
// some requests cost more than others.
func ExampleMiddlewareConfig() {
	perKey := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
		return ratelimit.NewTokenBucket(1, 10)
	}, ratelimit.KeyedConfig{})
	h := ratelimit.Middleware(perKey, ratelimit.MiddlewareConfig{
		Key: func(r *http.Request) string { return r.Header.Get("X-API-Key") },
		Cost: func(r *http.Request) int {
			if r.Method == http.MethodPost {
				return 4 // writes cost more
			}
			return 1
		},
		Policy: "api",
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, method := range []string{http.MethodPost, http.MethodPost, http.MethodGet, http.MethodPost} {
		r := httptest.NewRequest(method, "/", nil)
		r.Header.Set("X-API-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(method, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// POST 200 "api";r=6;t=4
	// POST 200 "api";r=2;t=8
	// GET 200 "api";r=1;t=9
	// POST 429 "api";r=1;t=9
}
