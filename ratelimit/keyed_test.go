package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func newBuckets(rate float64, burst int, opts KeyedConfig) *Keyed[string, *TokenBucket] {
	return NewKeyed(func(string) *TokenBucket { return NewTokenBucket(rate, burst) }, opts)
}

func TestKeyedIndependentKeys(t *testing.T) {
	k := newBuckets(1, 2, KeyedConfig{})
	require.True(t, k.AllowN("alice", 2))
	require.False(t, k.Allow("alice"))
	require.True(t, k.Allow("bob"), "one key's use limited another")
	require.Same(t, k.Get("alice"), k.Get("alice"))
	require.NotSame(t, k.Get("alice"), k.Get("bob"))
	require.Equal(t, 2, k.Len())
	require.False(t, k.Take("alice", 1).Allowed)
	require.True(t, k.Limiter("carol").AllowN(2))
	require.False(t, k.Limiter("carol").AllowN(1))
	require.NoError(t, k.WaitN(context.Background(), "dave", 1))
}

func TestKeyedEvictsIdleKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := map[string]int{}
		k := NewKeyed(func(key string) *TokenBucket {
			made[key]++ // only from this goroutine here
			return NewTokenBucket(1, 1)
		}, KeyedConfig{TTL: time.Minute})
		for i := range 100 {
			k.Allow(fmt.Sprint("old-", i))
		}
		require.Equal(t, 100, k.Len())
		time.Sleep(2 * time.Minute)
		// New keys arriving sweep the idle ones away, a sample at a time.
		for i := range 2000 {
			k.Allow(fmt.Sprint("new-", i))
		}
		require.LessOrEqual(t, k.Len()-2000, 5, "idle keys were not evicted")

		// A key in use is never evicted for age, however many keys churn:
		// new keys every round, so that insertions keep sampling the shards.
		for round := range 10 {
			require.True(t, k.Allow("active"))
			time.Sleep(30 * time.Second) // less than the TTL, then more in all
			for i := range 200 {
				k.Allow(fmt.Sprint("churn-", round, "-", i))
			}
		}
		require.Equal(t, 1, made["active"], "an active key was evicted")
	})
}

// TestKeyedSparesKeysWithWaiters: a key whose WaitN goroutines wait longer
// than the TTL is in use. Evicting it would give newcomers a fresh limiter,
// with a fresh allowance, while the waiters still queue on the old one.
func TestKeyedSparesKeysWithWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := map[string]int{}
		// One event a minute. made is written from this goroutine alone:
		// the key exists before the waiters start.
		k := NewKeyed(func(key string) *TokenBucket {
			made[key]++
			return NewTokenBucket(1.0/60, 1)
		}, KeyedConfig{TTL: time.Minute, MaxKeys: 64})
		require.True(t, k.Allow("busy"))
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { assert.NoError(t, k.WaitN(t.Context(), "busy", 1)) })
		}
		synctest.Wait()
		time.Sleep(90 * time.Second) // past the TTL; two still wait
		// New keys fill every shard to its cap and sample the rest.
		for i := range 2000 {
			k.Allow(fmt.Sprint("new-", i))
		}
		assert.False(t, k.Allow("busy"), "a fresh limiter let a newcomer past the waiters")
		wg.Wait()
		require.Equal(t, 1, made["busy"])

		// Once its waiters are done, it is idle again from when the last left.
		time.Sleep(2 * time.Minute)
		for i := range 2000 {
			k.Allow(fmt.Sprint("newer-", i))
		}
		require.True(t, k.Allow("busy"))
		require.Equal(t, 2, made["busy"], "an idle key was kept")
	})
}

// TestKeyedWaitersLeave: a WaitN that fails, at once or when its ctx ends,
// no longer counts the key as in use.
func TestKeyedWaitersLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1.0/60, 1) }, KeyedConfig{})
		require.True(t, k.Allow("k"))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- k.WaitN(ctx, "k", 1) }()
		synctest.Wait()
		e, _ := k.entry("k", false, "ratelimit: Keyed.Get")
		require.Equal(t, int32(1), e.waiting.Load())
		cancel()
		require.Equal(t, context.Canceled, <-done)
		require.Equal(t, ErrExceedsBurst, k.WaitN(t.Context(), "k", 2))
		require.Zero(t, e.waiting.Load())
	})
}

