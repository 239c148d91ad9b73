package adaptive_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// TestNilTicket: Done and Ignore of a nil *Ticket panic naming the package.
func TestNilTicket(t *testing.T) {
	var p *adaptive.Ticket
	mustPanic(t, "adaptive: Done of nil Ticket", func() { p.Done(nil) })
	mustPanic(t, "adaptive: Ignore of nil Ticket", func() { p.Ignore() })
}

// TestCancelledBeforeTheSlotIsFreed: a queued caller whose ctx ended before
// a slot came free never gets it; the caller behind it does.
func TestCancelledBeforeTheSlotIsFreed(t *testing.T) {
	for _, wait := range []time.Duration{time.Hour, math.MaxInt64} {
		synctest.Test(t, func(t *testing.T) {
			l := adaptive.New(fixed(1, wait))
			holder, _ := l.Acquire(context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				tk, err := l.Acquire(ctx)
				if err == nil {
					tk.Ignore()
				}
				first <- err
			}()
			synctest.Wait()
			second := make(chan error, 1)
			go func() {
				tk, err := l.Acquire(context.Background())
				if err == nil {
					tk.Ignore()
				}
				second <- err
			}()
			synctest.Wait()
			// Both in one go, with neither waiter running between: the
			// first's ctx ends strictly before the slot is freed.
			cancel()
			holder.Ignore()
			if err := <-first; err != context.Canceled {
				t.Fatalf("MaxWait %v: cancelled caller's Acquire = %v, want context.Canceled", wait, err)
			}
			if err := <-second; err != nil {
				t.Fatalf("MaxWait %v: second caller's Acquire = %v, want a Ticket", wait, err)
			}
			if n, w := l.InFlight(), l.Waiting(); n != 0 || w != 0 {
				t.Fatalf("InFlight %d Waiting %d, want 0 0", n, w)
			}
		})
	}
}

// TestLimitRisesUnderWaiters: a Done that raises the limit hands the slots it
// adds to the callers queued, at once.
func TestLimitRisesUnderWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{}
		l := adaptive.New(adaptive.Config{InitialLimit: 1, MaxLimit: 10, MaxWait: time.Hour, Clock: clk.now})
		a, _ := l.Acquire(context.Background())
		got := make(chan int, 3)
		finish := make([]chan struct{}, 3)
		for i := range finish {
			finish[i] = make(chan struct{})
			go func() {
				tk, err := l.Acquire(context.Background())
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				got <- i
				<-finish[i]
				tk.Done(nil)
			}()
			synctest.Wait()
		}
		clk.add(10 * time.Millisecond)
		a.Done(nil) // the window's first latency; the slot goes to waiter 0
		synctest.Wait()
		if i := <-got; i != 0 || len(got) != 0 {
			t.Fatalf("served %d (and %d more), want waiter 0 alone", i, len(got))
		}
		// Waiter 0 finishes after more than a second: its Done closes the
		// window (the longest a window lasts), which raises the limit to
		// 2, and waiters 1 and 2 are served at once.
		clk.add(1200 * time.Millisecond)
		close(finish[0])
		synctest.Wait()
		if lim := l.Limit(); lim != 2 {
			t.Fatalf("Limit() = %d, want 2", lim)
		}
		if n := len(got); n != 2 {
			t.Fatalf("%d waiters served after the limit rose, want 2", n)
		}
		close(finish[1])
		close(finish[2])
	})
}

// TestClockAtTheExtremes: a Clock that reads the extremes of a Duration, or
// jumps between them, neither panics nor moves the limit out of its bounds.
func TestClockAtTheExtremes(t *testing.T) {
	readings := []time.Duration{math.MaxInt64, math.MinInt64, 0, math.MaxInt64, -1, math.MinInt64 + 1, math.MaxInt64 - 1}
	var i int
	l := adaptive.New(adaptive.Config{InitialLimit: 5, MinLimit: 2, MaxLimit: 8, Clock: func() time.Duration {
		i++
		return readings[i%len(readings)]
	}})
	for range 1000 {
		tk, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tk.Done(nil)
	}
	if lim := l.Limit(); lim < 2 || lim > 8 {
		t.Fatalf("Limit() = %d, want within 2..8", lim)
	}
	if lat := l.Latency(); lat < 0 || lat > time.Hour {
		t.Fatalf("Latency() = %v, want within 0..1h", lat)
	}
}

// TestClockWrapIsNoLatency: a Ticket started at a reading near
// math.MaxInt64 and finished at one near math.MinInt64 (a Clock that went
// back, or across the edge of a bubble) took no measurable time: the
// difference wraps to a few ms, which was taken for its latency.
func TestClockWrapIsNoLatency(t *testing.T) {
	var end time.Duration = math.MinInt64
	starting := true
	l := adaptive.New(adaptive.Config{Clock: func() time.Duration {
		if starting {
			return math.MaxInt64
		}
		end += 10 * time.Millisecond
		return end
	}})
	for range 100 {
		starting = true
		tk, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		starting = false
		tk.Done(nil)
	}
	if lat := l.Latency(); lat != 0 {
		t.Fatalf("Latency() = %v from wrapped readings, want 0 (nothing measured)", lat)
	}
}

// brokenCtx's Done is closed but its Err is nil, against the Context
// contract.
type brokenCtx struct{ context.Context }

func (brokenCtx) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }
func (brokenCtx) Err() error            { return nil }

// TestBrokenCtx: a ctx whose Done is closed while its Err is nil makes
// Acquire fail with context.Canceled; it returned no Ticket and no error,
// which a caller would take for a Ticket.
func TestBrokenCtx(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	if _, err := l.Acquire(brokenCtx{context.Background()}); err != context.Canceled {
		t.Fatalf("Acquire(broken ctx) = %v, want context.Canceled", err)
	}
	if n := l.InFlight(); n != 0 {
		t.Fatalf("InFlight() = %d, want 0", n)
	}
}
