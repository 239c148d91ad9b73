package adaptive_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// fakeClock is a Config.Clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Duration
}

func (c *fakeClock) now() time.Duration  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t += d; c.mu.Unlock() }

// acquire is Acquire, for the tests that keep their Tickets in a slice or
// send them on a channel.
func acquire(l *adaptive.Limiter, ctx context.Context) (*adaptive.Ticket, error) {
	return l.Acquire(ctx)
}

func mustPanic(t *testing.T, prefix string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		msg, _ := r.(string)
		if err, ok := r.(error); ok {
			msg = err.Error()
		}
		if !strings.HasPrefix(msg, prefix) {
			t.Fatalf("panic %v, want one beginning %q", r, prefix)
		}
	}()
	f()
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  adaptive.Config
		ok   bool
	}{
		{"zero", adaptive.Config{}, true},
		{"ones", adaptive.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, MaxWait: 1}, true},
		{"max", adaptive.Config{InitialLimit: adaptive.MaxLimit, MinLimit: adaptive.MaxLimit, MaxLimit: adaptive.MaxLimit}, true},
		{"above max", adaptive.Config{MaxLimit: adaptive.MaxLimit + 1}, false},
		{"maxint", adaptive.Config{MaxLimit: math.MaxInt}, false},
		{"negative min", adaptive.Config{MinLimit: -1}, false},
		{"negative max", adaptive.Config{MaxLimit: -1}, false},
		{"negative initial", adaptive.Config{InitialLimit: -1}, false},
		{"max below min", adaptive.Config{MinLimit: 10, MaxLimit: 5}, false},
		{"initial above max", adaptive.Config{InitialLimit: 6, MaxLimit: 5}, false},
		{"initial below min", adaptive.Config{InitialLimit: 2, MinLimit: 5}, false},
		{"min above default max", adaptive.Config{MinLimit: 5000}, true},
		{"nowait", adaptive.Config{MaxWait: adaptive.NoWait}, true},
		{"wait below nowait", adaptive.Config{MaxWait: -2}, false},
		{"wait minint", adaptive.Config{MaxWait: math.MinInt64}, false},
		{"wait maxint", adaptive.Config{MaxWait: math.MaxInt64}, true},
		{"algorithm -1", adaptive.Config{Algorithm: -1}, false},
		{"algorithm unknown", adaptive.Config{Algorithm: 99}, false},
		{"vegas", adaptive.Config{Algorithm: adaptive.Vegas}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "adaptive: ") {
					t.Fatalf("Validate() = %q, want the package's name first", err)
				}
				mustPanic(t, err.Error(), func() { adaptive.New(tc.cfg) })
				return
			}
			l := adaptive.New(tc.cfg)
			if lim := l.Limit(); lim < 1 || lim > adaptive.MaxLimit {
				t.Fatalf("Limit() = %d", lim)
			}
		})
	}
}

func TestZeroLimiterPanics(t *testing.T) {
	var l adaptive.Limiter
	for name, f := range map[string]func(){
		"Acquire":  func() { _, _ = l.Acquire(context.Background()) },
		"Limit":    func() { l.Limit() },
		"InFlight": func() { l.InFlight() },
		"Waiting":  func() { l.Waiting() },
		"Shed":     func() { l.Shed() },
		"Latency":  func() { l.Latency() },
		"Middleware": func() {
			adaptive.Middleware(&l)
		},
	} {
		t.Run(name, func(t *testing.T) { mustPanic(t, "adaptive: ", f) })
	}
	mustPanic(t, "adaptive: Middleware with nil Limiter", func() { adaptive.Middleware(nil) })
}

func TestAcquireMisuse(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	//lint:ignore SA1012 the nil Context is the point
	mustPanic(t, "adaptive: nil Context", func() { _, _ = l.Acquire(nil) }) //nolint:staticcheck
	tk, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(nil)
	mustPanic(t, "adaptive: Ticket finished twice", func() { tk.Done(nil) })
	mustPanic(t, "adaptive: Ticket finished twice", func() { tk.Ignore() })
	var zero adaptive.Ticket
	mustPanic(t, "adaptive: Done of a Ticket not from Limiter.Acquire", func() { zero.Done(nil) })
	mustPanic(t, "adaptive: Ignore of a Ticket not from Limiter.Acquire", func() { zero.Ignore() })
	if n := l.InFlight(); n != 0 {
		t.Fatalf("InFlight() = %d after misuse, want 0", n)
	}
}

