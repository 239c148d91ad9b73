package breaker

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/httpx"
	"github.com/ctxsync/ctxsync/internal/nocopy"
)

// Transport is an http.RoundTripper with a circuit breaker per host: requests
// to a host that keeps failing are refused at once, without being sent, while
// requests to the other hosts go on.
//
//	client := &http.Client{Transport: &breaker.Transport{
//		Settings: breaker.Settings{FailureThreshold: 5, OpenTimeout: 10 * time.Second},
//	}}
//	resp, err := client.Get("https://api.example.com/items")
//	if errors.Is(err, breaker.ErrOpen) {
//		// api.example.com is down: refused without a request
//	}
//
// Each host's breaker is made from Settings at the first request to it. A
// request's outcome is judged when Base returns, before the caller reads the
// body: a transport error is a failure (but context.Canceled, ignored by
// default: the caller gave up, also when its ctx was cancelled with a cause,
// which net/http returns: see Breaker.Execute), as is a response with a status of 500 or
// above; any other response, 4xx included, is a success, since the host
// answered and the fault is the request's. The breaker sees a 5xx response
// as a *StatusError, which Settings.IsFailure and IsIgnored may judge
// otherwise. A 5xx response is still returned to the caller as Base gave
// it, with no error: the caller may want its body, and retry.Transport its
// status and Retry-After. A panic in Base is a failure, and goes on to the
// caller; the breaker keeps no trial slot. But a panic of one of the
// library's Transports under Transport (ratelimit's, retry's, adaptive's,
// breaker's, down a chain of them) for a mistake in its configuration, with
// the message Check names, is no outcome of the host: the breaker counts
// the request as ignored (Settings.OnCall hears of it so, with the mistake
// as its error), and the panic goes on, with its message unchanged. Every
// request would meet the mistake, and counted as failures they would open
// the breaker, which would then answer ErrOpen rather than name it. The
// panic is told by its value alone: a string equal to the message of a
// mistake that one of those Transports has, wherever under Transport it was
// raised (a request that costs nothing goes past a ratelimit.Transport
// whose limiter is the mistake, on to the Bases under it); any other value,
// an error that says the message included, is a failure, and a chain that
// has no such mistake counts every panic. A
// request that net/http refuses to send (a header field it cannot write, a
// method that is not a token, no host) goes to Base past every breaker and
// counts in none: it is a bug of the caller, and must not open the breaker
// of a host that is well.
//
// A refused request gets no response and an *OpenError, which matches ErrOpen
// and has a RetryAfter method that retry.Transport honours; its Name is the
// host's (after Settings.Name, if set). A request whose ctx is done before it
// is sent fails with ctx.Err(), and makes no breaker. Either way its body is
// closed, as http.RoundTripper requires.
//
// Breakers are held for at most MaxHosts hosts, so that a client sent to
// ever new hosts (a crawler, or URLs an attacker chooses) cannot exhaust
// memory. A request to a new host beyond the cap drops the breaker of
// another, the least recently used of a random sample, preferring closed
// breakers: an open one is dropped only if every breaker sampled is open or
// half-open, and one forced open (see Breaker) only if every one sampled is
// forced open. A host whose breaker was dropped starts again closed.
//
// With a rate limiter and retries, nest retry.Transport, then
// ratelimit.Transport, then Transport (see ratelimit.Transport for why):
// the limiter calls Precheck before it waits, so that a request the breaker
// would refuse takes no event of the limit, and a trial request takes its
// trial slot only once its wait is over.
//
// The zero Transport is ready to use: http.DefaultTransport, the default
// Settings, and requests keyed by host. Its fields must not change after
// first use, and a Transport must not be copied after first use. It is safe
// for concurrent use by multiple goroutines.
type Transport struct {
	_ nocopy.NoCopy

	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	// Settings make the breaker of each host. Name, if set, is prefixed to
	// the host in each breaker's Name. RoundTrip panics, as New does, on
	// Settings out of range, when it makes a breaker.
	Settings Settings

	// Key returns the key of a request: requests with the same key share a
	// breaker. The default is the request's host, as its URL names it:
	// lowercased, with its port unless it is the scheme's default
	// ("api.example.com", "127.0.0.1:8080").
	Key func(req *http.Request) string

	// MaxHosts caps the number of breakers held; 0 means 1000. A breaker
	// takes about a kilobyte (more with a rate rule's window). RoundTrip
	// panics if it is negative.
	MaxHosts int

	// OnStateChange, if not nil, is called on every change of state of a
	// host's breaker, with its key, after Settings.OnStateChange if that is
	// set too, and as it is: outside the breaker's lock, in order. It is
	// called even if Settings.OnStateChange panics, whose panic then goes
	// on, as Settings says (if both panic, this one's does).
	OnStateChange func(host string, from, to State, counts Counts)

	hosts hostSet
}

