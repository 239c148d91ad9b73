package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ctxsync/ctxsync/internal/httpx"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A KeyWaiter waits for the events of a key. *Keyed[string, L] is one, for
// any L.
type KeyWaiter interface {
	WaitN(ctx context.Context, key string, n int) error
}

// Transport is an http.RoundTripper that waits for a limiter before it sends
// each request through Base: one limit for every request it sends (Limiter),
// or one per host (PerHost), so that a client keeps to the pace a server
// allows instead of being answered 429.
//
//	perHost := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
//		return ratelimit.NewTokenBucket(10, 5) // 10 a second per host, bursts of 5
//	}, ratelimit.KeyedConfig{})
//	client := &http.Client{Transport: &ratelimit.Transport{PerHost: perHost}}
//
// It waits with the request's ctx, first in, first out, as WaitN does: a
// request whose ctx ends while it waits fails with ctx.Err() and takes
// nothing, and one whose ctx is done already fails so at once, even if the
// limiter has events or the request costs none. A request whose wait could not end before its ctx's deadline
// fails at once, without waiting: with a *DeadlineError, which says how long
// the wait would be, when the limiter can tell (a Taker can: those of this
// package and Keyed), else with ErrWouldExceedDeadline; both match
// ErrWouldExceedDeadline and context.DeadlineExceeded. To learn how long, a
// limiter whose WaitN fails with a *DeadlineError, as redislimit's does,
// has said it, and is not asked again; otherwise a
// PerHost with a method TakeContext(ctx, key, n) (Decision, error), as
// redislimit's Limiter has, or a Limiter with a method TakeContext(ctx, n)
// (Decision, error), as redislimit's Handle has (also inside a Tally's
// wrapper), is asked with the request's ctx: a request whose ctx ends
// meanwhile fails with ctx.Err(). A request that costs
// more than the limiter can ever allow fails with ErrExceedsBurst. A request
// that fails before it is sent gets no response, and its body is closed, as
// http.RoundTripper requires.
//
// A Tally around Limiter, or around the limiters of a Keyed that is PerHost,
// counts each request once, as one wait (see Tally).
//
// # With a breaker and retries
//
// Put retry.Transport outermost, then Transport, then breaker.Transport:
//
//	client := &http.Client{Transport: &retry.Transport{
//		Base: &ratelimit.Transport{
//			Base:    &breaker.Transport{},
//			PerHost: perHost,
//		},
//	}}
//
// Retries go outermost so that each attempt passes the limiter and the
// breaker anew: an attempt is a request the server sees, and takes its event;
// and a *DeadlineError or a breaker's refusal tells retry.Transport, through
// RetryAfter, how long to wait before the next attempt (or that the caller's
// deadline leaves no time for one, and to stop at once).
//
// The breaker goes inside the limiter, so that a half-open breaker's trial
// slot is not held while its request waits for the limiter: every other
// request would be refused meanwhile, though the host may well be back. (With
// the limiter inside the breaker, the wait would hold the slot, and a wait
// that failed on its deadline would count as a failure of the host.) The cost
// of that order would be an event taken for each request the breaker then
// refuses; Transport avoids it by asking first: if Base has a method
// Precheck(*http.Request) error, as breaker.Transport has, Transport calls it
// before the wait and, if it returns an error (the breaker of the request's
// host is open, or half-open with its trial slots taken), returns that error
// at once, without taking an event or calling RoundTrip. A breaker that opens
// while a request waits still refuses it after its wait: that one event is
// the price of not holding a trial slot while waiting. Transport has a
// Precheck method too, which passes on Base's, so that Transports nest (a
// global limit outside a per-host one).
//
// A request that net/http refuses to send (a header field it cannot write, a
// method that is not a token, no host) goes to Base without taking an event
// and counts in no Tally: a bug of the caller must not spend the quota of
// the requests behind it.
//
// Set one of Limiter and PerHost: RoundTrip panics, with a message that
// begins with "ratelimit:", if both are nil (or nil pointers) or both are
// set, if Key is set without PerHost, if Base is a nil pointer (nil itself
// means http.DefaultTransport), if more than 64 Transports are nested, one
// the Base of another (those of the library's other packages count too: so
// long a chain most likely leads back to one of them), or if Cost returns
// a negative number; it takes nothing first. It panics so
// too, for every request (one that costs nothing included), before it takes
// anything, for a mistake in the fields of a Transport of this package
// nested right under it (its Base, or its Base's, and so on down to the
// first Base of another type), and, for a request that takes an event, of
// one behind adaptive.Transports there, whose Precheck asks it (see
// Precheck). A Transport nested further down, or its Cost, is looked at
// only when the request reaches it, once those in front have taken their
// events: if it panics then, those events are spent.
// Check finds these mistakes, but for Cost's, where the Transport is built.
//
// Transport holds no state of its own: it is safe for concurrent use, and may
// be copied (the copies share its limiter). Its fields must not change while
// it is in use.
//
// # A global and a per-host limit
//
// To apply both, nest two Transports, the global one outside. The inner
// limit then holds at the wire, each request sent at its pace; the outer one
// is taken before the inner wait, so it paces the requests that enter that
// wait, not those sent: a request that waits for its host goes out long after
// its global event, perhaps together with one whose event came then, past
// the global burst; and a request the inner limiter refuses (its deadline too
// close, a cost past the burst) has spent a global event. Where both limits
// must hold at the wire, use one Transport whose PerHost is a Keyed of
// Combineds, each All of the host's limiter and one global limiter that they
// share: a request then takes from both at once, when it is sent.
//
//	global := ratelimit.NewTokenBucket(100, 10)
//	perHost := ratelimit.NewKeyed(func(string) *ratelimit.Combined {
//		return ratelimit.All(ratelimit.NewTokenBucket(10, 5), global)
//	}, ratelimit.KeyedConfig{})
//
// The Combineds serve their own waiters in order, but not each other's: a
// host's waiter may see another host's requests take the global events first.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	// Limiter, if set, limits every request together.
	Limiter Limiter

	// PerHost, if set, limits the requests of each key on its own: the
	// key that Key gives a request.
	PerHost KeyWaiter

	// Key returns the key a request is limited under by PerHost. The
	// default is the request's host, as its URL names it: lowercased, with
	// its port unless it is the scheme's default ("api.example.com",
	// "127.0.0.1:8080").
	Key func(req *http.Request) string

	// Cost returns how many events a request counts for; nil means 1. A
	// request that costs 0 is sent without waiting: the limiter is not
	// asked, nothing is taken, and no Tally counts it (a done ctx still
	// fails it).
	Cost func(req *http.Request) int
}