// TestKeyedCap: rotating keys fill it up to MaxKeys and never past it, also
// when MaxKeys is below the number of shards or not a multiple of it.
func TestKeyedCap(t *testing.T) {
	for _, max := range []int{1, 2, 10, 63, 64, 100, 640, 1000} {
		t.Run(strconv.Itoa(max), func(t *testing.T) {
			k := newBuckets(1, 1, KeyedConfig{MaxKeys: max})
			for i := range 50_000 {
				k.Allow(strconv.Itoa(i))
				if i%1000 == 0 {
					require.LessOrEqual(t, k.Len(), max)
				}
			}
			// Every shard is full by now, and the shards' caps add up.
			require.Equal(t, max, k.Len())
		})
	}
}

func TestKeyedNotTaker(t *testing.T) {
	k := NewKeyed(func(string) Limiter { return plainLimiter{} }, KeyedConfig{})
	require.Equal(t, Decision{Allowed: true, Remaining: -1}, k.Take("x", 1))
	require.True(t, k.AllowN("x", 1))
}

type plainLimiter struct{}

func (plainLimiter) AllowN(int) bool                     { return true }
func (plainLimiter) WaitN(context.Context, int) error    { return nil }
func (plainLimiter) AllowNAt(int, time.Time) bool        { panic("not called") }
func (plainLimiter) Take(int) (d Decision, unused error) { return } // not a Taker: wrong type

func TestKeyedMisuse(t *testing.T) {
	require.PanicsWithValue(t, "ratelimit: NewKeyed with nil newLimiter", func() {
		NewKeyed[string, *TokenBucket](nil, KeyedConfig{})
	})
	require.Panics(t, func() { newBuckets(1, 1, KeyedConfig{TTL: -1}) })
	require.Panics(t, func() { newBuckets(1, 1, KeyedConfig{MaxKeys: -1}) })
	k := newBuckets(1, 1, KeyedConfig{})
	require.PanicsWithValue(t, "ratelimit: Keyed.AllowN with n = 0; n must be at least 1", func() { k.AllowN("a", 0) })
	require.PanicsWithValue(t, "ratelimit: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = k.WaitN(nil, "a", 1)
	})
}

// TestHammerKeyed: many goroutines on overlapping keys; no key over-issues.
func TestHammerKeyed(t *testing.T) {
	const burst = 3
	k := newBuckets(1e-3, burst, KeyedConfig{}) // no refill to speak of
	counts := make([]atomic.Int64, 50)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for range testutil.HammerRounds(2000) {
				i := r.IntN(len(counts))
				if k.Allow(strconv.Itoa(i)) {
					counts[i].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for i := range counts {
		require.LessOrEqual(t, counts[i].Load(), int64(burst), "key %d over-issued", i)
	}
}

func get(t *testing.T, h http.Handler, remote string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remote
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })

func TestMiddlewareHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newBuckets(1, 2, KeyedConfig{}) // refills in 2s
		h := Middleware(k, MiddlewareConfig{})(okHandler)

		w := get(t, h, "192.0.2.1:1234", nil)
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, "ok", w.Body.String())
		require.Equal(t, `"default";q=2;w=2`, w.Header().Get("RateLimit-Policy"))
		require.Equal(t, `"default";r=1;t=1`, w.Header().Get("RateLimit"))
		require.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"))
		require.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
		require.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"))
		require.Empty(t, w.Header().Get("Retry-After"))

		require.Equal(t, http.StatusOK, get(t, h, "192.0.2.1:1234", nil).Code)
		w = get(t, h, "192.0.2.1:5678", nil) // same client, another port
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		require.Equal(t, "1", w.Header().Get("Retry-After"))
		require.Equal(t, `"default";r=0;t=2`, w.Header().Get("RateLimit"))
		require.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))

		require.Equal(t, http.StatusOK, get(t, h, "192.0.2.2:1", nil).Code, "another client")

		time.Sleep(time.Second)
		require.Equal(t, http.StatusOK, get(t, h, "192.0.2.1:1234", nil).Code)
	})
}

