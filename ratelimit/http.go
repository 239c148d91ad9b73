package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// A KeyTaker takes events for a key. *Keyed[string, L] is one, for any L; Global
// makes one of a single Taker.
type KeyTaker interface {
	Take(key string, n int) Decision
}

// Global returns a KeyTaker that ignores keys: one limit shared by every
// client. If t has a method TakeContext(ctx context.Context, n int)
// (Decision, error), as redislimit's Handle has, so has the KeyTaker (with a
// key it ignores), for Middleware to ask with the request's ctx.
//
// Global panics if t is nil, or a nil pointer.
func Global(t Taker) KeyTaker {
	if isNil(t) {
		panic("ratelimit: Global with nil Taker")
	}
	if ct, ok := t.(contextTakerOne); ok {
		return globalContext{global{t}, ct}
	}
	return global{t}
}

type global struct{ t Taker }

// globalContext is Global of a Taker with a TakeContext (redislimit's
// Handle): Middleware asks it with the request's ctx.
type globalContext struct {
	global
	ct contextTakerOne
}

func (g globalContext) TakeContext(ctx context.Context, _ string, n int) (Decision, error) {
	return g.ct.TakeContext(ctx, n)
}

func (g global) Take(_ string, n int) Decision { return g.t.Take(n) }

// wrapped returns g's limiter, for Middleware to check.
func (g global) wrapped() any { return g.t }

// MiddlewareConfig tunes Middleware. The zero value means the defaults.
type MiddlewareConfig struct {
	// Key returns the key a request is limited under. The default is the
	// client's IP address, or for IPv6 its /64: see TrustedProxyHeader and
	// IPv6Prefix. "" is a key like any other, for a Keyed and for
	// redislimit's Limiter alike: the requests given it share one limit. The
	// default Key gives it to a request with no peer address (a server on a
	// Unix socket): give such requests keys of your own if they must not
	// share one.
	Key func(r *http.Request) string

	// TrustedProxyHeader names a header that the default Key reads the
	// client's address from, such as "X-Forwarded-For" or "X-Real-IP". Leave
	// it empty unless the server sits behind proxies that set it: anyone can
	// send such a header, and trusting it directly lets a client pick its own
	// key. By default the Key is the address of the connection's peer.
	TrustedProxyHeader string

	// TrustedHops is how many proxies in front of the server append to
	// X-Forwarded-For; the client's address is the one the farthest of them
	// saw (the first entry, when a request came through fewer of them). 0
	// means 1. Ignored for other headers.
	TrustedHops int

	// IPv6Prefix is how many leading bits of a client's IPv6 address the
	// default Key keeps: 0 means 64. A subscriber commonly holds a whole /64
	// and can rotate through its addresses at will, so keying each address
	// on its own would let one client multiply its limit. 128 keys every
	// address on its own. IPv4 addresses are always keyed whole.
	IPv6Prefix int

	// Cost returns how many events a request counts for; the default is 1. A
	// request that costs 0 passes without being counted, and its response
	// carries no rate-limit headers. A negative cost is a bug: the
	// middleware panics.
	Cost func(r *http.Request) int

	// Policy names the limit in the RateLimit and RateLimit-Policy headers;
	// the default is "default".
	Policy string

	// OnLimited writes the response to a refused request, after the
	// rate-limit headers and Retry-After are set. The default writes status
	// 429 Too Many Requests with a short text body.
	OnLimited func(w http.ResponseWriter, r *http.Request, d Decision)
}

// Validate reports what is wrong with cfg, if anything: a negative
// TrustedHops, or an IPv6Prefix outside 0 to 128. Middleware panics with the
// same complaint; a program that reads a MiddlewareConfig from outside (a
// file, flags) can call Validate first.
func (cfg MiddlewareConfig) Validate() error {
	if cfg.TrustedHops < 0 {
		return errors.New("ratelimit: Middleware with negative TrustedHops")
	}
	if cfg.IPv6Prefix < 0 || cfg.IPv6Prefix > 128 {
		return fmt.Errorf("ratelimit: Middleware with IPv6Prefix %d; it must be between 0 and 128", cfg.IPv6Prefix)
	}
	return nil
}

