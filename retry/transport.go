package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/httpx"
)

// Transport is an http.RoundTripper that sends a request again, as Policy
// says, when it meets a transport error or a response with status 429 (Too
// Many Requests), 502 (Bad Gateway), 503 (Service Unavailable) or 504
// (Gateway Timeout). 500 is not retried: it is as often a bug that will fail
// again as a passing fault.
//
// Nor are the transport errors that sending the request again cannot cure:
// a server certificate that did not verify (a
// *tls.CertificateVerificationError, or an x509.UnknownAuthorityError,
// HostnameError or CertificateInvalidError: not trusted, for another host,
// expired), and a request that net/http's Transport refuses to send (a
// scheme it does not serve, a method that is not a token, a header or
// trailer field it cannot write, no host in the URL), and
// ratelimit.ErrExceedsBurst, of a request that costs more than a
// ratelimit.Transport's limiter ever allows. Such an attempt is the
// last, whatever Policy.Retryable says, as if Permanent had marked its
// error; the *Error says NotRetryable, and errors.As still finds the error
// Base gave.
//
// Only requests that can be sent again safely are retried: those without a
// body or with GetBody (which http.NewRequest sets for the usual bodies), and
// with an idempotent method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an
// Idempotency-Key (or X-Idempotency-Key) header. Others go to Base once.
//
// A Retry-After header on a 429 or a 503, in seconds or as an HTTP date,
// sets a floor on the next wait (see Policy); on a 502 or a 504 it is
// ignored and the backoff decides. So does the RetryAfter method of an
// error of Base, as breaker.Transport's refusals have. A wait asked for
// beyond Policy.MaxRetryAfter (10s by default) is not made: the request
// fails at once, with that response or error, rather than stall for a
// breaker's whole open time or the hour a server asked for.
//
// The body of each response that is not returned is read (up to 64 KiB, so
// that its connection can be reused) and closed before the wait. When
// Transport gives up on a status, for any reason but the request's ctx
// ending, it returns that last response, unread, as Base gave it. Otherwise
// it returns the error of Policy.Execute (an *Error, or the ctx's error if
// the ctx was done before the first attempt).
//
// Waits end at once when the request's ctx ends. With Policy.AttemptTimeout
// set, each attempt runs under its own timeout, which covers reading the
// body of the response returned too, as http.Client.Timeout does: it is
// released when that body is closed.
//
// Base, GetBody, Retryable and OnRetry run in the caller's goroutine. A
// panic in any of them reaches the caller of RoundTrip with nothing kept:
// the response Transport held for a retry is closed, and the attempt's
// timeout released. A request whose first attempt panics for a mistake in
// the configuration of one of the library's Transports under Transport (the
// message Check names) was never sent: Policy.Budget and Hedge.Budget do
// not count it as a call.
//
// Retryable and OnRetry see a *StatusError for the retried statuses. The
// zero Transport uses http.DefaultTransport and the zero Policy. Transport
// holds no state of its own: it is safe for concurrent use, and may be
// copied. Its fields must not change while it is in use.
type Transport struct {
	Base   http.RoundTripper // nil means http.DefaultTransport
	Policy Policy

	// Hedge, if not nil, hedges each attempt of the requests that are
	// safe to send twice (those Transport retries): a copy is sent when
	// the attempt has not answered after Hedge.Delay, and the first
	// response that Transport would not retry wins (see Hedge). The
	// losers' ctxs are cancelled and their bodies drained and closed, in
	// their own goroutines. A response that Transport would retry is a
	// failure: the copies in flight are waited for, and if none wins, the
	// last failure goes to the Policy, as an unhedged attempt's would. A
	// request is counted once in Hedge.Budget, however often retried.
	// Copies run Base in goroutines of their own: a copy whose Base calls
	// runtime.Goexit has failed with ctxsync.ErrGoexit (see DoHedged).
	Hedge *Hedge

	// RetryResponse, if not nil, decides which responses are retried, in
	// place of the rule of the statuses 429, 502, 503 and 504: a 500 from
	// a service known to be idempotent may be retried, or a 503 whose
	// header says the service is down for maintenance not. It may read
	// the status and the headers; a response it retries is discarded
	// (its body drained and closed), one it does not is returned, unread.
	// The Retry-After of a 429 or a 503 that it retries is honoured, and
	// Policy.Retryable still sees a *StatusError and may refuse. It runs
	// in the goroutine of the attempt (a copy's own with Hedge), outside
	// any lock; a panic in it reaches the caller of RoundTrip.
	RetryResponse func(resp *http.Response) bool

	// DelayFunc, if not nil, is Policy.DelayFunc with the response too:
	// resp is the response of the attempt that failed, nil after a
	// transport error. Its body is not to be read: it is drained and
	// closed before the wait. It replaces Policy.DelayFunc.
	DelayFunc func(attempt int, resp *http.Response, err error) time.Duration
}

