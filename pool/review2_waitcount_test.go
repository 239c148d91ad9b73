package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// review2Waits tallies what Hooks.OnAcquire is told of waits.
type review2Waits struct {
	mu     sync.Mutex
	waited int64
	total  time.Duration
	events int64
}

func (w *review2Waits) onAcquire(e AcquireEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if e.Waited {
		w.waited++
		w.total += e.Wait
	} else if e.Wait != 0 {
		panic("pool review: a wait told without Waited")
	}
}

// assertWaitPair checks the invariants of Stats' wait pair on a snapshot.
func assertWaitPair(t *testing.T, st Stats) {
	t.Helper()
	assert.False(t, st.WaitDuration > 0 && st.WaitCount == 0, "WaitDuration %v with WaitCount 0: %+v", st.WaitDuration, st)
	assert.LessOrEqual(t, st.WaitCount, st.EmptyAcquires, "%+v", st)
	assert.GreaterOrEqual(t, st.WaitDuration, time.Duration(0), "%+v", st)
}

var errReview2New = errors.New("review: New failed")

// TestReview2WaitCountUnderChurn: many Acquires on a small pool, with ctxs
// cancelled and timing out as they wait, resources released and destroyed,
// New failing and slow, health checks failing, and the pool
// closed under the waiters at the end. At every snapshot WaitDuration is
// never above 0 while WaitCount is 0, and WaitCount never exceeds
// EmptyAcquires; at the end, WaitCount is exactly the Acquires that
// OnAcquire was told waited, and WaitDuration exactly the sum of their
// waits.
func TestReview2WaitCountUnderChurn(t *testing.T) {
	for seed := range uint64(4) {
		synctest.Test(t, func(t *testing.T) {
			var waits review2Waits
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(seed, 1))
			roll := func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
			p, err := New(Config[int]{
				New: func(ctx context.Context) (int, error) {
					time.Sleep(time.Duration(roll(3)) * time.Millisecond)
					// No panic here: one in a call made for an Acquire
					// that gave up would end the program (see Pool).
					if roll(10) == 0 {
						return 0, errReview2New
					}
					return 1, nil
				},
				HealthCheck: func(ctx context.Context, v int) error {
					if roll(4) == 0 {
						return errors.New("review: unhealthy")
					}
					return nil
				},
				HealthCheckSkip: NoHealthCheckSkip,
				MaxSize:         2,
				Hooks:           Hooks{OnAcquire: waits.onAcquire},
			})
			require.NoError(t, err)

			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { // snapshots while the churn goes on
				for {
					select {
					case <-done:
						return
					case <-time.After(time.Millisecond / 2):
						assertWaitPair(t, p.Stats())
					}
				}
			})
			var acquirers sync.WaitGroup
			for g := range 8 {
				acquirers.Go(func() {
					for range 40 {
						ctx, cancel := context.WithCancel(context.Background())
						switch roll(4) {
						case 0:
							ctx, cancel = context.WithTimeout(context.Background(), time.Duration(roll(3))*time.Millisecond)
						case 1:
							time.AfterFunc(time.Duration(roll(2000))*time.Microsecond, cancel)
						}
						func() {
							r, err := p.Acquire(ctx)
							if err != nil {
								assert.True(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
									errors.Is(err, errReview2New) || errors.Is(err, ErrClosed), "goroutine %d: %v", g, err)
								return
							}
							time.Sleep(time.Duration(roll(2)) * time.Millisecond)
							if roll(5) == 0 {
								r.Destroy()
							} else {
								r.Release()
							}
						}()
						cancel()
					}
				})
			}
			// Close under the last waiters, once the churn is well on.
			time.Sleep(25 * time.Millisecond)
			cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
			_ = p.Close(cctx)
			ccancel()
			acquirers.Wait()
			close(done)
			wg.Wait()
			synctest.Wait()

			st := p.Stats()
			assertWaitPair(t, st)
			waits.mu.Lock()
			defer waits.mu.Unlock()
			require.Equal(t, waits.waited, st.WaitCount, "seed %d: Acquires told they waited vs WaitCount: %+v", seed, st)
			require.Equal(t, waits.total, st.WaitDuration, "seed %d: %+v", seed, st)
			require.EqualValues(t, 8*40, waits.events, "seed %d: Acquires told to OnAcquire", seed)
			require.Positive(t, st.WaitCount, "seed %d: nothing waited: the test tests nothing", seed)
		})
	}
}

// TestReview2WaitCountNewPanics: an Acquire that waits for a call to New
// that panics panics with it, and is counted as a wait, as OnAcquire is told:
// WaitCount 1 beside the WaitDuration of its wait.
func TestReview2WaitCountNewPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits review2Waits
		p, err := New(Config[int]{
			New: func(ctx context.Context) (int, error) {
				time.Sleep(time.Second)
				panic("review: New panicked")
			},
			MaxSize: 1,
			Hooks:   Hooks{OnAcquire: waits.onAcquire},
		})
		require.NoError(t, err)
		func() {
			defer func() {
				err, _ := recover().(error)
				require.ErrorContains(t, err, "review: New panicked")
			}()
			_, _ = p.Acquire(context.Background())
			t.Fatal("Acquire returned")
		}()
		st := p.Stats()
		require.EqualValues(t, 1, st.WaitCount, "%+v", st)
		require.EqualValues(t, 1, st.EmptyAcquires, "%+v", st)
		require.Equal(t, time.Second, st.WaitDuration, "%+v", st)
		require.EqualValues(t, 1, waits.waited)
		require.Equal(t, time.Second, waits.total)
		require.NoError(t, p.Close(context.Background()))
	})
}

// TestReview2WaitCountHealthCheckThenWait: an Acquire that finds an idle
// resource failing its health check, then waits for a new one, is one empty
// Acquire and one wait, not two, however many idle resources it checked.
func TestReview2WaitCountHealthCheckThenWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := 0
		p, err := New(Config[int]{
			New: func(ctx context.Context) (int, error) {
				made++
				if made > 3 {
					time.Sleep(time.Second)
				}
				return made, nil
			},
			HealthCheck: func(ctx context.Context, v int) error {
				if v <= 3 {
					return errors.New("review: stale")
				}
				return nil
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         3,
		})
		require.NoError(t, err)
		var rs []*Resource[int]
		for range 3 {
			r, err := p.Acquire(context.Background())
			require.NoError(t, err)
			rs = append(rs, r)
		}
		for _, r := range rs {
			r.Release()
		}
		before := p.Stats()
		r, err := p.Acquire(context.Background())
		require.NoError(t, err)
		require.Equal(t, 4, r.Value())
		st := p.Stats()
		require.EqualValues(t, 3, st.ClosedHealth, "%+v", st)
		require.Equal(t, before.EmptyAcquires+1, st.EmptyAcquires, "%+v", st)
		require.Equal(t, before.WaitCount+1, st.WaitCount, "%+v", st)
		require.Equal(t, before.WaitDuration+time.Second, st.WaitDuration, "%+v", st)
		r.Release()
		require.NoError(t, p.Close(context.Background()))
	})
}