// A DeadlineError is the error of Transport.RoundTrip for a request that the
// limiter could not allow before its ctx's deadline: RoundTrip returns it at
// once, rather than wait only to fail. errors.Is matches it with
// ErrWouldExceedDeadline and context.DeadlineExceeded. A limiter's WaitN may
// fail with one too, under the key it was asked for (redislimit's does).
//
// A DeadlineError is a plain value: it may be copied. A nil *DeadlineError
// is no refused wait: its Error says it is nil, its RetryAfter is 0, Timeout
// false, and it wraps nothing.
type DeadlineError struct {
	// Key is the key the request was limited under by Transport.PerHost;
	// "" for Transport.Limiter.
	Key string
	// Delay is how long the request would have had to wait, as the limiter
	// saw it when it refused: the earliest it may be sent again.
	Delay time.Duration
}

// Error says how long the wait would have been.
func (e *DeadlineError) Error() string {
	if e == nil {
		return "ratelimit: <nil *DeadlineError>"
	}
	key := ""
	if e.Key != "" {
		key = " for " + e.Key
	}
	return "ratelimit: wait of " + e.Delay.String() + key + " would exceed the context deadline"
}

// RetryAfter returns Delay: how long to wait before the request may be sent.
// retry.Transport honours it.
func (e *DeadlineError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.Delay
}

// Timeout reports true: the request failed for want of time, as
// net.Error's Timeout means, and as http.Client's *url.Error reports through
// its own Timeout method.
func (e *DeadlineError) Timeout() bool { return e != nil }

// Unwrap returns ErrWouldExceedDeadline, which wraps
// context.DeadlineExceeded.
func (e *DeadlineError) Unwrap() error {
	if e == nil {
		return nil
	}
	return ErrWouldExceedDeadline
}

// requestWaiter is a Limiter that waits for a request of Transport its own
// way: a Tally's wrapper, which counts the request once, or the handle of a
// key of a Keyed, which passes it on to the Keyed's requestWaiter.
type requestWaiter interface {
	waitRequest(ctx context.Context, n int, key string) error
}