// StatusError is the error that a host's breaker sees for a response of
// Transport with a status of 500 or above; Settings.IsFailure and IsIgnored
// may look at its StatusCode. The response itself goes to the caller. It is
// the same type as retry.StatusError, so that a program that stacks the two
// Transports matches a status with either name; breaker.Transport leaves its
// Delay at 0.
type StatusError = httpx.StatusError

// errNoResponse is the outcome of a Base that broke the RoundTripper
// contract: neither a response nor an error.
var errNoResponse = errors.New("breaker: Base RoundTripper returned no response and no error")

const defaultMaxHosts = 1000

// RoundTrip sends req through Base if the breaker of its host lets it, and
// records the outcome. See Transport for what counts as a failure and what
// a refused request gets.
//
// It panics, with Check's message and the request's body closed, before it
// makes or asks a breaker, if Base is nil but for its type, or on a loop of
// Bases (see Check).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	httpx.RefuseLoop("breaker", t.Base, req)
	var (
		resp *http.Response
		sent bool
		bad  bool // resp is a 5xx, recorded as a failure
		done bool // Execute returned
	)
	defer func() {
		// Settings' functions run after Base returned, as the outcome is
		// recorded: if one panics, the panic goes on, and the response no
		// one will see must not keep its connection. User code that runs
		// before (the request's ctx, Key, OnStateChange, Settings'
		// functions on a refusal) may panic too: the request is not sent,
		// and its body is closed as a RoundTripper must.
		if done {
			return
		}
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		if !sent {
			httpx.CloseBody(req)
		}
	}()
	// A done ctx fails before a breaker is made for a host that may be new:
	// requests that are never sent should not push out the breakers held.
	if err := req.Context().Err(); err != nil {
		done = true
		httpx.CloseBody(req)
		return nil, err
	}
	if !httpx.WellFormed(req) {
		// A request net/http will refuse to send is the caller's bug, not
		// the host's failure: let Base refuse it, and count nothing.
		done = true // Base has the request, and closes its body
		return base.RoundTrip(req)
	}
	b := t.breaker(t.key(req), true)
	err := b.Execute(req.Context(), func(context.Context) (err error) {
		sent = true
		returned := false
		defer func() {
			// Base panicked, or called runtime.Goexit. If a Transport of
			// the library under t has a mistake in its configuration
			// (see httpx.Mistakes), the panic is looked at: if it is
			// that mistake, the breaker counts the call as ignored,
			// giving back a trial slot, and RoundTrip raises it again.
			// Any other panic goes on, raised again here, and a Goexit
			// (nil: a panic(nil) recovers as a *runtime.PanicNilError)
			// goes on by itself; both count as a failure, as of any
			// Base. Only a panic's path pays for the look.
			if returned {
				return
			}
			if ms := httpx.Mistakes("breaker", t.Base); len(ms) > 0 {
				switch v := recover(); {
				case v == nil:
				case httpx.IsMistake(v, ms):
					err = &mistakeError{msg: v.(string)}
				default:
					panic(v)
				}
			}
		}()
		resp, err = base.RoundTrip(req)
		returned = true
		switch {
		case err != nil:
			return err
		case resp == nil:
			return errNoResponse
		case resp.StatusCode >= 500:
			bad = true
			return &StatusError{StatusCode: resp.StatusCode, Status: resp.Status}
		}
		return nil
	})
	done = true
	switch {
	case !sent:
		// Refused, or the ctx was done: a RoundTripper closes the body of
		// a request it does not send.
		httpx.CloseBody(req)
		return nil, err
	case bad:
		return resp, nil
	}
	if m, ok := err.(*mistakeError); ok {
		panic(m.msg) // as Base panicked: with Check's message
	}
	return resp, err
}

// A mistakeError is what the function RoundTrip runs through a host's
// breaker returns for a panic of Base that is a mistake in the
// configuration of a Transport of the library under it: the breaker counts
// it as ignored, neither a failure nor a success of the host (see finish),
// and RoundTrip panics again with msg, as Base did.
type mistakeError struct{ msg string }

func (e *mistakeError) Error() string { return e.msg }

