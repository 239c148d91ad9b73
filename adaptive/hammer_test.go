package adaptive_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHammerLimiter: goroutines acquire with random cancellations and finish
// their Tickets every way there is, while the limit moves; at the end nothing
// is in flight or queued, no slot was lost, and the calls in flight never
// passed the largest limit.
func TestHammerLimiter(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			l := adaptive.New(adaptive.Config{Algorithm: alg, InitialLimit: 4, MaxLimit: 8, MaxWait: 200 * time.Microsecond})
			var held, peak atomic.Int64
			var wg sync.WaitGroup
			rounds := testutil.HammerRounds(300)
			for g := range 16 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), 42))
					for range rounds {
						var ctx context.Context
						var cancel context.CancelFunc
						switch r.IntN(3) {
						case 0:
							ctx, cancel = context.WithCancel(context.Background())
						case 1:
							ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
						default:
							ctx, cancel = context.WithCancel(context.Background())
							tm := time.AfterFunc(time.Duration(r.IntN(200))*time.Microsecond, cancel)
							defer tm.Stop()
						}
						tk, err := l.Acquire(ctx)
						cancel()
						if err != nil {
							if !errors.Is(err, adaptive.ErrShed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
								t.Errorf("Acquire = %v", err)
							}
							continue
						}
						n := held.Add(1)
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						if r.IntN(4) == 0 {
							time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
						}
						held.Add(-1)
						switch r.IntN(3) {
						case 0:
							tk.Done(nil)
						case 1:
							tk.Done(errors.New("overloaded"))
						default:
							tk.Ignore()
						}
					}
				})
			}
			wg.Wait()
			if l.InFlight() != 0 || l.Waiting() != 0 {
				t.Fatalf("InFlight %d Waiting %d after the hammer, want 0 0", l.InFlight(), l.Waiting())
			}
			if p := peak.Load(); p > 8 {
				t.Fatalf("%d calls in flight at once, above MaxLimit 8", p)
			}
			// Every slot is there: the whole limit can be taken at once.
			var tks []*adaptive.Ticket
			for range l.Limit() {
				tk, err := acquire(l, context.Background())
				if err != nil {
					t.Fatalf("Acquire %d of limit %d after the hammer = %v", len(tks)+1, l.Limit(), err)
				}
				tks = append(tks, tk)
			}
			for _, tk := range tks {
				tk.Ignore()
			}
		})
	}
}
