// Package adaptive bounds the calls in flight to a service by a limit that
// finds itself: it measures the latency of the calls that succeed and counts
// those that fail from overload, and moves the limit (see Algorithm) so that
// the service is kept busy without queueing. Calls past the limit wait a
// little, first in, first out, and the rest are shed at once with ErrShed, so
// that under a burst of three times its capacity a service goes on answering
// what it can within its clients' deadlines instead of drowning.
//
//	lim := adaptive.New(adaptive.Config{})
//	t, err := lim.Acquire(ctx)
//	if err != nil {
//		return err // ErrShed, or ctx.Err()
//	}
//	resp, err := callTheService(ctx)
//	t.Done(err) // a success's latency, or a failure from overload
//
// Middleware puts a Limiter in front of an HTTP handler (shed requests are
// answered 503 with Retry-After), and Transport in an http.Client. Limit,
// InFlight, Waiting, Shed and Latency are gauges for metrics.
//
// A Config whose fields are wrong is a programming error: New panics with a
// message beginning with "adaptive:", and Config.Validate returns the same
// complaint as an error for a Config read from outside the program.
package adaptive