// keyedRequests is a *Keyed[string, L]: Transport waits through its
// waitRequest, which takes the events at once when the key's limiter has
// them and counts the request once in a Tally around the key's limiter.
// keyed returns the Keyed itself: a user's type that embeds a *Keyed gets
// these unexported methods too, and must be waited for through its own
// WaitN.
type keyedRequests interface {
	waitRequest(ctx context.Context, key string, n int, label string) error
	keyed() any
}

// prechecker is a RoundTripper that can tell, before a request waits for the
// limiter, that it would refuse it at once: breaker.Transport, or a Transport
// in front of one. Structural, so that this package need not import breaker.
type prechecker interface {
	Precheck(req *http.Request) error
}

// Check returns the mistake of configuration that RoundTrip would panic with,
// as an error, or nil: call it where the Transport is built, so that a
// mistake shows there rather than at the first request. It does not look at
// Cost, which RoundTrip checks for each request.
//
// A mistake in the Transport's own fields (see Transport), or a Base that
// is a nil pointer, gives an error whose message begins with "ratelimit:".
// Among the limiters, Check finds those of this package that were not made
// by their constructors (a zero TokenBucket, Keyed, Combined...), also
// inside a Tally's wrapper or Global, and asks a limiter of another package
// that has a method Check() error, as redislimit's Limiter and Handle have:
// its error is returned as it is. A limiter with no such method is taken as
// usable.
//
// Check looks down the chain of Bases in the order RoundTrip meets the
// mistakes: the fields of every Transport of this package in the chain first
// (RoundTrip looks at them before it waits), then whether the chain of the
// library's Transports goes on more than 64 long, then a Transport of this
// package whose Precheck panics as RoundTrip asks the end of that chain
// (behind adaptive.Transports, whose Precheck asks their Base's), then
// their limiters,
// outermost first, then the first Base that is not such a Transport. If
// that Base is a Transport of this library (breaker's, retry's,
// adaptive's), it is checked as its own Check does, and the chain under it
// too, each Transport in turn; the first Base that is none of them, if it
// has a method Check() error, is asked, its error returned as it is. A chain
// of the library's Transports more than 64 long is a mistake, which RoundTrip
// panics with before it takes anything: their Bases most likely lead back to
// one of them, round which RoundTrip would go for ever.
//
// A loop of Bases through a RoundTripper of the user's is not seen, by
// Check nor by RoundTrip: what comes after the user's Base is its own
// business. Its Check, asked here, must not ask the Check of a Transport
// above it: that would recurse until the stack overflowed, as RoundTrip
// would through its RoundTrip.
func (t *Transport) Check() error {
	var chain []*Transport
	for cur := t; ; {
		if len(chain) == maxNesting {
			return errors.New(errNesting)
		}
		if msg := cur.misuse(!isNil(cur.PerHost)); msg != "" {
			return errors.New(msg)
		}
		chain = append(chain, cur)
		next, ok := cur.Base.(*Transport)
		if !ok {
			break
		}
		cur = next // not nil: misuse refused a nil pointer
	}
	// A loop through the library's other Transports: RoundTrip panics
	// on it before it uses a limiter (see endOfChain).
	if httpx.ChainOver(chain[len(chain)-1].Base, len(chain)) {
		return errors.New(errNesting)
	}
	// The Precheck asked of the chain's end, before the wait, panics on
	// a mistake of a Transport of this package behind an adaptive one.
	if msg := precheckMisuse(chain[len(chain)-1].Base); msg != "" {
		return errors.New(msg)
	}
	// A limiter that is not usable panics at its first use: find it here,
	// where the Transport is built.
	for _, cur := range chain {
		if err := unusable(cur.Limiter); err != nil {
			return err
		}
		if err := unusable(cur.PerHost); err != nil {
			return err
		}
	}
	return httpx.CheckChain("ratelimit", chain[len(chain)-1].Base, len(chain))
}