// Middleware returns HTTP middleware that limits requests with limiter, under
// the key cfg.Key gives each request.
//
// Every response carries the rate-limit headers: those of the IETF draft
// (RateLimit-Policy and RateLimit, which name the limit, its quota q and window
// w, what remains r and the seconds t until it is full again), and the widely
// used X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (seconds
// until full again). A refused request gets status 429 and Retry-After, in
// seconds, unless the request costs more than the limit can ever allow. The
// seconds are rounded up; those of the window and of t forgive the limiter's
// rounding of a token's cost to its clock, so that a bucket of 3 a second,
// burst 3, states a window of 1 second, not 2.
//
// If limiter has a method TakeContext(ctx context.Context, key string, n
// int) (Decision, error), as redislimit's Limiter has (and Global of its
// Handle, see Global), Middleware calls it with the request's ctx rather
// than Take; so does a *Keyed for a key whose limiter has a method
// TakeContext(ctx, n) (a Handle, or a Tally's wrapper of one, which is how a
// Tally counts a redislimit's decisions per key): a decision that costs a round
// trip ends with the request, instead of holding the handler's goroutine for
// a client that has gone, or past the deadline the request carries. If it
// returns an error with the zero Decision, as redislimit's does when the
// request's ctx ends first, no decision was made: the request is neither
// allowed nor refused, neither the handler nor OnLimited runs, and it gets
// no rate-limit headers and no body. If the request's ctx was cancelled,
// which net/http does when the client has gone, nothing is written, as
// adaptive.Middleware does for a client gone while it waited, so that a
// middleware in front sees no status (adaptive.Middleware, which counts a
// 503 as overload, ignores the request); were the connection still there,
// net/http would end the response with its default, 200 and no body.
// Otherwise (its deadline passed, and its client may still be there; or the
// limiter failed without deciding) it gets 503 Service Unavailable. An
// error with a Decision (redislimit's Policy decided while Redis failed) is
// answered by the Decision.
// A type of the user's that embeds such a limiter gets its TakeContext
// too: if it has a Take of its own (to count decisions, say), it needs a
// TakeContext of its own as well, or Middleware goes around its Take.
//
// Middleware panics if limiter is nil (or a nil pointer), or if cfg is not
// valid (see MiddlewareConfig.Validate). It panics too if limiter is not
// usable, as Transport.Check tells of one: the zero value of a limiter of
// this package (also under Global, or in a Tally's wrapper), with a message
// that begins with "ratelimit:", or a limiter of another package whose
// method Check() error returns an error (redislimit's zero Limiter, or
// Global of its zero Handle), with that error's message.
func Middleware(limiter KeyTaker, cfg MiddlewareConfig) func(http.Handler) http.Handler {
	if isNil(limiter) {
		panic("ratelimit: Middleware with nil limiter")
	}
	if err := cfg.Validate(); err != nil {
		panic(err.Error())
	}
	// A limiter that is not usable would panic at the first request: panic
	// here, where the middleware is built, as for a bad cfg.
	if err := unusable(limiter); err != nil {
		panic(err.Error())
	}
	if cfg.Key == nil {
		hops, bits := max(1, cfg.TrustedHops), cfg.IPv6Prefix
		if bits == 0 {
			bits = 64
		}
		cfg.Key = func(r *http.Request) string { return clientKey(r, cfg.TrustedProxyHeader, hops, bits) }
	}
	if cfg.Policy == "" {
		cfg.Policy = "default"
	}
	if cfg.OnLimited == nil {
		cfg.OnLimited = func(w http.ResponseWriter, _ *http.Request, _ Decision) {
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		}
	}
	policy := strconv.Quote(cfg.Policy)
	ct, _ := limiter.(contextTaker)
	if k, ok := limiter.(keyedContextTaker); ok && ct == nil && k.keyed() == any(limiter) {
		// A *Keyed itself, not a type of the user's that embeds one and
		// may have a Take of its own: its keys' limiters may have a
		// TakeContext (redislimit's Handles, counted by a Tally).
		ct = keyedContext{k}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := 1
			if cfg.Cost != nil {
				n = cfg.Cost(r)
				if n <= 0 {
					if n < 0 {
						panic(fmt.Sprintf("ratelimit: Middleware's Cost returned %d; it must be at least 0", n))
					}
					next.ServeHTTP(w, r) // free: nothing to take
					return
				}
			}
			key := cfg.Key(r)
			var d Decision
			if ct != nil {
				var err error
				ctx := r.Context()
				if d, err = ct.TakeContext(ctx, key, n); err != nil && d == (Decision{}) {
					// Not a refusal: no 429, no Retry-After, nothing for
					// OnLimited (which a user may count refusals in). A
					// client that has gone gets nothing, which a
					// middleware in front reads as gone, not as overload.
					if !errors.Is(ctx.Err(), context.Canceled) {
						w.WriteHeader(http.StatusServiceUnavailable)
					}
					return
				}
			} else {
				d = limiter.Take(key, n)
			}
			writeHeaders(w.Header(), policy, d)
			if d.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			if d.RetryAfter >= 0 {
				w.Header().Set("Retry-After", strconv.FormatInt(seconds(d.RetryAfter), 10))
			}
			cfg.OnLimited(w, r, d)
		})
	}
}

