package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
)

// Config configures a Pool. New and MaxSize are required; every other field's
// zero value means its documented default, or off.
//
// The pool never holds its lock while it calls a function of Config, so each
// may use the pool. What happens when one panics is told at Pool.
type Config[T any] struct {
	// Name identifies the pool in metrics: Stats.Name, and the Name of
	// every AcquireEvent and CreateEvent, carry it, so that hooks made
	// before the pool (the metrics modules under extra/) and a collector
	// reading its Stats need not be given it again. Optional; the pool
	// itself never reads it.
	Name string

	// New makes a resource. Required. It runs in a goroutine of its own, with
	// the values of the context of the Acquire that asked for it but not its
	// cancellation: a caller that gives up returns at once, and the resource,
	// once made, joins the pool (pgx learned this the hard way). Close cancels
	// it. When it returns an error, the value returned beside it is dropped,
	// never given to Close, as Go's convention has it: a value returned with
	// an error may be half built, or closed already. A New that opened
	// something before it failed (a connection whose handshake failed)
	// closes it itself.
	New func(ctx context.Context) (T, error)

	// Close closes a resource the pool is done with. Optional. Its error is
	// counted in Stats.CloseErrors and otherwise dropped.
	Close func(T) error

	// HealthCheck reports whether an idle resource still works. Optional. It
	// runs when Acquire takes an idle resource that has not been used for
	// HealthCheckSkip, and in the background every HealthCheckPeriod. A
	// resource that fails it is closed and the next one tried. An Acquire
	// that gives up before its check has passed (its ctx ended, or a method
	// of its ctx panicked) hands the resource on still owed the check: the
	// waiter it goes to runs it.
	HealthCheck func(ctx context.Context, v T) error

	// Broken tells whether the resource whose value fn, given to With, has
	// just used is broken, from that value and fn's error (nil when fn
	// succeeded): With then closes it rather than give it back, so that it
	// never goes to the next caller. Optional; by default a resource is
	// broken when fn's error wraps ErrBroken or driver.ErrBadConn (the
	// signal of database/sql drivers), and kept otherwise: most errors (a
	// row not found, a request refused) say nothing about the resource.
	Broken func(v T, err error) bool

	// HealthCheckTimeout bounds each HealthCheck. 0 means 5 seconds.
	HealthCheckTimeout time.Duration

	// HealthCheckSkip spares a resource released this recently the check at
	// Acquire, as HikariCP does: it has just been seen to work. 0 means 500
	// milliseconds; NoHealthCheckSkip (or any negative value) checks every
	// time.
	HealthCheckSkip time.Duration

	// MaxSize is the most resources the pool holds, idle and in use. Required,
	// above 0.
	MaxSize int

	// MinIdle is the number of idle resources the pool keeps ready, making
	// them in the background. 0 means none. At most MaxSize.
	MinIdle int

	// MaxIdleTime closes resources idle for longer. 0 means never.
	MaxIdleTime time.Duration

	// MaxLifetime closes resources older than it, when they are released or
	// found idle, so that a fleet of connections renews itself (say, to follow
	// a database failover). Each resource's lifetime is shortened by a random
	// part of up to MaxLifetimeJitter of it, so that they do not all expire at
	// once. 0 means forever, and so does a lifetime that would end past the
	// clock's range (math.MaxInt64, say).
	MaxLifetime time.Duration

	// MaxLifetimeJitter is that part, between 0 and 1. 0 means 0.1, and
	// NoLifetimeJitter none: every lifetime is then exactly MaxLifetime, as a test
	// may want.
	MaxLifetimeJitter float64

	// HealthCheckPeriod is how often the pool checks its idle resources in
	// the background: HealthCheck, MaxIdleTime, MaxLifetime and MinIdle. 0
	// means one minute, when any of them is set. A period below a
	// millisecond (1 ns, a "1" read as a Duration) counts as a millisecond:
	// shorter, the sweeps would run back to back and keep a processor busy.
	// A period near math.MaxInt64 sweeps once, when the pool is made.
	HealthCheckPeriod time.Duration

	// Breaker, if not nil, guards the making of resources: while it is open
	// New is not called and Acquire fails with its *breaker.OpenError, so
	// that a dead backend is not hammered by a storm of attempts. If the
	// breaker's own functions (its Settings' OnCall, IsFailure or
	// OnStateChange) panic, or call runtime.Goexit, once New has made a
	// resource, that resource is given to Close, and the panic goes where a
	// panic of New would (see Pool), its error naming the Breaker's
	// Settings rather than New; a panic of that Close is counted in
	// Stats.CloseErrors, and does not replace the first (a Goexit of it,
	// which nothing can stop, does: the error then names Close). A Breaker
	// not made by breaker.New (the zero Breaker) is a bad Config: New
	// returns an error.
	Breaker *breaker.Breaker

	// LeakThreshold, if above 0, reports through OnLeak a resource held for
	// longer than it, with the stack of the goroutine that acquired it.
	LeakThreshold time.Duration

	// Hooks are told of the pool's events, for metrics. See Hooks.
	Hooks Hooks

	// OnLeak receives the reports of LeakThreshold. Required with it. It runs
	// in a goroutine of its own, without any lock of the pool held; a panic
	// there ends the program, as in any goroutine.
	OnLeak func(Leak)
}