// checkOwn is Check of t for a Transport of another package in front of it
// (see httpx.CheckChain): its fields, and those of the Transports of this
// package nested right under it, and a loop of Bases, which RoundTrip looks
// at before it uses a limiter (see endOfChain); then t's limiters. Their own limiters, and the
// Bases under them, are checked as the chain goes on.
func (t *Transport) checkOwn() error {
	for cur, depth := t, 0; ; depth++ {
		if depth == maxNesting {
			return errors.New(errNesting)
		}
		if msg := cur.misuse(!isNil(cur.PerHost)); msg != "" {
			return errors.New(msg)
		}
		next, ok := cur.Base.(*Transport)
		if !ok {
			if httpx.ChainOver(cur.Base, depth+1) {
				return errors.New(errNesting)
			}
			if msg := precheckMisuse(cur.Base); msg != "" {
				return errors.New(msg)
			}
			break
		}
		cur = next // not nil: misuse refused a nil pointer
	}
	if err := unusable(t.Limiter); err != nil {
		return err
	}
	return unusable(t.PerHost)
}

func init() {
	httpx.RegisterTransport("ratelimit", func(t *Transport) http.RoundTripper { return t.Base }, (*Transport).checkOwn)
}

// maxNesting bounds how deep Transports of this package may nest, one the
// Base of another: deeper, their Bases most likely lead back to one of them.
// It is the library's bound for any chain of its Transports.
const maxNesting = httpx.MaxChain

// errNesting is the panic of RoundTrip, and Check's error, for Transports
// nested deeper than maxNesting.
var errNesting = httpx.Nesting("ratelimit")

// A checker can say, before its first use, what is wrong with it: a limiter
// of another package (redislimit's Limiter and Handle), or a RoundTripper
// (breaker.Transport). Structural, so that this package need import neither.
type checker interface{ Check() error }

// A madeChecker is a limiter of this package: check panics if it was not
// made by its constructor.
type madeChecker interface{ check() }

// A wrapper is a limiter of this package around another one, the user's: a
// Tally's wrapper, or Global. It is usable if the limiter it holds is.
type wrapper interface{ wrapped() any }

// unusable returns what would make the limiter l panic at its first use, or
// nil: the panic of a limiter of this package not made by its constructor,
// or the error of the Check method of a limiter of another package. A
// wrapper is looked through.
func unusable(l any) error {
	for {
		if isNil(l) {
			return nil // the caller's to refuse, as RoundTrip and Middleware do
		}
		switch c := l.(type) {
		case wrapper:
			l = c.wrapped()
		case madeChecker:
			return httpx.Misuse(c.check)
		case checker:
			return c.Check()
		default:
			return nil
		}
	}
}

// misuse returns the panic of RoundTrip for t's fields, or "".
func (t *Transport) misuse(perHost bool) string {
	switch global := !isNil(t.Limiter); {
	case !perHost && !global:
		return "ratelimit: Transport with neither Limiter nor PerHost"
	case perHost && global:
		return "ratelimit: Transport with both Limiter and PerHost; nest two Transports to apply both"
	case global && t.Key != nil:
		return "ratelimit: Transport with Key but no PerHost"
	case t.Base != nil && isNil(t.Base):
		return fmt.Sprintf("ratelimit: Transport with a nil %T as Base", t.Base)
	}
	return ""
}

// Precheck returns Base's Precheck(req), if Base has that method, else nil:
// the error that a breaker behind Transport would refuse req with now. It
// lets a Transport in front of this one skip its wait for a request that
// would be refused anyway. It panics as RoundTrip does on a mistake of
// configuration (see Transport), so that the Transport in front takes
// nothing for a request that would panic here.
func (t *Transport) Precheck(req *http.Request) error {
	if msg := t.misuse(!isNil(t.PerHost)); msg != "" {
		panic(msg)
	}
	return precheck(endOfChain(t.Base), req)
}

// endOfChain returns the first Base down from base, the Base of a Transport,
// that is not a Transport of this package: through those nested under it,
// each checked as RoundTrip checks its own, and their nesting bounded. It
// panics, as RoundTrip does, on a mistake in one of them, or on a loop, also
// one that passes through the Transports of the library's other packages
// (which would bring the request back here, round and round, until the
// stack overflowed).
func endOfChain(base http.RoundTripper) http.RoundTripper {
	end, msg := chainEnd(base)
	if msg != "" {
		panic(msg)
	}
	return end
}

// chainEnd is endOfChain, which returns the panic instead, or "".
func chainEnd(base http.RoundTripper) (http.RoundTripper, string) {
	for depth := 1; ; depth++ {
		t, ok := base.(*Transport)
		if !ok {
			if httpx.ChainOver(base, depth) {
				return nil, errNesting
			}
			return base, ""
		}
		if depth == maxNesting {
			return nil, errNesting
		}
		if msg := t.misuse(!isNil(t.PerHost)); msg != "" {
			return nil, msg
		}
		base = t.Base
	}
}