// StatusError is the error of an attempt of Transport whose response had a
// status that Transport retries (429, 502, 503 or 504); its Delay is the wait
// the Retry-After of a 429 or a 503 asks for. Policy.Retryable and
// Policy.OnRetry see it; when Transport gives up, it returns the response
// itself. It is the same type as breaker.StatusError: see there for its
// fields and methods.
type StatusError = httpx.StatusError

// errNoResponse is the error of an attempt whose Base broke the
// RoundTripper contract: neither a response nor an error.
var errNoResponse = errors.New("retry: Base RoundTripper returned no response and no error")

// drainLimit bounds how much of a discarded body is read to reuse its
// connection: beyond it, closing the connection is cheaper.
const drainLimit = 64 << 10

// Check returns the mistake in t.Policy or t.Hedge that RoundTrip would
// panic with, as an error whose message begins with "retry:", or nil: call
// it where the Transport is built, so that a mistake shows there rather than
// at the first request.
//
// It then checks Base, as far down as it can: a Base that is a Transport of
// this library (ratelimit's, breaker's, adaptive's, or this package's) is
// checked as this one is, and its Base in turn; the first Base that is not
// one of them, if it has a method Check() error, is asked, and its error
// returned as it is. A Base that is nil but for its type (a nil pointer or
// func), and Transports nested over 64 deep (Bases that lead back to one of
// them), are mistakes too: RoundTrip panics on both, with the same message,
// before it takes or sends anything, where it would panic inside the nil
// Base, or go round the loop until the stack overflowed.
//
// A loop of Bases through a RoundTripper of the user's is not seen, by
// Check nor by RoundTrip: what comes after the user's Base is its own
// business. Its Check, asked here, must not ask the Check of a Transport
// above it: that would recurse until the stack overflowed, as RoundTrip
// would through its RoundTrip.
func (t *Transport) Check() error {
	if err := t.checkOwn(); err != nil {
		return err
	}
	return httpx.CheckChain("retry", t.Base, 1)
}

func init() {
	httpx.RegisterTransport("retry", func(t *Transport) http.RoundTripper { return t.Base }, (*Transport).checkOwn)
}

// checkOwn is Check of t's own fields, not of its Base: what RoundTrip
// looks at for each request.
func (t *Transport) checkOwn() error {
	return httpx.Misuse(func() {
		t.Policy.check()
		if t.Hedge != nil {
			if err := t.Hedge.Validate(); err != nil {
				panic(err.Error())
			}
		}
	})
}

