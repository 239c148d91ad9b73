package adaptive

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/ctxsync/ctxsync/internal/httpx"
)

// StatusError is the error a Ticket is finished with, by Transport for a
// response of status 429, 503 or 504, by Middleware for 503 or 504: the
// service saying it is overloaded. It is the same type as retry.StatusError
// and breaker.StatusError.
type StatusError = httpx.StatusError

// overloadStatus reports whether an HTTP status says the service is
// overloaded: too many requests, unavailable, or a gateway that timed out.
func overloadStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable ||
		code == http.StatusGatewayTimeout
}

func checkLimiter(l *Limiter, what string) {
	if l == nil {
		panic("adaptive: " + what + " with nil Limiter")
	}
	if !l.made {
		panic("adaptive: " + what + " with a Limiter not made by New")
	}
}

// Middleware returns HTTP server middleware that lets a request through only
// with a Ticket of l. A request that l sheds, or whose ctx's deadline passed
// while it waited, is answered 503 Service Unavailable with a Retry-After of
// twice l's latency, rounded up to whole seconds (at least 1), and a short
// text body; one whose client went away while it waited (its ctx cancelled,
// as net/http does then) gets no answer. The Ticket of a request that went
// through is finished when the handler returns: as an overload failure if the
// handler answered 503 or 504; as by Ignore if it answered 429, if it
// panicked (the panic goes on), if its client went away or if it took the
// connection over (http.Hijacker, or a 101 Switching Protocols: a
// WebSocket's life is not a call's latency); and as a success otherwise, so
// that the handler's latency moves the limit. A 429 says that one client
// sent too much (a per-client limit such as ratelimit.Middleware answers
// it), not that the service is overloaded: counted as overload, one greedy
// client would drive the limit down for all.
//
// The handler's writer is an http.Flusher, an http.Hijacker, both or
// neither, as the server's writer can be reached as one by
// http.ResponseController (itself, or through its Unwrap): a handler that
// asks by a type assertion whether it may stream or upgrade gets the
// server's answer (over HTTP/2, no Hijacker). It has Unwrap too, which
// returns the server's writer, for http.ResponseController's other methods
// (deadlines, full duplex); and ReadFrom, which hands a copy (io.Copy,
// http.ServeFile) to the server's writer, so that a file is still sent with
// sendfile. It is never an http.Pusher: HTTP/2 server push, which browsers
// have dropped, is not offered behind Middleware.
//
// Middleware panics if l is nil or was not made by New.
func Middleware(l *Limiter) func(http.Handler) http.Handler {
	checkLimiter(l, "Middleware")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t, err := l.Acquire(r.Context())
			if err != nil {
				// Canceled is net/http's sign that the client has gone:
				// nothing to answer. Any other end of the wait (a
				// deadline, set by a timeout in front, that passed while
				// the request was queued) leaves a client waiting, to
				// whom a response with nothing written would be net/http's
				// default, 200 and no body, for a request never served.
				if !errors.Is(err, context.Canceled) {
					w.Header().Set("Retry-After", strconv.FormatInt(retryAfter(l.Latency()), 10))
					http.Error(w, "adaptive: service overloaded", http.StatusServiceUnavailable)
				}
				return
			}
			finished := false
			defer func() {
				if !finished {
					// The handler, r's ctx, or the Unwrap of a writer in
					// front, panicked: its latency says nothing.
					t.Ignore()
				}
			}()
			hw, sw := wrapWriter(w)
			next.ServeHTTP(hw, r)
			// r's ctx may be the code of a middleware in front: looked at
			// before the Ticket counts as finished, so that if it panics
			// the deferred Ignore still gives the Ticket back.
			gone := false
			switched := sw.hijacked || sw.code == http.StatusSwitchingProtocols
			if !switched && sw.code != http.StatusTooManyRequests && !overloadStatus(sw.code) {
				gone = r.Context().Err() != nil
			}
			finished = true
			switch {
			case switched:
				t.Ignore() // the connection's life, not a call's latency
			case sw.code == http.StatusTooManyRequests:
				t.Ignore() // a client over its quota: see above
			case overloadStatus(sw.code):
				t.Done(&StatusError{StatusCode: sw.code, Status: strconv.Itoa(sw.code) + " " + http.StatusText(sw.code)})
			case gone:
				t.Ignore()
			default:
				t.Done(nil)
			}
		})
	}
}