// precheckMisuse returns the panic of the Precheck that RoundTrip asks of
// end, the end of its chain (see endOfChain), or "": through the
// adaptive.Transports whose Precheck asks their Base's (see
// httpx.PrecheckThrough), a Transport of this package reached so panics on
// its mistake, or on one of the Transports of this package nested under it,
// before the request takes an event. Check names it there.
func precheckMisuse(end http.RoundTripper) string {
	for range maxNesting { // a loop was refused before: bounded all the same
		if next, ok := httpx.PrecheckThrough(end); ok {
			end = next
			continue
		}
		t, ok := end.(*Transport)
		if !ok || t == nil {
			return ""
		}
		if msg := t.misuse(!isNil(t.PerHost)); msg != "" {
			return msg
		}
		var msg string
		if end, msg = chainEnd(t.Base); msg != "" {
			return msg
		}
	}
	return ""
}

// precheck is the Precheck of end, the end of a chain of Transports (see
// endOfChain), if it has one, else nil.
func precheck(end http.RoundTripper, req *http.Request) error {
	if p, ok := end.(prechecker); ok {
		return p.Precheck(req)
	}
	return nil
}

// RoundTrip waits for the limiter, then sends req through Base. See Transport
// for what it returns when the request cannot be sent, and for its panics.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	perHost := !isNil(t.PerHost)
	if msg := t.misuse(perHost); msg != "" {
		httpx.CloseBody(req)
		panic(msg)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	// From here user code runs (the request's ctx, Cost, Key, a Tally's
	// OnWait, a limiter of the user's): if it panics, the request is not
	// sent, and its body is closed as a RoundTripper must.
	sent := false
	defer func() {
		if !sent {
			httpx.CloseBody(req)
		}
	}()
	ctx := req.Context()
	// A done ctx fails first, even if the breaker behind would refuse too:
	// the caller's own error is the one it can act on.
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return nil, err
	}
	n := 1
	if t.Cost != nil {
		if n = t.Cost(req); n < 0 {
			panic(fmt.Sprintf("ratelimit: Transport's Cost returned %d; it must be at least 0", n))
		}
	}
	// The Transports nested under t are checked for every request, one
	// that takes nothing too: a loop of Bases would otherwise take it
	// round for ever, until the stack overflowed.
	end := endOfChain(base)
	if n > 0 && httpx.WellFormed(req) {
		// Not free, nor a request net/http will refuse to send (the
		// caller's bug): take n events first.
		if err := precheck(end, req); err != nil {
			return nil, err
		}
		if err := t.wait(ctx, req, n, perHost); err != nil {
			return nil, err
		}
	}
	sent = true
	return base.RoundTrip(req)
}

// wait waits for n events of req's limiter.
func (t *Transport) wait(ctx context.Context, req *http.Request, n int, perHost bool) error {
	if !perHost {
		return waitRequest(ctx, t.Limiter, n, "")
	}
	key := httpx.HostKey(req.URL)
	if t.Key != nil {
		key = t.Key(req)
	}
	if k, ok := t.PerHost.(keyedRequests); ok && k.keyed() == any(t.PerHost) {
		return k.waitRequest(ctx, key, n, key)
	}
	err := t.PerHost.WaitN(ctx, key, n)
	if !errors.Is(err, ErrWouldExceedDeadline) {
		return err
	}
	if said := saidDelay(ctx, err, key); said != nil {
		return said
	}
	// A type of the user's that embeds a *Keyed has its quiet Take: its
	// limiters' Tally counted the wait, and must not count the Take too.
	if q, ok := t.PerHost.(interface{ quietTakeKey(string, int) Decision }); ok {
		return deadlineError(q.quietTakeKey(key, n), key, err)
	}
	// A limiter whose Take waits (redislimit's: a round trip to Redis)
	// asks with the request's ctx: the caller may have gone meanwhile, or
	// the deadline passed, and the request must not wait on for Redis.
	if ct, ok := t.PerHost.(contextTaker); ok {
		d, terr := ct.TakeContext(ctx, key, n)
		return askedDelay(ctx, d, terr, key, err)
	}
	if tk, ok := t.PerHost.(KeyTaker); ok {
		return deadlineError(tk.Take(key, n), key, err)
	}
	return err
}