func TestDoneCtxFailsWithFreeSlot(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if tk, err := acquire(l, ctx); err != context.Canceled || tk != nil {
		t.Fatalf("Acquire(cancelled) = %+v, %v; want no Ticket, context.Canceled", tk, err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	if _, err := l.Acquire(dctx); err != context.DeadlineExceeded {
		t.Fatalf("Acquire(expired) = %v, want context.DeadlineExceeded", err)
	}
	if l.InFlight() != 0 || l.Shed() != 0 {
		t.Fatalf("InFlight %d, Shed %d; want 0, 0", l.InFlight(), l.Shed())
	}
}

func fixed(n int, wait time.Duration) adaptive.Config {
	return adaptive.Config{InitialLimit: n, MinLimit: n, MaxLimit: n, MaxWait: wait}
}

func TestNoWaitSheds(t *testing.T) {
	l := adaptive.New(fixed(1, adaptive.NoWait))
	tk, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(context.Background()); err != adaptive.ErrShed {
		t.Fatalf("Acquire at the limit with NoWait = %v, want ErrShed", err)
	}
	if l.Shed() != 1 || l.Waiting() != 0 {
		t.Fatalf("Shed %d Waiting %d, want 1, 0", l.Shed(), l.Waiting())
	}
	tk.Ignore()
	tk, err = l.Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire after Ignore = %v", err)
	}
	tk.Ignore()
}

// TestFIFO: waiters are served in the order they came, and a newcomer queues
// behind them even when a slot is free for a moment.
func TestFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(fixed(1, time.Hour))
		first, _ := l.Acquire(context.Background())
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				tk, err := l.Acquire(context.Background())
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				tk.Ignore()
			})
			synctest.Wait() // queued in order
		}
		if w := l.Waiting(); w != 5 {
			t.Fatalf("Waiting() = %d, want 5", w)
		}
		first.Ignore()
		wg.Wait()
		for i, v := range order {
			if v != i {
				t.Fatalf("served in order %v, want 0..4", order)
			}
		}
	})
}

// TestMaxWaitSheds: a caller queued longer than MaxWait is shed then.
func TestMaxWaitSheds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(fixed(1, 10*time.Millisecond))
		tk, _ := l.Acquire(context.Background())
		start := time.Now()
		_, err := l.Acquire(context.Background())
		if err != adaptive.ErrShed || time.Since(start) != 10*time.Millisecond {
			t.Fatalf("Acquire = %v after %v, want ErrShed after 10ms", err, time.Since(start))
		}
		if l.Waiting() != 0 || l.Shed() != 1 {
			t.Fatalf("Waiting %d Shed %d, want 0 1", l.Waiting(), l.Shed())
		}
		tk.Ignore()
	})
}

// TestShedAtOnce: once latency is measured, a caller that would wait past
// MaxWait is shed without waiting at all.
func TestShedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(fixed(2, 10*time.Millisecond))
		// Calls of 100 ms: a window of them teaches the Limiter.
		for range 30 {
			a, _ := l.Acquire(context.Background())
			b, _ := l.Acquire(context.Background())
			time.Sleep(100 * time.Millisecond)
			a.Done(nil)
			b.Done(nil)
		}
		if l.Latency() != 100*time.Millisecond {
			t.Fatalf("Latency() = %v, want 100ms", l.Latency())
		}
		a, _ := l.Acquire(context.Background())
		b, _ := l.Acquire(context.Background())
		start := time.Now()
		if _, err := l.Acquire(context.Background()); err != adaptive.ErrShed || time.Since(start) != 0 {
			t.Fatalf("Acquire = %v after %v, want ErrShed at once", err, time.Since(start))
		}
		a.Done(nil)
		b.Done(nil)
	})
}

func TestCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(fixed(1, time.Hour))
		tk, _ := l.Acquire(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := l.Acquire(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Acquire = %v, want context.DeadlineExceeded", err)
		}
		if l.Shed() != 0 || l.Waiting() != 0 {
			t.Fatalf("Shed %d Waiting %d, want 0 0", l.Shed(), l.Waiting())
		}
		tk.Ignore()
		if l.InFlight() != 0 {
			t.Fatalf("InFlight %d, want 0", l.InFlight())
		}
	})
}

