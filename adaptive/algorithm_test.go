package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

var algorithms = []adaptive.Algorithm{adaptive.Default, adaptive.AIMD, adaptive.Vegas, adaptive.Gradient2}

// drive runs rounds of calls on a fake clock: each round takes the whole
// limit (at most 5000 calls), lets latency(n) pass, and finishes them all,
// failed from overload if fail says so. It returns the limit after each round.
func drive(t *testing.T, l *adaptive.Limiter, clk *fakeClock, rounds int, latency func(n int) time.Duration, fail func(n int) bool) []int {
	t.Helper()
	var limits []int
	tks := make([]*adaptive.Ticket, 0, 5000)
	for range rounds {
		n := min(l.Limit(), 5000)
		tks = tks[:0]
		for range n {
			tk, err := acquire(l, context.Background())
			if err != nil {
				t.Fatalf("Acquire with %d of %d in flight = %v", l.InFlight(), l.Limit(), err)
			}
			tks = append(tks, tk)
		}
		clk.add(latency(n))
		var err error
		if fail != nil && fail(n) {
			err = errors.New("overloaded")
		}
		for _, tk := range tks {
			tk.Done(err)
		}
		limits = append(limits, l.Limit())
	}
	return limits
}

func newDriven(alg adaptive.Algorithm, init, lo int) (*adaptive.Limiter, *fakeClock) {
	clk := &fakeClock{}
	return adaptive.New(adaptive.Config{Algorithm: alg, InitialLimit: init, MinLimit: lo, Clock: clk.now}), clk
}

// queueing is a service of capacity c whose calls take base when it is not
// full and queue beyond: latency grows as n/c.
func queueing(c int, base time.Duration) func(int) time.Duration {
	return func(n int) time.Duration {
		if n <= c {
			return base
		}
		return base * time.Duration(n) / time.Duration(c)
	}
}

// TestLimitLeavesOne pins go-concurrency-limits#117: a Vegas limit at 1 must
// grow when the service is fast (log10(1) = 0 made its thresholds 0).
func TestLimitLeavesOne(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			l, clk := newDriven(alg, 1, 1)
			limits := drive(t, l, clk, 1500, queueing(100, 10*time.Millisecond), nil)
			if got := limits[len(limits)-1]; got < 50 {
				t.Fatalf("limit after 15 s of a fast service = %d, want it well above 1 (history %v...)", got, limits[:40])
			}
		})
	}
}

// TestDropsLowerLimit pins go-concurrency-limits#158: calls that fail from
// overload lower the limit, even when no call succeeds to close a window.
func TestDropsLowerLimit(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			l, clk := newDriven(alg, 100, 1)
			drive(t, l, clk, 300, queueing(200, 10*time.Millisecond), nil) // a baseline first
			before := l.Limit()
			limits := drive(t, l, clk, 300, func(int) time.Duration { return 10 * time.Millisecond }, func(int) bool { return true })
			if got := limits[len(limits)-1]; got >= before/2 {
				t.Fatalf("limit after 3 s of overload failures = %d, from %d; want it at most halved", got, before)
			}
		})
	}
}

// TestFollowsCapacity: against a service of capacity 100, then 50, then 100,
// the limit comes within 25% of the capacity in a few seconds and stays
// there; it does not drift (failsafe-go#127: a baseline that follows the
// latency up under sustained load lets the limit rise with it).
func TestFollowsCapacity(t *testing.T) {
	for _, alg := range []adaptive.Algorithm{adaptive.Default, adaptive.Vegas} {
		t.Run(alg.String(), func(t *testing.T) {
			l, clk := newDriven(alg, 20, 1)
			for _, phase := range []struct{ c, rounds int }{{100, 1500}, {50, 1500}, {100, 1500}} {
				limits := drive(t, l, clk, phase.rounds, queueing(phase.c, 10*time.Millisecond), nil)
				// 5 s in (each round at least 10 ms), and to the end.
				for i, lim := range limits[500:] {
					if 4*lim < 3*phase.c || 4*lim > 5*phase.c {
						t.Fatalf("capacity %d: limit %d at round %d, want within 25%%", phase.c, lim, 500+i)
					}
				}
			}
		})
	}
}

// TestSlowerServiceKeepsLimit: a service that becomes slower for good,
// whatever the load, is not taken for a queueing one forever: the baseline
// follows it within its ten seconds, and the limit grows back.
func TestSlowerServiceKeepsLimit(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			l, clk := newDriven(alg, 20, 1)
			drive(t, l, clk, 1000, queueing(100, 10*time.Millisecond), nil)
			limits := drive(t, l, clk, 1500, queueing(100, 30*time.Millisecond), nil)
			if got := limits[len(limits)-1]; got < 50 {
				t.Fatalf("limit 45 s after the service became 3x slower = %d, want back near 100", got)
			}
			// AIMD's limit sits up to 1.5 times the capacity, whose
			// windows all queue: its baseline is not an empty queue's.
			if b := l.Latency(); alg != adaptive.AIMD && (b < 25*time.Millisecond || b > 35*time.Millisecond) {
				t.Fatalf("Latency() = %v, want about 30ms", b)
			}
		})
	}
}

func TestAlgorithmString(t *testing.T) {
	for a, want := range map[adaptive.Algorithm]string{
		adaptive.Default: "Default", adaptive.AIMD: "AIMD", adaptive.Vegas: "Vegas",
		adaptive.Gradient2: "Gradient2", 7: "Algorithm(7)", -1: "Algorithm(-1)",
	} {
		if got := a.String(); got != want {
			t.Errorf("Algorithm(%d).String() = %q, want %q", int(a), got, want)
		}
	}
	_ = fmt.Sprint(adaptive.Default)
}
