// Command timeouts puts time limits on concurrent work with package group.
//
// A timeout for the whole batch, as asyncio.wait_for or asyncio.timeout: the
// group's ctx carries a deadline; the calls still running see it end, and Map
// returns context.DeadlineExceeded.
//
// The same deadline with group.MapAll keeps the answers that came in time.
//
// A timeout for each task: each call gets a ctx of its own with a deadline,
// and one that runs out answers with a default value instead of failing the
// batch, so the slow ones cost no more than the limit.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/group"
)

func main() { run(os.Stdout) }

// A quote comes from a supplier after its latency.
type supplier struct {
	name    string
	latency time.Duration
	price   int
}

var suppliers = []supplier{
	{"acme", 80 * time.Millisecond, 120},
	{"globex", 300 * time.Millisecond, 95},
	{"initech", 40 * time.Millisecond, 130},
	{"umbrella", 500 * time.Millisecond, 90},
}

// quote asks a supplier for its price, and gives up when ctx ends.
func quote(ctx context.Context, tl *timeline, s supplier) (int, error) {
	select {
	case <-time.After(s.latency):
		tl.Printf("  %s quotes %d", s.name, s.price)
		return s.price, nil
	case <-ctx.Done():
		tl.Printf("  %s: gave up (%v)", s.name, ctx.Err())
		return 0, ctx.Err()
	}
}

func run(w io.Writer) {
	tl := newTimeline(w)
	ask := func(ctx context.Context, s supplier) (int, error) { return quote(ctx, tl, s) }

	tl.Println("The whole batch within 200ms:")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	prices, err := group.Map(ctx, suppliers, 0, ask)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		tl.Printf("no quotes in time: %v", err)
	} else {
		tl.Printf("quotes %v, %v", prices, err)
	}

	tl.Println("The whole batch within 200ms, keeping the quotes that came in time:")
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	prices, errs := group.MapAll(ctx, suppliers, 0, ask)
	cancel()
	for i, s := range suppliers {
		if errs != nil && errs[i] != nil {
			continue
		}
		tl.Printf("kept %s at %d", s.name, prices[i])
	}

	tl.Println("Each supplier within 200ms, or its list price of 150:")
	const listPrice = 150
	prices, err = group.Map(context.Background(), suppliers, 0, func(ctx context.Context, s supplier) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		p, err := ask(ctx, s)
		if errors.Is(err, context.DeadlineExceeded) {
			return listPrice, nil // the default on timeout
		}
		return p, err
	})
	tl.Printf("quotes %v, %v", prices, err)
	best := 0
	for i, p := range prices {
		if p < prices[best] {
			best = i
		}
	}
	tl.Printf("best: %s at %d", suppliers[best].name, prices[best])
}

// A timeline prints the story one line per event, stamped with the time since
// it began. The example's test runs it in a testing/synctest bubble, where
// time is virtual and the stamps exact. It is safe for concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newTimeline(w io.Writer) *timeline { return &timeline{w: w, start: time.Now()} }

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}

// Println prints a line without a stamp.
func (t *timeline) Println(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w, args...)
}