// RoundTrip sends req through Base, again as Policy says. It panics (at the
// first request), with Check's message and the request's body closed, if a
// field of Policy or Hedge is out of range, if Base is nil but for its
// type, or on a loop of Bases (see Check).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if err := t.checkOwn(); err != nil { // before AttemptTimeout is taken out of the Policy below
		httpx.CloseBody(req)
		panic(err.Error())
	}
	httpx.RefuseLoop("retry", t.Base, req)
	if !replayable(req) {
		return base.RoundTrip(req)
	}
	p := t.Policy
	// The attempt's timeout is Transport's to manage: Execute would end
	// the attempt's ctx when the attempt returns, before the caller has
	// read the body of the response.
	timeout := p.AttemptTimeout
	p.AttemptTimeout = 0

	var (
		// kept is a response with a retried status; sent is set once
		// Base has returned, for an attempt or a hedged copy. Together,
		// as the closures below share them: one allocation for both.
		st struct {
			kept *http.Response
			sent atomic.Bool
		}
		ok       *http.Response // the response returned on success
		attempts int
		done     bool // Execute returned
	)
	defer func() {
		// Retryable runs between the attempt that kept a response and the
		// wait that drains it: if it panics (or OnRetry, Base, GetBody
		// does), the panic goes on to the caller, and the response no one
		// will see must not keep its connection. Closed, not drained: no
		// read from the network while a panic unwinds.
		if !done && st.kept != nil && st.kept.Body != nil {
			_ = st.kept.Body.Close()
		}
		// A panic before the first attempt (the request's ctx, looked at
		// by Execute, is the caller's code) leaves the body unsent: it is
		// closed, as a RoundTripper must, as for an error then.
		if !done && attempts == 0 && req.Body != nil {
			_ = req.Body.Close()
		}
		// A first attempt that did not return (a panic, or
		// runtime.Goexit) may have met a mistake in the configuration of
		// a Transport of the library under t (see httpx.Mistakes), as
		// every request does, before anything is sent: the Budgets do not
		// count it as a call made. Any other panic is raised again here,
		// and a Goexit (nil) goes on. Only a panic's path pays for the look.
		// A panic once Base has returned (RetryResponse, Retryable,
		// OnRetry, DelayFunc) is not looked at: the request was sent.
		if !done && attempts == 1 && !st.sent.Load() && (p.Budget != nil || t.Hedge != nil) {
			if ms := httpx.Mistakes("retry", t.Base); len(ms) > 0 {
				if v := recover(); v != nil {
					if httpx.IsMistake(v, ms) {
						t.undeposit()
					}
					panic(v)
				}
			}
		}
	}()
	if t.DelayFunc != nil {
		p.DelayFunc = func(n int, err error) time.Duration {
			return t.DelayFunc(n, st.kept, err) // the failed attempt's response, or nil
		}
	}
	onRetry := p.OnRetry
	p.OnRetry = func(n int, err error, d time.Duration) {
		discard(st.kept) // free its connection before the wait
		st.kept = nil
		if onRetry != nil {
			onRetry(n, err, d)
		}
	}
	err := p.Execute(req.Context(), func(ctx context.Context) error {
		attempts++
		r := req
		if attempts > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return Permanent(err)
			}
			r = new(http.Request)
			*r = *req // RoundTrip must not change req, only what it sends
			r.Body = body
		}
		// Until base has r's body (or a hedged copy, which sends it),
		// it is the attempt's to close if the attempt ends without
		// sending it: a panic of the ctx as the attempt's timeout is made
		// from it (the caller's code), say. (A request with no body, the
		// most common, costs nothing here.)
		via := base
		if r.Body != nil && r.Body != http.NoBody {
			h := newHanding(base, r.Body)
			via = h
			defer h.closeUnlessTaken()
		}
		resp, again, err := t.sendAttempt(ctx, via, r, timeout, attempts == 1, &st.sent)
		switch {
		case err != nil && cannotSucceed(r, err):
			return Permanent(err)
		case err != nil:
			return err
		case resp == nil:
			return Permanent(errNoResponse)
		}
		if !again {
			ok = resp
			return nil
		}
		st.kept = resp
		se := &StatusError{StatusCode: resp.StatusCode, Status: resp.Status}
		if honoursRetryAfter(resp.StatusCode) {
			se.Delay = parseRetryAfter(resp.Header.Get("Retry-After"))
		}
		return se
	})
	done = true
	if err == nil {
		return ok, nil
	}
	if attempts == 0 && req.Body != nil {
		_ = req.Body.Close() // a RoundTripper closes the body, even unsent
	}
	var rerr *Error
	if st.kept != nil && errors.As(err, &rerr) && rerr.Reason != ContextDone {
		return st.kept, nil
	}
	discard(st.kept)
	return nil, err
}

