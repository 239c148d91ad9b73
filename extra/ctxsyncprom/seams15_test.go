package ctxsyncprom_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
)

// TestSeams15_FlightAndWatchUnderChurn: callers of a Flight leave at random
// while a Watch is stored to and scrapes run: flight_calls stays within the
// keys in use and ends at 0; watch_version_total never falls between
// scrapes and ends at the Watch's version. A Flight added twice under a name
// is refused; a Watch made anew under a name removed starts again at 1.
func TestSeams15_FlightAndWatchUnderChurn(t *testing.T) {
	for seed := range uint64(10) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			var rmu sync.Mutex
			rnd := func(n int64) int64 {
				rmu.Lock()
				defer rmu.Unlock()
				return rng.Int64N(n)
			}
			c, reg := newTestCollector(t)
			var f ctxsync.Flight[int, int]
			w := ctxsync.NewWatch(0)
			if err := c.AddFlight("f", &f); err != nil {
				t.Fatal(err)
			}
			if err := c.AddFlight("f", &f); !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
				t.Fatalf("AddFlight twice = %v, want ErrDuplicateName", err)
			}
			if err := c.AddWatch("w", w); err != nil {
				t.Fatal(err)
			}
			read := func() (calls, version float64) {
				mfs, err := reg.Gather()
				if err != nil {
					t.Fatal(err)
				}
				for _, mf := range mfs {
					for _, m := range mf.Metric {
						switch mf.GetName() {
						case "ctxsync_flight_calls":
							calls = m.GetGauge().GetValue()
						case "ctxsync_watch_version_total":
							version = m.GetCounter().GetValue()
						}
					}
				}
				return calls, version
			}
			stop := make(chan struct{})
			var scrapes sync.WaitGroup
			scrapes.Go(func() {
				last := 0.0
				for {
					calls, version := read()
					if calls < 0 || calls > 3 {
						t.Errorf("flight_calls %v, with 3 keys", calls)
					}
					if version < last {
						t.Errorf("watch_version_total fell from %v to %v", last, version)
					}
					last = version
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Microsecond):
					}
				}
			})
			var callers sync.WaitGroup
			for range 8 {
				callers.Go(func() {
					for range 20 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(time.Millisecond))))
						_, _, _ = f.Do(ctx, int(rnd(3)), func(ctx context.Context) (int, error) {
							select {
							case <-ctx.Done():
								return 0, ctx.Err()
							case <-time.After(time.Duration(rnd(int64(2 * time.Millisecond)))):
								return 1, nil
							}
						})
						cancel()
						if rnd(3) == 0 {
							w.Store(1)
						}
					}
				})
			}
			callers.Wait()
			synctest.Wait() // the calls every caller left end
			close(stop)
			scrapes.Wait()
			calls, version := read()
			if calls != 0 || version != float64(w.Version()) {
				t.Errorf("at the end: flight_calls %v, watch_version_total %v; want 0, %d", calls, version, w.Version())
			}
			if !c.Remove("w") {
				t.Fatal("Remove(w) = false")
			}
			if err := c.AddWatch("w", ctxsync.NewWatch(0)); err != nil {
				t.Fatal(err)
			}
			if _, version := read(); version != 1 {
				t.Errorf("a new Watch under the name reads %v, want 1", version)
			}
		})
	}
}