func TestMiddlewareProxyHeader(t *testing.T) {
	k := newBuckets(1e-3, 1, KeyedConfig{})
	plain := Middleware(k, MiddlewareConfig{})(okHandler)
	// By default a client cannot pick its key with a header.
	require.Equal(t, http.StatusOK, get(t, plain, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.1"}).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, plain, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.2"}).Code)

	k2 := newBuckets(1e-3, 1, KeyedConfig{})
	behindProxy := Middleware(k2, MiddlewareConfig{TrustedProxyHeader: "X-Forwarded-For"})(okHandler)
	// The client's address is the last one, which our proxy appended.
	xff := map[string]string{"X-Forwarded-For": "198.51.100.9, 203.0.113.1"}
	require.Equal(t, http.StatusOK, get(t, behindProxy, "10.0.0.1:1", xff).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, behindProxy, "10.0.0.2:1", xff).Code, "same client behind another proxy node")
	spoofed := map[string]string{"X-Forwarded-For": "198.51.100.10, 203.0.113.1"}
	require.Equal(t, http.StatusTooManyRequests, get(t, behindProxy, "10.0.0.1:1", spoofed).Code, "a spoofed first entry changed the key")
	require.Equal(t, http.StatusOK, get(t, behindProxy, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.2"}).Code)

	k3 := newBuckets(1e-3, 1, KeyedConfig{})
	twoHops := Middleware(k3, MiddlewareConfig{TrustedProxyHeader: "X-Forwarded-For", TrustedHops: 2})(okHandler)
	require.Equal(t, http.StatusOK, get(t, twoHops, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.5, 10.1.1.1"}).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, twoHops, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.5, 10.1.1.2"}).Code)
	// A request that reached the inner proxy without the outer one carries
	// fewer entries than TrustedHops, every one appended by a trusted proxy:
	// the first is the client's, not the peer's (which would key every such
	// client as one).
	require.Equal(t, http.StatusOK, get(t, twoHops, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.6"}).Code)
	require.Equal(t, http.StatusOK, get(t, twoHops, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "203.0.113.7"}).Code, "two clients through the inner proxy alone shared a key")
	require.Equal(t, http.StatusTooManyRequests, get(t, twoHops, "10.0.0.2:1", map[string]string{"X-Forwarded-For": "203.0.113.7"}).Code)

	k4 := newBuckets(1e-3, 1, KeyedConfig{})
	realIP := Middleware(k4, MiddlewareConfig{TrustedProxyHeader: "X-Real-IP"})(okHandler)
	require.Equal(t, http.StatusOK, get(t, realIP, "10.0.0.1:1", map[string]string{"X-Real-IP": "2001:db8::1"}).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, realIP, "10.0.0.9:1", map[string]string{"X-Real-IP": "2001:db8::1"}).Code)
	// A header that is not an address falls back to the peer.
	require.Equal(t, http.StatusOK, get(t, realIP, "10.0.0.1:1", map[string]string{"X-Real-IP": "nonsense"}).Code)
}

