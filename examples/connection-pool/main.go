// Command connection-pool lends connections from a Pool, and shows both ways
// a broken connection leaves it.
//
// The pool checks an idle connection before lending it, but not one used a
// moment ago (HealthCheckSkip): so a connection the server dropped since its
// last use may still be lent, and the query on it fails. The query then says
// so, by returning an error that wraps pool.ErrBroken: With closes that
// connection instead of giving it back, and the caller tries again, on a
// fresh one.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/pool"
)

func main() { run(os.Stdout) }

// conn is a connection to a database that restarts at 1s and again at 1.5s,
// breaking the connections made before.
type conn struct {
	id   int
	made time.Time
}

// errReset is what a query on a connection that the server dropped returns.
var errReset = errors.New("connection reset by peer")

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	start := time.Now()
	restarts := []time.Time{start.Add(time.Second), start.Add(1500 * time.Millisecond)}
	// dropped reports whether the server has dropped c by now.
	dropped := func(c *conn) bool {
		now := time.Now()
		for _, r := range restarts {
			if c.made.Before(r) && !now.Before(r) {
				return true
			}
		}
		return false
	}
	next := 0

	p, err := pool.New(pool.Config[*conn]{
		New: func(context.Context) (*conn, error) {
			next++
			tl.Printf("   pool: dials connection %d", next)
			return &conn{id: next, made: time.Now()}, nil
		},
		Close: func(c *conn) error {
			tl.Printf("   pool: closes connection %d", c.id)
			return nil
		},
		HealthCheck: func(_ context.Context, c *conn) error {
			if dropped(c) {
				tl.Printf("   pool: connection %d fails its check (the server restarted)", c.id)
				return errReset
			}
			tl.Printf("   pool: connection %d passes its check", c.id)
			return nil
		},
		// A connection released less than 200ms ago is lent unchecked: it has
		// just been seen to work, but it may have broken since.
		HealthCheckSkip: 200 * time.Millisecond,
		MaxSize:         2,
	})
	if err != nil {
		panic(err)
	}
	defer func() {
		// Give the connections in use a moment to come back, then close.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tl.Printf("close: %v", err)
		}
	}()

	// exec runs one query on a connection from the pool.
	exec := func(ctx context.Context) error {
		return p.With(ctx, func(c *conn) error {
			if dropped(c) {
				tl.Printf("query on connection %d fails: %v", c.id, errReset)
				// Wrapped in ErrBroken, the error tells With to close this
				// connection rather than lend it again. (Config.Broken can
				// tell it from the driver's own errors instead.)
				return fmt.Errorf("%w: %w", pool.ErrBroken, errReset)
			}
			tl.Printf("query on connection %d", c.id)
			return nil
		})
	}
	query := func(at time.Duration) {
		time.Sleep(time.Until(start.Add(at)))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := exec(ctx)
		if errors.Is(err, pool.ErrBroken) {
			// The connection is gone; the query never ran: run it again, on
			// another connection (the pool checks an idle one, or dials).
			err = exec(ctx)
		}
		if err != nil {
			tl.Printf("query failed: %v", err)
		}
	}
	query(0)                      // dials
	query(100 * time.Millisecond) // reused at once: no check
	query(600 * time.Millisecond) // idle a while: checked, passes
	// The server restarts at 1s.
	query(1100 * time.Millisecond) // idle a while: checked, fails; a new one
	query(1400 * time.Millisecond) // idle a while: checked, passes
	// The server restarts at 1.5s.
	query(1550 * time.Millisecond) // used 150ms ago: lent unchecked; the query fails
	query(1600 * time.Millisecond) // used 50ms ago: no check, and it works
	s := p.Stats()
	tl.Printf("created %d, closed after a failed check %d, after a failed query %d, acquires %d",
		s.Created, s.ClosedHealth, s.ClosedDestroy, s.AcquireCount)
}

// A timeline prints the story one line per event, stamped with the time since
// it began, rounded to unit. The example's test runs it in a testing/synctest
// bubble, where time is virtual and the stamps exact. It is safe for
// concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

func newTimeline(w io.Writer, unit time.Duration) *timeline {
	return &timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
