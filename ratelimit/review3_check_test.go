package ratelimit

import (
	"net/http"
	"testing"
)

// review3Panics runs f and returns its panic value, or nil.
func review3Panics(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestReview3TransportCheckMissesZeroLimiter: Check promises to return the
// mistake RoundTrip would panic with, or nil. A Transport whose Limiter (or
// PerHost) is the zero value of a limiter of this package passes Check, then
// panics at the first request. The configuration rule says Check must report
// an error exactly when first use panics.
func TestReview3TransportCheckMissesZeroLimiter(t *testing.T) {
	for name, tr := range map[string]*Transport{
		"zero TokenBucket":          {Limiter: &TokenBucket{}},
		"zero SlidingWindow":        {Limiter: &SlidingWindow{}},
		"zero SlidingWindowCounter": {Limiter: &SlidingWindowCounter{}},
		"zero Combined":             {Limiter: &Combined{}},
		"zero Keyed":                {PerHost: &Keyed[string, *TokenBucket]{}},
	} {
		t.Run(name, func(t *testing.T) {
			checkErr := tr.Check()
			req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
			p := review3Panics(func() { _, _ = tr.RoundTrip(req) })
			if (checkErr != nil) != (p != nil) {
				t.Fatalf("Check() = %v, but RoundTrip panicked with %v", checkErr, p)
			}
		})
	}
}

// TestMiddlewareRefusesZeroLimiter: Middleware panics where it is built,
// not at the first request, on a zero limiter of this package.
func TestMiddlewareRefusesZeroLimiter(t *testing.T) {
	for name, kt := range map[string]KeyTaker{
		"Global(zero TokenBucket)": Global(&TokenBucket{}),
		"Global(zero Combined)":    Global(&Combined{}),
		"zero Keyed":               &Keyed[string, *TokenBucket]{},
	} {
		if p := review3Panics(func() { Middleware(kt, MiddlewareConfig{}) }); p == nil {
			t.Errorf("%s: Middleware did not panic", name)
		}
	}
}