// quietTaker is a limiter of this package that a Tally may count: its quiet
// Take is its Take, counted by no Tally.
type quietTaker interface{ quietTake(n int) Decision }

// quietTake is l's Take, counted by no Tally of this package that l is or
// holds: the Take that follows a request's refused wait, which its Tally has
// counted already. A limiter that is not a Taker says only Allowed.
func quietTake(l Limiter, n int) Decision {
	switch t := l.(type) {
	case quietTaker:
		return t.quietTake(n)
	case Taker:
		return t.Take(n)
	}
	return Decision{Allowed: l.AllowN(n), Remaining: Unknown}
}

// waitRequest waits for n events of l for a request of Transport, limited
// under key ("" for Transport.Limiter). When l says at once that the deadline
// is too close, waitRequest asks it, with Take, how long the wait would be.
// Take may allow the events by then (a waiter ahead gave up): the request
// then goes ahead.
//
// One request is one decision: a Tally around l (or around the limiters of a
// Keyed whose handle l is) counts it once, as a wait, and the Take that
// follows a refused wait is part of it, not a decision of its own.
func waitRequest(ctx context.Context, l Limiter, n int, key string) error {
	if r, ok := l.(requestWaiter); ok {
		return r.waitRequest(ctx, n, key)
	}
	err := l.WaitN(ctx, n)
	if !errors.Is(err, ErrWouldExceedDeadline) {
		return err
	}
	if said := saidDelay(ctx, err, key); said != nil {
		return said
	}
	if _, ok := l.(Taker); ok {
		// A limiter whose Take waits (redislimit's Handle) is asked with
		// the request's ctx, as PerHost's is (see Transport.wait).
		d, terr := quietTakeContext(ctx, l, n)
		return askedDelay(ctx, d, terr, key, err)
	}
	return err
}

// contextTakerOne is a Limiter whose decision may wait (redislimit's Handle:
// a round trip to Redis), and can give up when the caller's ctx ends: the
// one-key form of contextTaker.
type contextTakerOne interface {
	TakeContext(ctx context.Context, n int) (Decision, error)
}

// quietCtxTaker is a wrapper of this package (a Tally's) around a limiter
// that may have a TakeContext.
type quietCtxTaker interface {
	quietTakeContext(ctx context.Context, n int) (Decision, error)
}

// quietTakeContext is quietTake, asked with ctx when l (or the limiter a
// Tally's wrapper holds) has a TakeContext: an error with the zero Decision
// then says that no decision was made.
func quietTakeContext(ctx context.Context, l Limiter, n int) (Decision, error) {
	switch t := l.(type) {
	case quietCtxTaker:
		return t.quietTakeContext(ctx, n)
	case contextTakerOne:
		return t.TakeContext(ctx, n)
	}
	return quietTake(l, n), nil
}

// saidDelay returns the error of a wait whose err, ErrWouldExceedDeadline,
// says the delay itself (redislimit's WaitN returns a *DeadlineError): the
// delay under key, the request's, or ctx.Err() if ctx ended as the limiter
// answered (the caller's own error, not a delay for a retry to honour); nil
// if err says none. A limiter that said it is not asked again: for
// redislimit's, that would be a second round trip, and while Redis fails a
// second failure, for one request.
func saidDelay(ctx context.Context, err error, key string) error {
	var de *DeadlineError
	if !errors.As(err, &de) || de.Delay <= 0 {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return &DeadlineError{Key: key, Delay: de.Delay}
}

// askedDelay is deadlineError for the answer (d, terr) of a TakeContext asked
// with ctx after the wait failed with err. An error with the zero Decision
// is no decision: if ctx has ended (redislimit's case), the caller's own
// error; else the wait's, as a refusal that tells no delay.
func askedDelay(ctx context.Context, d Decision, terr error, key string, err error) error {
	if terr != nil && d == (Decision{}) {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
	}
	return deadlineError(d, key, err)
}

// deadlineError turns err, the ErrWouldExceedDeadline of a wait, into a
// *DeadlineError with the delay that d, the decision of a Take for the same
// events, tells; or nil if d allowed them. A refusal without a positive
// delay tells nothing (a Keyed of limiters that are not Takers says 0): err
// is returned as it is.
func deadlineError(d Decision, key string, err error) error {
	switch {
	case d.Allowed:
		return nil
	case d.RetryAfter > 0:
		return &DeadlineError{Key: key, Delay: d.RetryAfter}
	}
	return err
}
