package ratelimit

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// panicOf returns what f panics with, or nil.
func panicOf(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestValidateAgreesWithConstructors: for each config or argument that a
// constructor refuses, its Validate returns the complaint it panics with;
// for one it takes, nil.
func TestValidateAgreesWithConstructors(t *testing.T) {
	check := func(name string, err error, make func()) {
		t.Helper()
		r := panicOf(make)
		switch {
		case err == nil && r != nil:
			t.Errorf("%s: Validate = nil, but the constructor panicked with %v", name, r)
		case err != nil && r == nil:
			t.Errorf("%s: Validate = %v, but the constructor took it", name, err)
		case err != nil && (r != err.Error() || !strings.HasPrefix(err.Error(), "ratelimit: ")):
			t.Errorf("%s: Validate = %q, constructor panicked with %v", name, err, r)
		}
	}
	for _, w := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Second}, {-1, time.Second}, {1, 0}, {1, -1}, {1, math.MinInt64}, {maxWindowLimit + 1, time.Second},
		{1, 1}, {maxWindowLimit, math.MaxInt64}} {
		check("SlidingWindow", ValidateSlidingWindow(w.limit, w.window), func() { NewSlidingWindow(w.limit, w.window) })
		check("SlidingWindowCounter", ValidateSlidingWindowCounter(w.limit, w.window), func() { NewSlidingWindowCounter(w.limit, w.window) })
	}
	newTB := func(string) *TokenBucket { return NewTokenBucket(1, 1) }
	for _, c := range []KeyedConfig{{}, {TTL: -1}, {MaxKeys: -1}, {TTL: math.MaxInt64, MaxKeys: math.MaxInt}} {
		check("KeyedConfig", c.Validate(), func() { NewKeyed(newTB, c) })
	}
	k := NewKeyed(newTB, KeyedConfig{})
	for _, c := range []MiddlewareConfig{{}, {TrustedHops: -1}, {IPv6Prefix: -1}, {IPv6Prefix: 129}, {IPv6Prefix: 128, TrustedHops: math.MaxInt}} {
		check("MiddlewareConfig", c.Validate(), func() { Middleware(k, c)(http.NotFoundHandler()) })
	}
}