// undeposit takes back the first attempt that the Policy's Budget, and the
// Hedge's, counted for a request that was never sent (see RoundTrip).
func (t *Transport) undeposit() {
	if b := t.Policy.Budget; b != nil {
		b.undeposit()
	}
	if h := t.Hedge; h != nil && h.Budget != t.Policy.Budget {
		h.Budget.undeposit()
	}
}

// handing is a RoundTripper that hands body to base, and keeps who closes
// it: the body of one attempt of Transport's, or of one hedged copy, is its
// to close until base has it. A hedged copy may take an attempt's body
// over (see sendAttempt), and may do so as the attempt ends, in another
// goroutine: whoever takes it first, by one compare-and-swap, closes or
// sends it, and nobody else touches it.
type handing struct {
	base  http.RoundTripper
	body  io.ReadCloser
	taken *atomic.Bool
}

func newHanding(base http.RoundTripper, body io.ReadCloser) handing {
	return handing{base, body, new(atomic.Bool)}
}

// take takes the body over, to send or close it, if nobody has.
func (h handing) take() bool { return h.taken.CompareAndSwap(false, true) }

// closeUnlessTaken closes the body, unsent, unless base or a copy has it.
func (h handing) closeUnlessTaken() {
	if h.take() {
		_ = h.body.Close()
	}
}

// errAttemptOver is the error of a hedged copy that found its attempt over,
// and the body it was to send closed: nobody waits for its result.
var errAttemptOver = errors.New("retry: the attempt ended before this copy was sent")

func (h handing) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == h.body && !h.take() {
		return nil, errAttemptOver // closed already, by whoever took it
	}
	return h.base.RoundTrip(r)
}

// send sends r through base, under a timeout if not 0 that lasts until the
// response's body is closed.
func send(ctx context.Context, base http.RoundTripper, r *http.Request, timeout time.Duration) (*http.Response, error) {
	if timeout == 0 {
		return base.RoundTrip(r)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	handed := false // the body releases ctx from now on
	defer func() {
		// Also when Base panics: its attempt's timer must not outlive it.
		if !handed {
			cancel()
		}
	}()
	resp, err := base.RoundTrip(r.WithContext(ctx))
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	handed = true
	return resp, nil
}

// replayable reports whether req may be sent more than once.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	// As net/http does for its own retries: a key tells the server to
	// apply the request once, however often it comes.
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

func retriedStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// honoursRetryAfter reports whether a Retry-After on a response of status
// code is the server's word on when to come back: on a 503 by RFC 9110, on
// a 429 by RFC 6585. On a 502 or a 504 it would be the header of a server
// behind a gateway that could not reach it, or a gateway's guess: the
// backoff decides, as in go-retryablehttp.
func honoursRetryAfter(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// parseRetryAfter returns the wait a Retry-After header asks for: a number of
// seconds, or an HTTP date. It returns 0 for none, a date past, or a value it
// cannot read; a number of seconds beyond time.Duration saturates.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			return 0
		case err != nil || secs > uint64(maxDuration/time.Second):
			return maxDuration
		}
		return time.Duration(secs) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return max(0, time.Until(t))
}

// discard reads a little of resp's body, so that its connection can serve
// another request, and closes it.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	_ = resp.Body.Close()
}

// cancelBody releases an attempt's ctx when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