// callerGaveUp reports whether err, Base's error for a request sent with
// ctx, is the caller cancelling it: context.Canceled, or the cause of a ctx
// cancelled with one (context.WithCancelCause, a group's first failure),
// which is what net/http returns then.
func callerGaveUp(ctx context.Context, err error) bool {
	switch cerr := ctx.Err(); {
	case cerr == nil:
		return false
	case errors.Is(err, context.Canceled):
		return true
	case cerr != context.Canceled:
		return false // a deadline: the service was too slow
	}
	cause := context.Cause(ctx)
	return cause != nil && errors.Is(err, cause)
}

// retryAfter returns the seconds a shed client is told to wait: twice the
// latency of a call, at least 1, as Retry-After counts in whole seconds.
func retryAfter(latency time.Duration) int64 {
	s := math.Ceil(2 * latency.Seconds())
	if !(s >= 1) {
		return 1
	}
	return int64(math.Min(s, 3600))
}

// statusWriter notes the status a handler answers with, and whether it took
// the connection over. Unwrap lets http.ResponseController reach the writer
// underneath (deadlines, full duplex). Flush and Hijack are methods of the
// types that embed it, each made for a writer underneath that can do them
// (see wrapWriter): a handler that asks by a type assertion what its writer
// can do must get the server's answer, not a yes that fails when called.
type statusWriter struct {
	http.ResponseWriter
	code     int
	hijacked bool
}

// WriteHeader notes the first final status: 200 and above, and 101
// Switching Protocols, which net/http sends as final too (any WriteHeader
// after it is ignored). The other 1xx are informational: the final status
// is yet to come.
func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends 200 first if no status was sent, as net/http does: a
// WriteHeader after it is ignored by net/http, and must not be counted
// either (a 503 the client never got is no overload).
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ReadFrom passes a copy (io.Copy, http.ServeContent) to the writer
// underneath if it is an io.ReaderFrom, as net/http's is: without it the copy
// would go through Write in small chunks, and net/http's sendfile would be
// lost behind the middleware. Otherwise it copies through Write. Unlike
// Flush and Hijack it needs nothing of the writer underneath, so every
// writer of Middleware has it.
//
// Only a byte sent says the header went: net/http's ReadFrom of an empty
// reader sends nothing, and a WriteHeader after it still counts.
func (w *statusWriter) ReadFrom(r io.Reader) (n int64, err error) {
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		// Only Write: io.Copy would call this ReadFrom again.
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	if n > 0 && w.code == 0 {
		w.code = http.StatusOK
	}
	return n, err
}

// flushError sends what the handler wrote so far, through
// http.ResponseController, which reports whether it could.
func (w *statusWriter) flushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err == nil && w.code == 0 {
		w.code = http.StatusOK // a flush sends the header: see Write
	}
	return err
}

// hijack hands the connection to the handler. The connection's life from
// then on (a WebSocket's, minutes or hours) is not the latency of a call,
// and its Ticket is ignored.
func (w *statusWriter) hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// The writers a handler gets: a statusWriter with Flush (and FlushError,
// which http.ResponseController prefers), Hijack, or both.
type (
	flushWriter       struct{ statusWriter }
	hijackWriter      struct{ statusWriter }
	flushHijackWriter struct{ statusWriter }
)

func (w *flushWriter) Flush()                  { _ = w.flushError() }
func (w *flushWriter) FlushError() error       { return w.flushError() }
func (w *flushHijackWriter) Flush()            { _ = w.flushError() }
func (w *flushHijackWriter) FlushError() error { return w.flushError() }

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error)      { return w.hijack() }
func (w *flushHijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.hijack() }

// wrapWriter returns the writer for a handler served on w, and its
// statusWriter: one allocation, of the type that has the methods w can
// serve.
//
// It calls the Unwrap of writers in front of the server's, user code that
// may panic: the caller is ready to give the Ticket back.
func wrapWriter(w http.ResponseWriter) (http.ResponseWriter, *statusWriter) {
	switch flush, hijack := reach(w); {
	case flush && hijack:
		v := &flushHijackWriter{statusWriter{ResponseWriter: w}}
		return v, &v.statusWriter
	case flush:
		v := &flushWriter{statusWriter{ResponseWriter: w}}
		return v, &v.statusWriter
	case hijack:
		v := &hijackWriter{statusWriter{ResponseWriter: w}}
		return v, &v.statusWriter
	}
	v := &statusWriter{ResponseWriter: w}
	return v, v
}

