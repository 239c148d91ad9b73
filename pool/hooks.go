package pool

import (
	"strconv"
	"time"
)

// Hooks are told of the pool's events as they happen, for metrics: a
// histogram of the time Acquires wait, say, which Stats, a snapshot, cannot
// give. The modules under extra/ fill them in for Prometheus and
// OpenTelemetry; a user may set them too.
//
// Every hook is optional; a hook left nil costs nothing, and with every hook
// nil the pool reads the clock and allocates no more than without them.
// Hooks run without any lock of the pool held, in the goroutine where the
// event happened: the caller's (Acquire, Release, Destroy, With, Close), or
// the pool's own (calls to New, the background health checks and sweep). So
// they must be quick and safe for concurrent use, and they may call the pool
// (Stats, say). A hook that panics leaves the pool whole (the resource an
// Acquire was about to return is released first), and the panic goes on in
// that goroutine: in the pool's own, it ends the program, as the panic of a
// function of Config there does (see Pool). OnCreate always runs there.
//
// A hook that calls Close is as a function of Config that does (see Close):
// Close waits for what the hook's goroutine holds (the resource OnAcquire's
// Acquire is about to return), or for that goroutine to end (the sweep's),
// and so returns only when its ctx ends.
//
// The events of one resource may be told out of order: the Acquire handed
// a resource fresh from New may tell OnAcquire, and even Destroy it and
// tell OnClose, before the goroutine that made it tells OnCreate; and a
// resource made after Close is closed, and told to OnClose, before its
// OnCreate, which waits until its place is free so that it may call Close.
type Hooks struct {
	// OnAcquire is told of every Acquire when it returns, and of every
	// TryAcquire that returned a resource. An Acquire that panics with the
	// panic of the call to New made for it is told too, before it panics,
	// with Err the error it panics with: it waited, as every Acquire that
	// Stats.WaitDuration counts. One whose HealthCheck panicked is not.
	OnAcquire func(AcquireEvent)

	// OnCreate is told of every call to Config.New when it ends, or of the
	// refusal of Config.Breaker in its stead, in the goroutine that made
	// the call, once the resource or the error has gone to the Acquire it
	// was made for: that Acquire may return before its OnCreate is told.
	OnCreate func(CreateEvent)

	// OnRelease is told of every Release that gave a resource back to the
	// pool, to a waiting Acquire or to the idle ones. A resource that
	// Release closes instead (past MaxLifetime, or the pool closed) is told
	// to OnClose only. The resource that an Acquire whose OnAcquire
	// panicked gives back is told here too.
	OnRelease func()

	// OnClose is told of every resource the pool closes, and why, once
	// Config.Close has returned and the resource's place is free: when the
	// pool closes several at once (Close, the sweep), once every one of
	// them is closed, so that a hook that calls Close does not wait for
	// the others.
	OnClose func(CloseReason)

	// OnHealthCheckFail is told of every HealthCheck that failed, with its
	// error, at Acquire or in the background, once the resource is closed
	// (and OnClose told), its place free: even one closed for the pool's
	// Close meanwhile. A check that panicked, or called runtime.Goexit,
	// is told with an error that says so. A check at Acquire that fails as the Acquire's ctx ends is
	// not told: it may have failed for that, and its resource goes back;
	// nor is a background check that fails with the cancellation of its
	// ctx by Close, whose resource is closed for ClosedPool.
	OnHealthCheckFail func(error)
}

// An AcquireEvent tells how an Acquire went.
type AcquireEvent struct {
	// Name is the pool's Config.Name: hooks shared by several pools, or
	// made before the pool, tell them apart by it.
	Name string

	// Waited reports that the Acquire found the pool empty and waited, for
	// a Release or for a new resource: then Wait is how long, from queueing
	// to being served or giving up. Otherwise Wait is 0, and no clock was
	// read for it.
	Waited bool
	Wait   time.Duration

	// Err is nil if the Acquire returned a resource; else its error:
	// ctx.Err(), ErrClosed, or that of Config.New or of the breaker.
	Err error
}

// A CreateEvent tells how a call to Config.New went.
type CreateEvent struct {
	Name     string        // the pool's Config.Name, as in AcquireEvent
	Duration time.Duration // how long New took
	Err      error         // its error; nil if it made a resource
	// Refused reports that New was not called, Config.Breaker having
	// refused the call: Err is the breaker's *breaker.OpenError; or, when
	// Close came as the call was about to be made, ctx.Err() of its
	// cancelled ctx (a breaker does not call a function with a done ctx).
	Refused bool
}

// A CloseReason is why the pool closed a resource.
type CloseReason int

// The reasons, each counted in the Stats field of the same name.
const (
	ClosedIdle     CloseReason = iota + 1 // idle for longer than MaxIdleTime
	ClosedLifetime                        // older than MaxLifetime
	ClosedHealth                          // failed HealthCheck
	ClosedDestroy                         // by Resource.Destroy, or by With for a broken one
	ClosedPool                            // by Pool.Close
)

var closeReasons = [...]string{
	ClosedIdle:     "idle",
	ClosedLifetime: "lifetime",
	ClosedHealth:   "health",
	ClosedDestroy:  "destroy",
	ClosedPool:     "pool",
}

// String returns the reason as a word fit for a metric's label: "idle",
// "lifetime", "health", "destroy" or "pool".
func (r CloseReason) String() string {
	if r > 0 && int(r) < len(closeReasons) {
		return closeReasons[r]
	}
	return "CloseReason(" + strconv.Itoa(int(r)) + ")"
}

// count charges the Stats counter of reason. p.q must be locked.
func (s *Stats) count(reason CloseReason) {
	switch reason {
	case ClosedIdle:
		s.ClosedIdle++
	case ClosedLifetime:
		s.ClosedLifetime++
	case ClosedHealth:
		s.ClosedHealth++
	case ClosedDestroy:
		s.ClosedDestroy++
	case ClosedPool:
		s.ClosedPool++
	}
}