// Check returns the mistake in t's Settings or MaxHosts that RoundTrip would
// panic with when it makes a host's breaker, as an error whose message begins
// with "breaker:", or nil: call it where the Transport is built, so that a
// mistake shows there rather than at the first request to a new host.
//
// It then checks Base, as far down as it can: a Base that is a Transport of
// this library (ratelimit's, retry's, adaptive's, or this package's) is
// checked as this one is, and its Base in turn; the first Base that is not
// one of them, if it has a method Check() error, is asked, and its error
// returned as it is. A Base that is nil but for its type (a nil pointer or
// func), and Transports nested over 64 deep (Bases that lead back to one of
// them), are mistakes too: RoundTrip panics on both, with the same message,
// before it takes or sends anything, where it would panic inside the nil
// Base, or go round the loop until the stack overflowed.
// These two come first, before Settings and MaxHosts: RoundTrip meets
// them first.
//
// A loop of Bases through a RoundTripper of the user's is not seen, by
// Check nor by RoundTrip: what comes after the user's Base is its own
// business. Its Check, asked here, must not ask the Check of a Transport
// above it: that would recurse until the stack overflowed, as RoundTrip
// would through its RoundTrip.
func (t *Transport) Check() error {
	// RoundTrip refuses a loop of Bases, and a Base that is nil but for
	// its type, before it looks at Settings, which it does only as it
	// makes a host's breaker (see httpx.RefuseLoop).
	if httpx.ChainOver(t.Base, 1) {
		return errors.New(httpx.Nesting("breaker"))
	}
	if err := t.checkOwn(); err != nil {
		return err
	}
	return httpx.CheckChain("breaker", t.Base, 1)
}

// checkOwn is Check of t's own fields, not of its Base's: a Base that is
// nil but for its type first, as RoundTrip refuses it before it makes a
// breaker.
func (t *Transport) checkOwn() error {
	if msg := httpx.NilBase("breaker", t.Base); msg != "" {
		return errors.New(msg)
	}
	return httpx.Misuse(func() {
		if t.MaxHosts < 0 {
			panic("breaker: Transport with negative MaxHosts " + strconv.Itoa(t.MaxHosts))
		}
		t.Settings.normalize()
	})
}

func init() {
	httpx.RegisterTransport("breaker", func(t *Transport) http.RoundTripper { return t.Base }, (*Transport).checkOwn)
}

// Precheck returns the error that RoundTrip would refuse req with now, without
// sending it: an *OpenError if the breaker of req's host is open, or half-open
// with every trial slot taken; otherwise nil. It takes no trial slot. A
// refusal counts in the breaker's Counts.Rejected, and is told to
// Settings.OnCall, as the caller is to act on it as on RoundTrip's: return
// the error, and not call RoundTrip.
//
// It is for a RoundTripper in front of Transport that would spend something
// on a request before sending it, as ratelimit.Transport spends an event of
// its limit. The breaker may still refuse the request when RoundTrip comes,
// if it opened, or another request took the last trial slot, meanwhile.
func (t *Transport) Precheck(req *http.Request) error {
	if !httpx.WellFormed(req) {
		return nil // RoundTrip sends it to Base past every breaker
	}
	b := t.breaker(t.key(req), false)
	if b == nil {
		return nil // a host not seen yet has a closed breaker
	}
	if err := b.refusal(); err != nil {
		// Counted as rejected: told as a refusal of RoundTrip is.
		if b.s.OnCall != nil {
			b.reportRefusal(err)
		}
		return err
	}
	return nil
}

// Breaker returns the breaker of a host (a key, as Key gives them), or nil if
// Transport holds none for it: no request went to the host yet, or its
// breaker was dropped for newer hosts. Use it to look at a host's State or
// Metrics, or to ForceOpen it.
func (t *Transport) Breaker(host string) *Breaker { return t.breaker(host, false) }

// Hosts returns the number of breakers held at the moment of the call.
func (t *Transport) Hosts() int {
	t.hosts.mu.Lock()
	defer t.hosts.mu.Unlock()
	return len(t.hosts.all)
}

func (t *Transport) key(req *http.Request) string {
	if t.Key != nil {
		return t.Key(req)
	}
	return httpx.HostKey(req.URL)
}

// refusal returns the error b would refuse a call with now, or nil if it would
// let one through, without taking a trial slot. A refusal counts as rejected.
func (b *Breaker) refusal() *OpenError {
	b.check()
	s := b.state.Load()
	if s&disabledBit != 0 {
		return nil
	}
	switch State(s & stateMask) {
	case Open:
		// The clock, every time: a refusal here saves a wait for a
		// limiter, which costs far more.
		if e := b.openErr.Load(); e.Forced || !b.openTimeUp(clock.Now()) {
			b.rejected.Add(1)
			return e
		}
	case HalfOpen:
		b.mu.Lock()
		full := b.state.Load() == s && b.probes >= b.s.HalfOpenMaxCalls
		b.mu.Unlock() // nothing changed: nothing to report
		if full {
			b.rejected.Add(1)
			return b.halfOpenErr
		}
	}
	return nil
}
