package ctxsync_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Workers of a group ranging over a Watch's Changes, as config-reload's do,
// while a writer stores at random moments, the group's ctx may end, and
// Close comes: each worker sees strictly rising versions, never one past the
// last stored, and one whose ctx did not end sees the last value before its
// loop ends.
func TestSeams15_WatchChangesUnderGroup(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 1515)
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

// A Flight in front of a slow backend whose fn first Gets a Lazy's settings
// under fn's own ctx, as cache-stampede's service would; callers leave at
// random, init fails or panics now and then: each caller gets its own key's
// answer or an error, the settings once made never change, and when
// everyone has gone no call is left in flight.
func TestSeams15_FlightOverLazyCallersLeave(t *testing.T) {
	for seed := range uint64(30) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 1516)
			var inits, made atomic.Int64
			settings := ctxsync.NewLazy(func(ctx context.Context) (int, error) {
				n := inits.Add(1)
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(time.Duration(rnd(int64(2 * time.Millisecond)))):
				}
				switch rnd(4) {
				case 0:
					return 0, errors.New("settings store down")
				case 1:
					panic("settings parse")
				}
				made.Add(1)
				return int(n), nil
			})
			var products ctxsync.Flight[int, int]
			var backendCalls, backendLive atomic.Int64
			firstSeen := atomic.Int64{}
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					for range 10 {
						key := int(rnd(3))
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(4*time.Millisecond))))
						func() {
							defer func() {
								if p := recover(); p != nil {
									if _, ok := p.(*ctxsync.PanicError); !ok {
										t.Errorf("Do raised %T %v", p, p)
									}
								}
							}()
							v, err, _ := products.Do(ctx, key, func(ctx context.Context) (int, error) {
								s, err := settings.Get(ctx)
								if err != nil {
									return 0, err
								}
								if old := firstSeen.Swap(int64(s)); old != 0 && old != int64(s) {
									t.Errorf("settings changed from %d to %d", old, s)
								}
								backendCalls.Add(1)
								backendLive.Add(1)
								defer backendLive.Add(-1)
								select {
								case <-ctx.Done():
									return 0, ctx.Err()
								case <-time.After(time.Duration(rnd(int64(2 * time.Millisecond)))):
								}
								return 1000*s + key, nil
							})
							if err == nil && v%1000 != key {
								t.Errorf("key %d got %d, another key's answer", key, v)
							}
						}()
						cancel()
					}
				})
			}
			wg.Wait()
			synctest.Wait() // calls every caller left end
			if n := products.Len(); n != 0 {
				t.Errorf("Len %d after every caller left", n)
			}
			if n := backendLive.Load(); n != 0 {
				t.Errorf("%d backend loads still running", n)
			}
			if v, ok := settings.Peek(); ok && firstSeen.Load() != 0 && int64(v) != firstSeen.Load() {
				t.Errorf("Peek %d, the settings seen were %d", v, firstSeen.Load())
			}
		})
	}
}
