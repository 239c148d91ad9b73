package ctxsync_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
)

// Workers of a group ranging over a Watch's Changes, as config-reload's do,
// while a writer stores at random moments, the group's ctx may end, and
// Close comes: each worker sees strictly rising versions, never one past the
// last stored, and one whose ctx did not end sees the last value before its
// loop ends.
func TestSeams15_WatchChangesUnderGroup(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1515))
			var rmu sync.Mutex
			rnd := func(n int64) int64 {
				rmu.Lock()
				defer rmu.Unlock()
				return rng.Int64N(n)
			}
			w := ctxsync.NewWatch(1) // the value is its version
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			g, _ := group.New(parent, group.Options{Limit: 3})
			cancelAt := time.Duration(rnd(int64(80 * time.Millisecond)))
			if rnd(2) == 0 {
				cancelAt = time.Hour
			}
			time.AfterFunc(cancelAt, cancel)
			for i := range 5 {
				_ = g.Go(func(ctx context.Context) error {
					last := 0
					for v := range w.Changes(ctx) {
						if v <= last {
							t.Errorf("worker %d: %d after %d", i, v, last)
						}
						last = v
						time.Sleep(time.Duration(rnd(int64(5 * time.Millisecond))))
					}
					if ctx.Err() == nil {
						final, ver := w.Load()
						if last != final || uint64(final) != ver {
							t.Errorf("worker %d ended at %d, the last value is %d (version %d)", i, last, final, ver)
						}
					}
					return nil
				})
			}
			for v := 2; v < 30; v++ {
				time.Sleep(time.Duration(rnd(int64(3 * time.Millisecond))))
				w.Store(v)
			}
			w.Close()
			_ = g.Wait()
		})
	}
}