// A Leak reports a resource held for longer than Config.LeakThreshold.
type Leak struct {
	Acquired time.Time     // when it was acquired
	Held     time.Duration // how long it had been held when reported
	Stack    string        // where it was acquired
}

// The -1s of a Config. As everywhere in the library, -1 means "none".
const (
	// NoLifetimeJitter, as Config.MaxLifetimeJitter, gives every resource a
	// lifetime of exactly Config.MaxLifetime.
	NoLifetimeJitter = -1.0
	// NoHealthCheckSkip, as Config.HealthCheckSkip, spares no resource the
	// HealthCheck: every checkout of an idle resource runs it.
	NoHealthCheckSkip time.Duration = -1
)

// minHealthCheckPeriod is the shortest Config.HealthCheckPeriod: a ticker
// faster than the sweep it drives has it run back to back, a processor
// spinning for a pool, and a HealthCheck per idle resource at every turn.
// A millisecond keeps the fast sweeps a test in real time may want.
const minHealthCheckPeriod = time.Millisecond

// errConfig is returned, wrapped, by New for a bad Config.
var errConfig = errors.New("pool: bad Config")

func (c *Config[T]) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errConfig}, args...)...)
	}
	switch {
	case c.New == nil:
		return bad("New is required")
	case c.MaxSize < 1:
		return bad("MaxSize is %d; it must be at least 1", c.MaxSize)
	case c.MinIdle < 0 || c.MinIdle > c.MaxSize:
		return bad("MinIdle is %d; it must be between 0 and MaxSize (%d)", c.MinIdle, c.MaxSize)
	case c.HealthCheckTimeout < 0, c.MaxIdleTime < 0, c.MaxLifetime < 0, c.HealthCheckPeriod < 0, c.LeakThreshold < 0:
		return bad("negative duration")
	case !(c.MaxLifetimeJitter >= 0 && c.MaxLifetimeJitter <= 1) && c.MaxLifetimeJitter != NoLifetimeJitter: // NaN too
		return bad("MaxLifetimeJitter is %v; it must be between 0 and 1, or NoLifetimeJitter", c.MaxLifetimeJitter)
	case c.LeakThreshold > 0 && c.OnLeak == nil:
		return bad("LeakThreshold needs OnLeak")
	case c.Breaker != nil && !breakerMade(c.Breaker):
		return bad("Breaker was not made by breaker.New")
	}
	if c.HealthCheckTimeout == 0 {
		c.HealthCheckTimeout = 5 * time.Second
	}
	if c.HealthCheckSkip == 0 {
		c.HealthCheckSkip = 500 * time.Millisecond
	}
	switch c.MaxLifetimeJitter {
	case 0:
		c.MaxLifetimeJitter = 0.1
	case NoLifetimeJitter:
		c.MaxLifetimeJitter = 0
	}
	if c.HealthCheckPeriod == 0 && c.background() {
		c.HealthCheckPeriod = time.Minute
	}
	if c.HealthCheckPeriod > 0 {
		c.HealthCheckPeriod = max(c.HealthCheckPeriod, minHealthCheckPeriod)
	}
	return nil
}

// breakerMade reports whether b was made by breaker.New. A Breaker that was
// not panics at its first use, which would come in the goroutine of a call
// to New, where nobody may be waiting to receive the panic. Execute under a
// ctx already done looks at b first, then calls nothing and counts nothing.
func breakerMade(b *breaker.Breaker) (made bool) {
	defer func() {
		if recover() != nil {
			made = false
		}
	}()
	_ = b.Execute(doneCtx, func(context.Context) error { return nil })
	return true
}

// doneCtx is a ctx that is done, made once, for breakerMade.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// background reports whether the pool needs its maintenance goroutine: for
// any of the settings HealthCheckPeriod names, or if asked for by a period.
func (c *Config[T]) background() bool {
	return c.HealthCheck != nil || c.MinIdle > 0 || c.MaxIdleTime > 0 || c.MaxLifetime > 0 ||
		c.HealthCheckPeriod > 0
}
