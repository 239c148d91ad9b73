// Command cache-stampede puts a ctxsync.Flight and a ctxsync.Lazy in front of
// a slow backend, the way a service shields its database when a popular key
// expires and every request asks for it at once.
//
//   - 100 requests for one product at the same moment make one backend call,
//     and all 100 get its answer.
//
//   - A request that gives up (its client hung up, its deadline passed)
//     leaves at once without failing the others: the backend call goes on
//     for them. When every request has given up, the call's ctx is cancelled,
//     so the backend stops working for nobody.
//
//   - The service's settings are loaded once, with a Lazy: a failed load is
//     not kept, the next request tries again, and once loaded the settings
//     cost an atomic load per request.
//
//     go run ./examples/cache-stampede
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

// backend is a slow database: each load takes latency, or until the ctx of
// the load ends.
type backend struct {
	latency time.Duration
	calls   atomic.Int32
	tl      *timeline
}

func (b *backend) loadProduct(ctx context.Context, id int) (string, error) {
	b.calls.Add(1)
	select {
	case <-time.After(b.latency):
		return fmt.Sprintf("product %d: blue teapot, 12 EUR", id), nil
	case <-ctx.Done():
		b.tl.Printf("backend: load of product %d stopped: %v (nobody waits for it)", id, ctx.Err())
		return "", ctx.Err()
	}
}

// service answers requests for products through a Flight, so that the
// requests for one product that come while it is being loaded share the load.
type service struct {
	db       *backend
	products ctxsync.Flight[int, string]
	settings *ctxsync.Lazy[map[string]string]
}

func (s *service) product(ctx context.Context, id int) (string, bool, error) {
	v, err, shared := s.products.Do(ctx, id, func(ctx context.Context) (string, error) {
		// ctx is the call's own: it carries the values of the request that
		// started it, and ends only when every request has left.
		return s.db.loadProduct(ctx, id)
	})
	return v, shared, err
}

func run(w io.Writer) {
	tl := &timeline{w: w, start: time.Now()}
	db := &backend{latency: 100 * time.Millisecond, tl: tl}
	s := &service{db: db}

	fmt.Fprintln(w, "== 100 requests for product 42 at once")
	var wg sync.WaitGroup
	var served, sharedAnswers atomic.Int32
	for range 100 {
		wg.Go(func() {
			_, shared, err := s.product(context.Background(), 42)
			if err == nil {
				served.Add(1)
			}
			if shared {
				sharedAnswers.Add(1)
			}
		})
	}
	wg.Wait()
	tl.Printf("%d requests served, %d of them by a shared load; backend calls: %d",
		served.Load(), sharedAnswers.Load(), db.calls.Swap(0))

	fmt.Fprintln(w, "\n== a request that gives up does not cancel the others")
	impatient, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	wg.Go(func() {
		_, _, err := s.product(impatient, 7)
		tl.Printf("impatient request: %v", err)
	})
	wg.Go(func() {
		time.Sleep(10 * time.Millisecond) // comes a little later, and joins the load
		v, shared, err := s.product(context.Background(), 7)
		tl.Printf("patient request: %q, error %v, shared %v (the impatient one left without it)", v, err, shared)
	})
	wg.Wait()
	tl.Printf("backend calls: %d", db.calls.Swap(0))

	fmt.Fprintln(w, "\n== when every request gives up, the load is cancelled")
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(20+10*i)*time.Millisecond)
		defer cancel()
		wg.Go(func() {
			_, _, err := s.product(ctx, 9)
			tl.Printf("request %d: %v", i+1, err)
		})
	}
	wg.Wait()
	time.Sleep(time.Millisecond) // the backend's goroutine tells its story
	tl.Printf("backend calls: %d; loads in flight: %d", db.calls.Swap(0), s.products.Len())

	fmt.Fprintln(w, "\n== settings loaded once, and a failed load retried")
	attempts := 0
	s.settings = ctxsync.NewLazy(func(ctx context.Context) (map[string]string, error) {
		attempts++
		time.Sleep(50 * time.Millisecond)
		if attempts == 1 {
			return nil, errors.New("settings store unreachable")
		}
		return map[string]string{"currency": "EUR"}, nil
	})
	for i := range 4 {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 60 * time.Millisecond)
			cfg, err := s.settings.Get(context.Background())
			if err != nil {
				tl.Printf("request %d: settings: %v", i+1, err)
				return
			}
			tl.Printf("request %d: currency %s", i+1, cfg["currency"])
		})
	}
	wg.Wait()
	tl.Printf("settings loads: %d", attempts)
}

// A timeline prints one line per event, stamped with the milliseconds since
// the start. The example's test runs it in a testing/synctest bubble, where
// time is virtual and the stamps exact. It is safe for concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(10 * time.Millisecond).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
