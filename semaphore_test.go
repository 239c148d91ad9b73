package ctxsync_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// sem is what Semaphore and BoundedSemaphore share, so that one set of tests
// covers both.
type sem interface {
	Acquire(ctx context.Context) error
	TryAcquire() bool
	Release()
	Available() int
	Waiting() int
}

var semaphoreKinds = []struct {
	name string
	new  func(n int) sem
}{
	{"Semaphore", func(n int) sem { return ctxsync.NewSemaphore(n) }},
	{"BoundedSemaphore", func(n int) sem { return ctxsync.NewBoundedSemaphore(n) }},
}

func TestSemaphoreCounts(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			s := k.new(2)
			require.Equal(t, 2, s.Available())
			require.NoError(t, s.Acquire(context.Background()))
			require.True(t, s.TryAcquire())
			require.Equal(t, 0, s.Available())
			require.False(t, s.TryAcquire(), "TryAcquire with no permit free")
			s.Release()
			s.Release()
			require.Equal(t, 2, s.Available())
			require.Equal(t, 0, s.Waiting())
		})
	}
}

func TestSemaphoreZero(t *testing.T) {
	s := ctxsync.NewSemaphore(0)
	require.False(t, s.TryAcquire())
	s.Release()
	require.True(t, s.TryAcquire())

	var zero ctxsync.Semaphore // no permits until a Release
	require.False(t, zero.TryAcquire())
	zero.Release()
	require.Equal(t, 1, zero.Available())
}

func TestSemaphoreReleaseRaisesCount(t *testing.T) {
	s := ctxsync.NewSemaphore(1)
	s.Release()
	s.Release()
	require.Equal(t, 3, s.Available(), "Release beyond the initial count raises it, as asyncio's does")
}

func TestSemaphoreFIFO(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := k.new(1)
				require.NoError(t, s.Acquire(t.Context()))

				var order []string
				var wg sync.WaitGroup
				for i, name := range []string{"A", "B", "C"} {
					wg.Go(func() {
						assert.NoError(t, s.Acquire(t.Context()))
						order = append(order, name) // guarded: one permit
						s.Release()
					})
					synctest.Wait()
					require.Equal(t, i+1, s.Waiting())
				}
				require.False(t, s.TryAcquire(), "TryAcquire overtook queued waiters")
				s.Release()
				wg.Wait()
				require.Equal(t, []string{"A", "B", "C"}, order)
				require.Equal(t, 1, s.Available())
				require.Equal(t, 0, s.Waiting())
			})
		})
	}
}

func TestSemaphoreTryAcquireDoesNotOvertake(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := k.new(1)
				require.True(t, s.TryAcquire())
				got := make(chan struct{})
				go func() {
					assert.NoError(t, s.Acquire(t.Context()))
					close(got)
				}()
				synctest.Wait()
				s.Release() // handed to the waiter, not put back
				require.False(t, s.TryAcquire(), "TryAcquire took a permit handed to a waiter")
				require.Equal(t, 0, s.Available())
				<-got
				s.Release()
				require.Equal(t, 1, s.Available())
			})
		})
	}
}

func TestSemaphoreDoneContext(t *testing.T) {
	for _, k := range semaphoreKinds {
		for _, tc := range doneCtxCases(t) {
			t.Run(k.name+"/"+tc.name, func(t *testing.T) {
				s := k.new(3)
				require.Equal(t, tc.want, s.Acquire(tc.ctx), "Acquire with a done ctx and free permits")
				require.Equal(t, 3, s.Available(), "a failed Acquire changed the count")
			})
		}
	}
}

func TestSemaphoreContextEndsWhileQueued(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := k.new(1)
				require.NoError(t, s.Acquire(t.Context()))

				ctx, cancel := context.WithCancel(t.Context())
				errA := make(chan error)
				go func() { errA <- s.Acquire(ctx) }()
				synctest.Wait()
				gotB := make(chan struct{})
				go func() {
					assert.NoError(t, s.Acquire(t.Context()))
					close(gotB)
				}()
				synctest.Wait()
				require.Equal(t, 2, s.Waiting())

				cancel()
				require.Equal(t, context.Canceled, <-errA)
				require.Equal(t, 1, s.Waiting(), "the cancelled waiter is still queued")
				require.Equal(t, 0, s.Available())

				s.Release()
				<-gotB
				s.Release()
				require.Equal(t, 1, s.Available())
				require.Equal(t, 0, s.Waiting())
			})
		})
	}
}

