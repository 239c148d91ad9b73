package retry

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// errRetriedStatus marks, inside a hedged send, an attempt whose response
// has a status that Transport retries: a failure to the hedging, which
// waits for the copies in flight, and a response to Transport.
var errRetriedStatus = errors.New("retry: retried status")

// sendAttempt makes one attempt of Transport's: one send, or, with a Hedge,
// a hedged group of sends. first is whether it is the request's first
// attempt, which counts a call in the Hedge's Budget (unless the Policy's
// Budget, the same, has counted it already). sent is set as soon as Base
// returns, for the attempt or a copy of it: a panic after that is not a
// mistake met before the request was sent (see Transport.RoundTrip).
//
// retry reports whether resp is one that Transport retries (see retried).
func (t *Transport) sendAttempt(ctx context.Context, base http.RoundTripper, r *http.Request, timeout time.Duration, first bool, sent *atomic.Bool) (resp *http.Response, retry bool, err error) {
	h := t.Hedge
	if h == nil {
		resp, err = send(ctx, base, r, timeout)
		sent.Store(true)
		return resp, err == nil && resp != nil && t.retried(resp), err
	}
	if first && h.Budget != t.Policy.Budget {
		h.Budget.deposit()
	}
	var n atomic.Int32
	var release context.CancelFunc
	// base hands r's body over for the attempt (see Transport.RoundTrip),
	// if it has one.
	attempt, withBody := base.(handing)
	if withBody {
		base = attempt.base
	}
	resp, release, err = hedged(ctx, h, func(actx context.Context) (*http.Response, error) {
		rr := r
		via := base
		if withBody {
			var own handing
			if n.Add(1) == 1 {
				// The first copy sends r's body, which it takes over from
				// the attempt: the attempt may end (another copy won)
				// before this one reaches base, and must then leave the
				// body to it. If the attempt took it first, and closed it,
				// nobody waits for this copy.
				if !attempt.take() {
					return nil, errAttemptOver
				}
				own = newHanding(base, r.Body)
			} else {
				// A copy sends a body of its own: the first may still be
				// reading r's. replayable let only requests with GetBody
				// here.
				body, err := r.GetBody()
				if err != nil {
					return nil, err
				}
				rr = new(http.Request)
				*rr = *r
				rr.Body = body
				own = newHanding(base, body)
			}
			// The body is the copy's to close until base has it: the
			// caller's ctx may panic as the copy's timeout is made from
			// it.
			via = own
			defer own.closeUnlessTaken()
		}
		resp, err := send(actx, via, rr.WithContext(actx), timeout)
		sent.Store(true)
		switch {
		case err != nil && cannotSucceed(rr, err):
			return nil, Permanent(err)
		case err != nil:
			return nil, err
		case resp == nil:
			return nil, Permanent(errNoResponse)
		case t.retried(resp):
			return resp, errRetriedStatus
		}
		return resp, nil
	}, discard)
	if err == errRetriedStatus {
		err, retry = nil, true
	}
	var p *permanentError
	if errors.As(err, &p) {
		err = p.err // RoundTrip decides again, as for a send unhedged
	}
	if resp != nil && resp.Body != nil {
		// The attempt's ctx lives as long as the body is read.
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: release}
	} else {
		release()
	}
	return resp, retry, err
}

// retried reports whether Transport retries resp: as RetryResponse says,
// or, if it is nil, for the statuses 429, 502, 503 and 504.
//
// A panic in RetryResponse closes resp's body on its way to the caller: no
// one else holds the response yet.
func (t *Transport) retried(resp *http.Response) bool {
	if t.RetryResponse == nil {
		return retriedStatus(resp.StatusCode)
	}
	done := false
	defer func() {
		if !done && resp.Body != nil {
			_ = resp.Body.Close()
		}
	}()
	again := t.RetryResponse(resp)
	done = true
	return again
}