// maxUnwrap bounds the writers reach looks through: an Unwrap that returns
// its own writer would make it loop for ever.
const maxUnwrap = 64

// reach reports whether http.ResponseController can flush and hijack w,
// looking as it does: at w, then through Unwrap. Reach, not w's own
// methods, decides: with a writer in front that has only Unwrap (as
// wrappers are now written), a writer without Hijack would let a handler's
// ResponseController hijack the connection past the statusWriter, and its
// life would count as the latency of a call.
func reach(w http.ResponseWriter) (flush, hijack bool) {
	for range maxUnwrap {
		if w == nil {
			break
		}
		if !flush {
			switch w.(type) {
			case interface{ FlushError() error }, http.Flusher:
				flush = true
			}
		}
		if !hijack {
			_, hijack = w.(http.Hijacker)
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok || flush && hijack {
			break
		}
		w = u.Unwrap()
	}
	return flush, hijack
}

// Transport is an http.RoundTripper that sends each request through Base with
// a Ticket of Limiter, so that a client holds no more requests in flight to a
// service than the service can answer in time, and refuses the rest at once
// with ErrShed instead of piling them onto it.
//
//	lim := adaptive.New(adaptive.Config{})
//	client := &http.Client{Transport: &adaptive.Transport{Limiter: lim}}
//
// A request's Ticket is finished when Base returns, before the caller reads
// the body: as an overload failure if Base failed (a timeout, a refused
// connection) or answered 429, 503 or 504 (the response still goes to the
// caller, with no error); as by Ignore if the request's ctx was cancelled
// (the caller gave up: Base returned context.Canceled, or the cause the ctx
// was cancelled with, as net/http does) or Base panicked (the panic goes on); as a success
// otherwise. If the request's ctx, or the Limiter's Config.Clock, panics as
// the Ticket is finished, the panic goes on to the caller, the Ticket's
// slot is freed, and the response, which nobody will see, has its body
// closed. A request that net/http refuses to send (a header field it
// cannot write, no host) goes to Base without a Ticket: it is a bug of the
// caller, and says nothing of the service. A request that is shed, or whose
// ctx ends while it waits, gets no response, and its body is closed, as
// http.RoundTripper requires.
//
// With the other transports, nest Transport between ratelimit.Transport and
// breaker.Transport: retry.Transport outermost, then the rate limit, then
// Transport, then the breaker. Outside the rate limit, a Ticket would be
// held while its request waits for the limiter, and the wait would count as
// the service's latency: under a rate the limiter holds, the limit falls to
// a few, and the rest are shed. Inside the breaker, the requests Transport
// sheds, which never reach the service, would count as failures of the host
// and open its breaker. A request that the breaker
// refuses never reaches the service either, and must not count as an
// overload failure: if Base has a method Precheck(*http.Request) error, as
// breaker.Transport has, Transport asks it first and returns its refusal at
// once, without a Ticket (a breaker that opens while the request waits for
// its Ticket still refuses it after, which then counts). Transport has a
// Precheck method too, which passes on Base's, so that a ratelimit.Transport
// in front of it takes no event for a request the breaker would refuse.
//
// The zero Transport has no Limiter: RoundTrip panics. Its fields must not
// change after first use. It is safe for concurrent use by multiple
// goroutines.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	// Limiter holds the requests in flight. It must be set, and made by
	// New.
	Limiter *Limiter
}

// prechecker is a RoundTripper that can tell, before a request is sent, that
// it would refuse it at once: breaker.Transport, or a ratelimit.Transport in
// front of one. Structural, so that this package need not import them.
type prechecker interface {
	Precheck(req *http.Request) error
}