// A contextTaker is a KeyTaker whose decision may wait (redislimit's
// Limiter: a round trip to Redis), and can give up when the request's ctx
// ends. Structural, so that this package need not know the module.
type contextTaker interface {
	TakeContext(ctx context.Context, key string, n int) (Decision, error)
}

// keyedContextTaker is a *Keyed[string, L]: Middleware asks it with the
// request's ctx, which it passes to a key's limiter that has TakeContext.
type keyedContextTaker interface {
	takeContext(ctx context.Context, key string, n int) (Decision, error)
	keyed() any
}

// keyedContext is a keyedContextTaker as a contextTaker.
type keyedContext struct{ k keyedContextTaker }

func (k keyedContext) TakeContext(ctx context.Context, key string, n int) (Decision, error) {
	return k.k.takeContext(ctx, key, n)
}

func writeHeaders(h http.Header, policy string, d Decision) {
	if d.Limit <= 0 {
		return // a limiter that does not say
	}
	limit := strconv.Itoa(d.Limit)
	reset := strconv.FormatInt(policySeconds(d.ResetAfter, d.Limit), 10)
	h.Set("RateLimit-Policy", policy+";q="+limit+";w="+strconv.FormatInt(policySeconds(d.Window, d.Limit), 10))
	h.Set("X-RateLimit-Limit", limit)
	h.Set("X-RateLimit-Reset", reset)
	if d.Remaining < 0 {
		return
	}
	remaining := strconv.Itoa(d.Remaining)
	h.Set("RateLimit", policy+";r="+remaining+";t="+reset)
	h.Set("X-RateLimit-Remaining", remaining)
}

// seconds rounds d up to whole seconds, as the headers count them.
func seconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

// policySeconds is seconds for the headers that state the policy, its window
// and when the limiter is full again: rounded up, but forgiving the rounding of
// the limiter's clock. A token costs a whole number of nanoseconds (of
// microseconds in redislimit), rounded up, so a bucket of 3 a second refills
// in 1.000000002s; rounded up in full, that would state a window of 2s, and a
// reset twice as far off as it is. Up to a microsecond per event of the limit
// is forgiven, and at most a millisecond, nothing next to the whole second
// the header rounds to. What is above 0 stays at least 1. Retry-After, which
// a client acts on, is still rounded up in full, so as never to be early.
func policySeconds(d time.Duration, limit int) int64 {
	if d <= 0 {
		return 0
	}
	slack := time.Duration(min(limit, 1000)) * time.Microsecond
	return max(1, seconds(d-slack))
}

// clientKey returns the key of the client of r: its address, from header if
// it is set and holds one, else the peer of the connection; for an IPv6
// address, its prefix of v6bits bits.
func clientKey(r *http.Request, header string, hops, v6bits int) string {
	a, raw := clientAddr(r, header, hops)
	switch {
	case !a.IsValid():
		return raw // not an address: the peer as the server saw it
	case a.Is6() && v6bits < 128:
		p, _ := a.Prefix(v6bits) // cannot fail: 0 < v6bits < 128 for IPv6
		return p.String()
	}
	return a.String()
}

// clientAddr returns the address of the client of r: from header if it is set
// and holds one, else the peer of the connection. If the peer's is not an
// address either, it returns the zero Addr and the peer's as it is.
func clientAddr(r *http.Request, header string, hops int) (netip.Addr, string) {
	if header != "" {
		if v := r.Header.Values(header); len(v) > 0 {
			list := strings.Split(strings.Join(v, ","), ",")
			i := 0
			if http.CanonicalHeaderKey(header) == "X-Forwarded-For" {
				// Each proxy appends the address it saw: the client's is
				// the one the farthest trusted proxy appended. With fewer
				// entries than hops, the request entered the chain at a
				// nearer proxy, and every entry is a trusted one's: the
				// first is the client's.
				i = max(0, len(list)-hops)
			}
			if i >= 0 && i < len(list) {
				if a, err := netip.ParseAddr(strings.TrimSpace(list[i])); err == nil {
					return a.Unmap().WithZone(""), ""
				}
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().WithZone(""), ""
	}
	return netip.Addr{}, host
}
