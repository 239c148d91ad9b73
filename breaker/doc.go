// Package breaker provides a circuit breaker: it stops calls to a dependency
// that keeps failing, so that callers fail fast instead of piling up behind
// it, and probes the dependency back to health.
//
//	b := breaker.New(breaker.Settings{Name: "payments"})
//	err := b.Execute(ctx, func(ctx context.Context) error {
//		return client.Charge(ctx, order)
//	})
//	if errors.Is(err, breaker.ErrOpen) {
//		// refused at once: the payments service is down
//	}
//
// A Breaker is closed, open or half-open. Closed, it lets calls through and
// watches their outcomes; its rules (consecutive failures, a failure rate, a
// slow-call rate, over a window of recent calls) open it. Open, it refuses
// calls with an *OpenError until its open time is up; the open time can grow
// with each consecutive opening, with jitter. Then it is half-open: a few
// trial calls go through, and their outcomes close it or open it again.
// Nothing runs in the background: every change happens in a call, or when
// State, Counts or Metrics finds that the open time is up.
//
// Each outcome is a failure, a success, or ignored: by default a canceled
// context is ignored, since the caller gave up and the dependency is not at
// fault. A panic is a failure, and goes on.
//
// A call that succeeds while the breaker is closed costs no lock, no clock read
// and no allocation, unless slow-call tracking or a time-based window asks for
// the clock. Changes of state are reported to OnStateChange outside the
// breaker's lock and in order, so a callback may call the breaker.
//
// For metrics, Metrics is a snapshot of the state and counts, and
// Settings.OnCall is told of each call's outcome and duration as it ends; the
// modules extra/ctxsyncprom and extra/ctxsyncotel export both.
//
// Transport gives an http.Client one breaker per host; ratelimit.Transport's
// documentation says how to nest it with a limiter and retries.
//
// The breaker reads the monotonic clock, and inside a testing/synctest bubble
// the bubble's virtual clock, so code that uses it can be tested without
// sleeping.
package breaker
