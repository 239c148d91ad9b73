// Package retry runs a call again when it fails, waiting longer between
// attempts each time (exponential backoff with jitter), and stops as soon as
// going on cannot help: the error is permanent, the attempts or the time are
// used up, the next wait would outlast the caller's deadline, or a shared
// Budget says retries are already multiplying the load on a dependency that
// is down.
//
//	p := retry.Policy{MaxAttempts: 5, MaxDelay: 2 * time.Second}
//	user, err := retry.Do(ctx, p, func(ctx context.Context) (User, error) {
//		return client.GetUser(ctx, id)
//	})
//	var rerr *retry.Error
//	if errors.As(err, &rerr) {
//		log.Printf("gave up after %d attempts (%v): %v", rerr.Attempts, rerr.Reason, rerr.Last)
//	}
//
// A Policy is a plain value: share it, copy it, keep it in a package
// variable. Its zero value retries twice (three attempts in all) with full
// jitter from 100ms doubling to 10s.
//
// What is retried: every error except those marked with Permanent, the
// ErrClosed of a ctxsync.Queue or a pool.Pool (neither opens again; found
// as errors.Is finds it, wrapped, joined or matched by an error's Is
// method), and the caller's own context errors (once the caller's ctx has
// ended, nothing is retried). Policy.Retryable narrows that further. An attempt cut short by
// Policy.AttemptTimeout is retried: the caller's ctx still has time.
//
// How long it waits: an error that has a method RetryAfter() time.Duration
// (a breaker.OpenError, or an HTTP 429 or 503 with Retry-After seen through
// Transport) makes the next wait at least that long, even beyond MaxDelay,
// since the server knows best when it will be back. No wait is started that
// would end at or after ctx's deadline or Policy.MaxElapsed, leaving no time
// for the attempt: Execute then returns the last error at once, instead of
// sleeping only to fail. Nor is one that an error asks for beyond
// Policy.MaxRetryAfter (10s by default): a breaker open for half a minute,
// or a server that asks for an hour, fails the call now, with that error,
// rather than hold it.
//
// Transport brings the same to an http.Client: idempotent requests that meet
// a transport error or a 429, 502, 503 or 504 are sent again, but not
// after a transport error that no retry can cure (a server certificate that
// did not verify, a request net/http refuses to send: see Transport). The
// Retry-After of a 429 or a 503 is honoured; that of a 502 or a 504 is not,
// since RFC 9110 and RFC 6585 give it a meaning on the first two only.
//
// Retries may look at what succeeded, too: DoIf retries a result its
// predicate rejects, Transport.RetryResponse a response, and DelayFunc on a
// Policy or a Transport chooses the waits.
//
// A call that is slow, rather than failed, is better answered by a copy sent a
// little later (a hedge) than by waiting: DoHedged, and Transport.Hedge for
// requests that are safe to send twice. The first success wins and the others'
// ctxs are cancelled; a shared Budget caps the copies to a share of the calls,
// so that hedging never multiplies the load on a service that is slow for
// everyone, and a hedge it refuses leaves the attempts in flight alone. With
// Hedge.Delay 0, the delay follows the latency of recent calls (about their
// 94th percentile) without reading the clock on the way of a call.
//
// Nothing runs in the background: a call that succeeds at once allocates
// nothing and reads no clock (unless MaxElapsed is set; with a Budget, one
// call in 64 does), a failed attempt allocates nothing either, and the waits
// of a call share one timer, stopped before Execute returns. Waits read the
// clock, and inside a testing/synctest bubble the bubble's virtual clock, so
// code that retries can be tested without sleeping.
package retry