// Precheck returns Base's Precheck(req), if Base has that method, else nil:
// the error that a breaker behind Transport would refuse req with now. It
// lets a ratelimit.Transport in front of this one skip its wait for a
// request that would be refused anyway. Base is not asked if the Limiter
// is nil or was not made by New, or if Base is nil but for its type:
// RoundTrip panics on these, with Check's message, when the request reaches
// this Transport, and a mistake of a Transport further down must not
// panic first.
func (t *Transport) Precheck(req *http.Request) error {
	if t.Limiter == nil || !t.Limiter.made {
		return nil
	}
	if p, ok := t.Base.(prechecker); ok && !httpx.IsNil(p) {
		return p.Precheck(req)
	}
	return nil
}

// precheck returns the error a request fails with before it takes a
// Ticket: its ctx's, if done (the caller's own error is the one it can act
// on), or p's refusal. Either way, or if p panics (a breaker's Key or OnCall
// is the user's code), the request's body is closed, as a RoundTripper
// must.
func precheck(p prechecker, req *http.Request) (err error) {
	refused := true
	defer func() {
		if refused {
			httpx.CloseBody(req)
		}
	}()
	if err = req.Context().Err(); err == nil {
		err = p.Precheck(req)
	}
	refused = err != nil
	return err
}

// Check returns the mistake RoundTrip would panic with, as an error whose
// message begins with "adaptive:", or nil: call it where the Transport is
// built, so that the mistake shows there rather than at the first request.
//
// It then checks Base, as far down as it can: a Base that is a Transport of
// this library (ratelimit's, breaker's, retry's, or this package's) is
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
	return httpx.CheckChain("adaptive", t.Base, 1)
}

// checkOwn is Check of t's own fields, not of its Base.
func (t *Transport) checkOwn() error {
	return httpx.Misuse(func() { checkLimiter(t.Limiter, "Transport") })
}

func init() {
	httpx.RegisterTransport("adaptive", func(t *Transport) http.RoundTripper { return t.Base }, (*Transport).checkOwn)
	// Precheck asks Base's when the Limiter is made and Base is not nil
	// but for its type: see Precheck.
	httpx.RegisterPrecheckThrough(func(rt http.RoundTripper) (http.RoundTripper, bool) {
		t, ok := rt.(*Transport)
		if !ok || t == nil || t.Limiter == nil || !t.Limiter.made || httpx.IsNil(t.Base) {
			return nil, false
		}
		return t.Base, true
	})
}

// RoundTrip sends req through Base when the Limiter gives it a Ticket. See
// Transport for how it finishes the Ticket.
//
// RoundTrip panics, with Check's message and the request's body closed, if
// the Transport's Limiter is nil or was not made by New, if Base is nil but
// for its type, or on a loop of Bases (see Check).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Limiter == nil || !t.Limiter.made {
		httpx.CloseBody(req) // a RoundTripper closes it, even when it panics
		checkLimiter(t.Limiter, "Transport")
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	httpx.RefuseLoop("adaptive", t.Base, req)
	if !httpx.WellFormed(req) {
		return base.RoundTrip(req)
	}
	if p, ok := base.(prechecker); ok {
		if err := precheck(p, req); err != nil {
			return nil, err
		}
	}
	var (
		ticket *Ticket
		resp   *http.Response
	)
	sent, finished, returned := false, false, false
	defer func() {
		switch {
		case !sent:
			// The ctx panicked in Acquire: the request is not sent, and
			// its body is closed as a RoundTripper must.
			httpx.CloseBody(req)
		case !finished:
			ticket.Ignore() // Base, or the ctx, panicked
		}
		// The ctx, or the Limiter's Clock as the Ticket is finished,
		// panicked after Base answered: the panic goes on, and the
		// response nobody will see must not keep its connection.
		if !returned && resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
	}()
	ticket, err := t.Limiter.Acquire(req.Context())
	if err != nil {
		return nil, err
	}
	sent = true
	resp, err = base.RoundTrip(req)
	// The ctx is the caller's code: looked at before the Ticket counts as
	// finished, so that if it panics the deferred Ignore gives it back.
	gaveUp := err != nil && callerGaveUp(req.Context(), err)
	finished = true
	switch {
	case gaveUp:
		ticket.Ignore()
	case err != nil:
		ticket.Done(err)
	case resp == nil:
		ticket.Ignore() // Base broke the RoundTripper contract; net/http reports it
	case overloadStatus(resp.StatusCode):
		ticket.Done(&StatusError{StatusCode: resp.StatusCode, Status: resp.Status})
	default:
		ticket.Done(nil)
	}
	returned = true
	return resp, err
}