// TestSemaphoreLastWaiterLeaves pins the state change when the only waiter
// gives up: later Releases must count up again, not look for waiters.
func TestSemaphoreLastWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := ctxsync.NewSemaphore(0)
		ctx, cancel := context.WithCancel(t.Context())
		errA := make(chan error)
		go func() { errA <- s.Acquire(ctx) }()
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-errA)
		s.Release()
		require.Equal(t, 1, s.Available())
		require.True(t, s.TryAcquire())
	})
}

func TestSemaphoreCancelRacesRelease(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			runCancelRaces(t, 1000, func(t *testing.T) cancelRace {
				s := k.new(1)
				require.NoError(t, s.Acquire(context.Background()))
				return cancelRace{
					grantRace:    grantRace{first: s.Acquire, second: s.Acquire, grant: s.Release},
					releaseFirst: s.Release, releaseSecond: s.Release,
					check: func(t *testing.T) {
						require.Equal(t, 1, s.Available(), "a permit was lost or made up")
						require.Equal(t, 0, s.Waiting())
					},
				}
			})
		})
	}
}

func TestBoundedSemaphoreOverRelease(t *testing.T) {
	b := ctxsync.NewBoundedSemaphore(2)
	require.True(t, b.TryAcquire())
	b.Release()
	var got any
	func() {
		defer func() { got = recover() }()
		b.Release()
	}()
	err, ok := got.(error)
	require.True(t, ok, "panic value %v is not an error", got)
	require.True(t, errors.Is(err, ctxsync.ErrReleasedTooManyTimes), "panic %v does not match ErrReleasedTooManyTimes", err)
	require.Contains(t, err.Error(), "ctxsync: ")
	require.Equal(t, 2, b.Available(), "the count rose above its bound")

	var zero ctxsync.BoundedSemaphore
	require.PanicsWithError(t, ctxsync.ErrReleasedTooManyTimes.Error(), zero.Release)
}

// TestBoundedSemaphoreOfZero: with an initial count of 0 nobody ever holds a
// permit, so every Release is one too many, even with goroutines queued
// (whose count, below 0, does not show it).
func TestBoundedSemaphoreOfZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBoundedSemaphore(0)
		require.PanicsWithError(t, ctxsync.ErrReleasedTooManyTimes.Error(), b.Release)
		errA := make(chan error, 1)
		go func() { errA <- b.Acquire(t.Context()) }()
		synctest.Wait()
		require.PanicsWithError(t, ctxsync.ErrReleasedTooManyTimes.Error(), b.Release)
		synctest.Wait()
		require.Empty(t, errA, "the panicking Release let a waiter in")
		require.Equal(t, 1, b.Waiting())
	})
}

// TestBoundedSemaphorePassOnRespectsBound: a permit that a cancelled waiter
// passes back must not trip the bound.
func TestBoundedSemaphorePassOnRespectsBound(t *testing.T) {
	for range testutil.HammerRounds(500) {
		b := ctxsync.NewBoundedSemaphore(1)
		require.NoError(t, b.Acquire(context.Background()))
		ctx, cancel := context.WithCancel(context.Background())
		errA := make(chan error, 1)
		go func() { errA <- b.Acquire(ctx) }()
		runtime.Gosched()
		go cancel()
		b.Release()
		if err := <-errA; err == nil {
			b.Release()
		}
		require.Equal(t, 1, b.Available())
		cancel()
	}
}

func TestSemaphoreMisuse(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewSemaphore with negative count", func() { ctxsync.NewSemaphore(-1) })
	require.PanicsWithValue(t, "ctxsync: NewBoundedSemaphore with negative count", func() { ctxsync.NewBoundedSemaphore(-1) })
	for _, k := range semaphoreKinds {
		s := k.new(1)
		require.PanicsWithValue(t, "ctxsync: nil Context", func() {
			//lint:ignore SA1012 a nil Context is the misuse under test
			_ = s.Acquire(nil)
		}, k.name)
		require.Equal(t, 1, s.Available())
	}
}

func TestHammerSemaphore(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			const capacity = 3
			s := k.new(capacity)
			var inside atomic.Int32
			var wg sync.WaitGroup
			rounds := testutil.HammerRounds(200)
			for g := range 64 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), 2))
					for range rounds {
						ctx, cancel := randomCtx(r)
						if tryOrWait(ctx, r, s.TryAcquire, s.Acquire) == nil {
							if n := inside.Add(1); n > capacity {
								t.Errorf("%d holders of %d permits", n, capacity)
							}
							if r.IntN(4) == 0 {
								runtime.Gosched()
							}
							inside.Add(-1)
							s.Release()
						}
						cancel()
					}
				})
			}
			wg.Wait()
			require.Equal(t, capacity, s.Available(), "permits lost or made up")
			require.Equal(t, 0, s.Waiting())
		})
	}
}
