// Package pool provides Pool, a generic pool of expensive resources
// (connections, clients, large buffers), with the habits of the best
// connection pools: health checks that skip resources just used (HikariCP),
// creation that outlives a caller who gives up (pgxpool), lifetimes with
// jitter, a minimum of idle resources made in the background, and a circuit
// breaker that stops a storm of attempts against a dead backend.
//
//	p, err := pool.New(pool.Config[*sql.Conn]{
//		New:         func(ctx context.Context) (*sql.Conn, error) { return db.Conn(ctx) },
//		Close:       (*sql.Conn).Close,
//		HealthCheck: func(ctx context.Context, c *sql.Conn) error { return c.PingContext(ctx) },
//		MaxSize:     10,
//		MaxLifetime: 30 * time.Minute,
//	})
//	...
//	err = p.With(ctx, func(c *sql.Conn) error { return use(c) })
//
// Waiters are served first in, first out, and every wait takes a context. A
// resource handed to a waiter whose context ends at that moment goes to the
// next waiter, or back to the pool: it is never lost. The pool never holds
// more than MaxSize resources, counting those being made and those being
// closed.
//
// For metrics, Stats is a snapshot of the gauges (idle, in use, waiting...)
// and counters (acquires, waits, closes by reason...), cheap enough to read at
// every scrape, and Config.Hooks are told of each event as it happens: how
// long an Acquire waited, how long New took. The modules extra/ctxsyncprom
// and extra/ctxsyncotel export both to Prometheus and OpenTelemetry.
//
// Time-based behaviour (lifetimes, idle times, the background sweep) runs on
// the monotonic clock, and inside a testing/synctest bubble on the bubble's
// virtual clock. A test that wants lifetimes to end at an exact time sets
// Config.MaxLifetimeJitter to NoLifetimeJitter.
package pool
