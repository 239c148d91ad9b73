// Command connection-pool lends connections from a Pool that checks an idle
// connection before lending it (unless it was used a moment ago), closes those
// that fail the check, and makes new ones in their place.
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

// conn is a connection to a database that restarts at 1s, breaking the
// connections made before.
type conn struct {
	id   int
	made time.Time
}

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	start := time.Now()
	restart := start.Add(time.Second)
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
			if c.made.Before(restart) && time.Now().After(restart) {
				tl.Printf("   pool: connection %d fails its check (the server restarted)", c.id)
				return errors.New("connection reset by peer")
			}
			tl.Printf("   pool: connection %d passes its check", c.id)
			return nil
		},
		HealthCheckSkip: 200 * time.Millisecond, // used this recently: no check
		MaxSize:         2,
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	query := func(at time.Duration) {
		time.Sleep(time.Until(start.Add(at)))
		err := p.With(context.Background(), func(c *conn) error {
			tl.Printf("query on connection %d", c.id)
			return nil
		})
		if err != nil {
			tl.Printf("query failed: %v", err)
		}
	}
	query(0)                      // dials
	query(100 * time.Millisecond) // reused at once: no check
	query(600 * time.Millisecond) // idle a while: checked, passes
	query(1500 * time.Millisecond)
	query(1600 * time.Millisecond)
	s := p.Stats()
	tl.Printf("created %d, closed after a failed check %d, acquires %d", s.Created, s.ClosedHealth, s.AcquireCount)
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