// TestGrantRacesCancel: a slot handed over as the waiter's ctx ends is kept or
// passed on, never lost, over many interleavings.
func TestGrantRacesCancel(t *testing.T) {
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			l := adaptive.New(fixed(1, time.Hour))
			tk, _ := l.Acquire(context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			type result struct {
				tk  *adaptive.Ticket
				err error
			}
			got := make(chan result, 2)
			go func() { w, err := acquire(l, ctx); got <- result{w, err} }()
			go func() { w, err := acquire(l, context.Background()); got <- result{w, err} }()
			synctest.Wait()
			go cancel()
			tk.Ignore()
			served := 0
			for range 2 {
				// The second waiter always gets the slot, after the first
				// or in its stead: if the slot were lost it would hang,
				// and the bubble report a deadlock.
				if r := <-got; r.err == nil {
					served++
					r.tk.Ignore()
				}
			}
			if served == 0 {
				t.Fatal("slot lost")
			}
			if l.InFlight() != 0 || l.Waiting() != 0 {
				t.Fatalf("InFlight %d Waiting %d, want 0 0", l.InFlight(), l.Waiting())
			}
		})
	}
}

func TestClockPanics(t *testing.T) {
	var bad bool
	cfg := fixed(1, adaptive.NoWait)
	cfg.Clock = func() time.Duration {
		if bad {
			panic("clock")
		}
		return 0
	}
	l := adaptive.New(cfg)
	bad = true
	mustPanic(t, "clock", func() { _, _ = l.Acquire(context.Background()) })
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after a Clock panic in Acquire, want 0", l.InFlight())
	}
	bad = false
	tk, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bad = true
	mustPanic(t, "clock", func() { tk.Done(nil) })
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after a Clock panic in Done, want 0", l.InFlight())
	}
	mustPanic(t, "adaptive: Ticket finished twice", func() { tk.Ignore() })
}

// TestClockCallsBack: a Clock that calls the Limiter's gauges does not
// deadlock: it runs outside the lock.
func TestClockCallsBack(t *testing.T) {
	var l *adaptive.Limiter
	l = adaptive.New(adaptive.Config{Clock: func() time.Duration { return time.Duration(l.InFlight() + l.Waiting() + l.Limit()) }})
	tk, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(errors.New("overload"))
}

func TestBubbles(t *testing.T) {
	outside := adaptive.New(adaptive.Config{})
	tk, _ := outside.Acquire(context.Background())
	tk.Done(nil)
	var inside *adaptive.Limiter
	synctest.Test(t, func(t *testing.T) {
		inside = adaptive.New(fixed(1, time.Hour))
		for _, l := range []*adaptive.Limiter{outside, inside} {
			tk, err := l.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			tk.Done(nil)
		}
		// A wait inside the bubble, on the Limiter made outside it.
		a, _ := inside.Acquire(context.Background())
		done := make(chan struct{})
		go func() {
			b, err := inside.Acquire(context.Background())
			if err == nil {
				b.Ignore()
			}
			close(done)
		}()
		synctest.Wait()
		a.Ignore()
		<-done
	})
	// After the bubble: the one made inside goes on, queue and all.
	a, err := inside.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		b, err := inside.Acquire(context.Background())
		if err == nil {
			b.Done(nil)
		}
		close(done)
	}()
	for inside.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	a.Done(nil)
	<-done
}

// TestHugeMaxWait: MaxWait near math.MaxInt64 waits as long as the ctx
// allows, with no timer whose deadline would wrap.
func TestHugeMaxWait(t *testing.T) {
	for _, wait := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, 100*365*24*time.Hour - 1} {
		synctest.Test(t, func(t *testing.T) {
			l := adaptive.New(fixed(1, wait))
			tk, _ := l.Acquire(context.Background())
			got := make(chan error, 1)
			go func() {
				w, err := l.Acquire(context.Background())
				if err == nil {
					w.Ignore()
				}
				got <- err
			}()
			time.Sleep(1000 * time.Hour)
			synctest.Wait()
			if l.Waiting() != 1 {
				t.Fatalf("MaxWait %v: Waiting() = %d after 1000h, want 1", wait, l.Waiting())
			}
			tk.Ignore()
			if err := <-got; err != nil {
				t.Fatalf("MaxWait %v: Acquire = %v", wait, err)
			}
		})
	}
}
