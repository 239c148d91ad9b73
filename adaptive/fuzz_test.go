package adaptive_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// FuzzLimiterModel runs a Limiter of a fixed limit that never queues against
// a model, a counter: Acquire succeeds exactly when fewer than the limit are
// in flight, and is shed otherwise; finishing a Ticket frees its slot however
// it is finished.
func FuzzLimiterModel(f *testing.F) {
	f.Add(uint8(3), []byte{0, 0, 0, 0, 1, 2, 3, 0})
	f.Add(uint8(1), []byte{0, 0, 3, 0, 3})
	f.Fuzz(func(t *testing.T, limit uint8, ops []byte) {
		k := int(limit%16) + 1
		l := adaptive.New(adaptive.Config{InitialLimit: k, MinLimit: k, MaxLimit: k, MaxWait: adaptive.NoWait})
		var held []*adaptive.Ticket
		for _, op := range ops {
			switch op % 4 {
			case 0:
				tk, err := acquire(l, context.Background())
				if want := len(held) < k; (err == nil) != want {
					t.Fatalf("Acquire with %d of %d held = %v, want success %v", len(held), k, err, want)
				}
				if err == nil {
					held = append(held, tk)
				} else if err != adaptive.ErrShed {
					t.Fatalf("Acquire = %v, want ErrShed", err)
				}
			default:
				if len(held) == 0 {
					continue
				}
				tk := held[int(op)%len(held)]
				held = append(held[:int(op)%len(held)], held[int(op)%len(held)+1:]...)
				switch op % 4 {
				case 1:
					tk.Done(nil)
				case 2:
					tk.Done(errors.New("overloaded"))
				default:
					tk.Ignore()
				}
			}
			if l.InFlight() != len(held) || l.Limit() != k {
				t.Fatalf("InFlight %d Limit %d, model %d %d", l.InFlight(), l.Limit(), len(held), k)
			}
		}
	})
}

// FuzzAlgorithms feeds each algorithm arbitrary latencies, failures and
// clock jumps (backwards too) and checks what must hold whatever it sees: the
// limit stays within MinLimit and MaxLimit, the baseline is never negative,
// and the slots all come back.
func FuzzAlgorithms(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(50), []byte{10, 20, 30, 200, 255, 0, 1})
	f.Add(uint8(3), uint8(5), uint8(5), []byte{255, 255, 255, 0, 0, 0})
	f.Fuzz(func(t *testing.T, alg, lo, span uint8, steps []byte) {
		clk := &fakeClock{}
		minL := int(lo%20) + 1
		maxL := minL + int(span%200)
		l := adaptive.New(adaptive.Config{Algorithm: adaptive.Algorithm(alg % 4), MinLimit: minL, MaxLimit: maxL, InitialLimit: minL, Clock: clk.now})
		for i, s := range steps {
			n := l.Limit()
			if n < minL || n > maxL {
				t.Fatalf("Limit() = %d, outside %d..%d", n, minL, maxL)
			}
			tks := make([]*adaptive.Ticket, 0, n)
			for range n {
				tk, err := acquire(l, context.Background())
				if err != nil {
					t.Fatalf("Acquire with %d in flight of %d = %v", l.InFlight(), n, err)
				}
				tks = append(tks, tk)
			}
			switch {
			case s == 0:
				clk.add(-time.Hour) // a clock that went back
			case s == 255:
				clk.add(2 * time.Hour) // beyond any latency taken
			default:
				clk.add(time.Duration(s) * time.Duration(s) * 10 * time.Microsecond)
			}
			var err error
			if s%7 == 0 {
				err = errors.New("overloaded")
			}
			for j, tk := range tks {
				if (i+j)%5 == 4 {
					tk.Ignore()
				} else {
					tk.Done(err)
				}
			}
			if l.Latency() < 0 || l.InFlight() != 0 {
				t.Fatalf("Latency %v InFlight %d", l.Latency(), l.InFlight())
			}
		}
	})
}