// TestMiddlewareIPv6Prefix: by default an IPv6 client is keyed by its /64,
// which it can rotate through at will; IPv6Prefix changes the length.
func TestMiddlewareIPv6Prefix(t *testing.T) {
	const ok, limited = http.StatusOK, http.StatusTooManyRequests
	for _, tc := range []struct {
		prefix int
		peers  []string // one request each, in order
		want   []int
	}{
		{0, []string{"[2001:db8:1:2::1]:1", "[2001:db8:1:2::ffff]:1", "[2001:db8:1:3::1]:1"}, []int{ok, limited, ok}},
		{48, []string{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1", "[2001:db8:2::1]:1"}, []int{ok, limited, ok}},
		{128, []string{"[2001:db8:1:2::1]:1", "[2001:db8:1:2::2]:1", "[2001:db8:1:2::1]:1"}, []int{ok, ok, limited}},
		// Link-local zones do not make new keys.
		{0, []string{"[fe80::1%eth0]:1", "[fe80::2%eth1]:1"}, []int{ok, limited}},
		// IPv4, also mapped into IPv6, is keyed whole.
		{0, []string{"192.0.2.1:1", "[::ffff:192.0.2.1]:2", "192.0.2.2:1"}, []int{ok, limited, ok}},
		// A peer that is not an address is keyed as it is.
		{0, []string{"pipe", "pipe", "@"}, []int{ok, limited, ok}},
	} {
		h := Middleware(newBuckets(1e-3, 1, KeyedConfig{}), MiddlewareConfig{IPv6Prefix: tc.prefix})(okHandler)
		for i, peer := range tc.peers {
			require.Equal(t, tc.want[i], get(t, h, peer, nil).Code, "prefix %d, request %d from %s", tc.prefix, i, peer)
		}
	}
	// The prefix applies to an address read from a trusted header too.
	h := Middleware(newBuckets(1e-3, 1, KeyedConfig{}), MiddlewareConfig{TrustedProxyHeader: "X-Real-IP"})(okHandler)
	require.Equal(t, ok, get(t, h, "10.0.0.1:1", map[string]string{"X-Real-IP": "2001:db8::1"}).Code)
	require.Equal(t, limited, get(t, h, "10.0.0.1:1", map[string]string{"X-Real-IP": "2001:db8::2"}).Code)

	for _, bad := range []int{-1, 129} {
		require.PanicsWithValue(t, fmt.Sprintf("ratelimit: Middleware with IPv6Prefix %d; it must be between 0 and 128", bad), func() {
			Middleware(Global(NewTokenBucket(1, 1)), MiddlewareConfig{IPv6Prefix: bad})
		})
	}
}

func TestMiddlewareOptions(t *testing.T) {
	var limited atomic.Int32
	k := newBuckets(1e-3, 5, KeyedConfig{})
	h := Middleware(k, MiddlewareConfig{
		Key:    func(r *http.Request) string { return r.Header.Get("API-Key") },
		Cost:   func(r *http.Request) int { return len(r.URL.Query()["item"]) },
		Policy: "per-key",
		OnLimited: func(w http.ResponseWriter, _ *http.Request, d Decision) {
			limited.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		},
	})(okHandler)
	req := func(items int) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/?"+repeat("item=x&", items), nil)
		r.Header.Set("API-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := req(3)
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, `"per-key";r=2;t=3000`, w.Header().Get("RateLimit"), "3 tokens at one per 1000s")
	w = req(3)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Equal(t, int32(1), limited.Load())
	w = req(6)
	require.Empty(t, w.Header().Get("Retry-After"), "a request above the limit can never pass")
	w = req(0)
	require.Equal(t, http.StatusOK, w.Code, "a request that costs nothing passes")
	require.Empty(t, w.Header().Get("RateLimit"))
	require.InDelta(t, 2, k.Get("k1").Tokens(), 0.01, "and takes nothing")

	g := Middleware(Global(NewTokenBucket(1e-3, 1)), MiddlewareConfig{})(okHandler)
	require.Equal(t, http.StatusOK, get(t, g, "192.0.2.1:1", nil).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, g, "192.0.2.2:1", nil).Code, "one limit for all")

	require.PanicsWithValue(t, "ratelimit: Middleware with nil limiter", func() { Middleware(nil, MiddlewareConfig{}) })
	require.PanicsWithValue(t, "ratelimit: Middleware with negative TrustedHops", func() {
		Middleware(k, MiddlewareConfig{TrustedHops: -1})
	})
	negative := Middleware(k, MiddlewareConfig{Cost: func(*http.Request) int { return -1 }})(okHandler)
	require.PanicsWithValue(t, "ratelimit: Middleware's Cost returned -1; it must be at least 0", func() {
		get(t, negative, "192.0.2.1:1", nil)
	})
}

// unknownRemaining is a KeyTaker that knows its limit but not what remains.
type unknownRemaining struct{}

func (unknownRemaining) Take(string, int) Decision {
	return Decision{Allowed: true, Limit: 5, Remaining: -1, ResetAfter: time.Second}
}

// TestMiddlewareUnknownRemaining: a limiter that cannot say what remains gets
// the headers it can fill, and none that would claim 0 or -1 remain.
func TestMiddlewareUnknownRemaining(t *testing.T) {
	h := Middleware(unknownRemaining{}, MiddlewareConfig{})(okHandler)
	w := get(t, h, "192.0.2.1:1", nil)
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "5", w.Header().Get("X-RateLimit-Limit"))
	require.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"))
	require.NotEmpty(t, w.Header().Get("RateLimit-Policy"))
	for _, name := range []string{"X-RateLimit-Remaining", "RateLimit"} {
		require.Empty(t, w.Header().Values(name), "%s set", name)
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestMiddlewareWithServer(t *testing.T) {
	h := Middleware(newBuckets(1e-3, 2, KeyedConfig{}), MiddlewareConfig{})(okHandler)
	srv := httptest.NewServer(h)
	defer srv.Close()
	codes := []int{}
	for range 3 {
		resp, err := http.Get(srv.URL)
		require.NoError(t, err)
		_ = resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 200, 429}, codes)
	srv.CloseClientConnections()
}

// countingBucket is a user's limiter that embeds a TokenBucket and counts
// the calls of its own AllowN and Take.
type countingBucket struct {
	*TokenBucket
	calls *atomic.Int64
}

func (c countingBucket) AllowN(n int) bool   { c.calls.Add(1); return c.TokenBucket.AllowN(n) }
func (c countingBucket) Take(n int) Decision { c.calls.Add(1); return c.TokenBucket.Take(n) }

// TestKeyedCallsEmbeddingLimiters: a limiter that embeds one of the package's
// has its unexported methods too; Keyed's shortcut for the package's own
// limiters called them, bypassing the user's AllowN and Take.
func TestKeyedCallsEmbeddingLimiters(t *testing.T) {
	var calls atomic.Int64
	k := NewKeyed(func(string) countingBucket { return countingBucket{NewTokenBucket(1, 2), &calls} }, KeyedConfig{})
	require.True(t, k.Allow("a"))
	require.True(t, k.Take("a", 1).Allowed)
	require.False(t, k.AllowN("a", 1))
	require.Equal(t, int64(3), calls.Load())
}
