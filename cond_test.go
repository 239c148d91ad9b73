package ctxsync_test

import (
	"context"
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

// waitAsync locks c, waits once with ctx, records the result, and unlocks.
func waitAsync(c *ctxsync.Condition, ctx context.Context, name string, log func(string, error)) {
	go func() {
		if err := c.Lock(context.Background()); err != nil {
			panic(err)
		}
		err := c.Wait(ctx)
		log(name, err)
		c.Unlock()
	}()
}

func TestConditionNotifyFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var mu sync.Mutex
		var woken []string
		log := func(name string, err error) {
			assert.NoError(t, err)
			mu.Lock()
			woken = append(woken, name)
			mu.Unlock()
		}
		for _, name := range []string{"A", "B", "C", "D", "E"} {
			waitAsync(c, t.Context(), name, log)
			synctest.Wait()
		}
		require.Equal(t, 5, c.Waiting())

		c.Notify(1)
		synctest.Wait()
		require.Equal(t, []string{"A"}, woken)
		c.Notify(2)
		synctest.Wait()
		require.ElementsMatch(t, []string{"A", "B", "C"}, woken)
		require.Equal(t, 2, c.Waiting())
		c.Notify(0)
		synctest.Wait()
		require.Len(t, woken, 3)
		c.NotifyAll() // both that are left
		synctest.Wait()
		require.Len(t, woken, 5)
		require.Equal(t, 0, c.Waiting())
		c.Notify(3) // nobody waits: nothing happens
	})
}

// TestConditionWaitReturnsLocked: Wait returns holding the Lock, also when it
// fails, and re-locks after the goroutines already queued for the Lock.
func TestConditionWaitReturnsLocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c ctxsync.Condition // the zero value has its own Lock
		require.NoError(t, c.Lock(t.Context()))
		ctx, cancel := context.WithCancel(t.Context())
		result := make(chan error)
		go func() {
			assert.NoError(t, c.Lock(context.Background()))
			err := c.Wait(ctx)
			assert.False(t, c.TryLock(), "Wait returned without the Lock")
			c.Unlock()
			result <- err
		}()
		synctest.Wait()
		c.Unlock() // the goroutine locks, then waits, releasing the Lock
		synctest.Wait()
		require.True(t, c.TryLock(), "Wait did not release the Lock")
		cancel()
		synctest.Wait()
		require.Zero(t, len(result), "Wait returned while the Lock was held by another")
		c.Unlock()
		require.Equal(t, context.Canceled, <-result)
	})
}

func TestConditionDoneContext(t *testing.T) {
	for _, tc := range doneCtxCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			c := ctxsync.NewCondition(nil)
			require.NoError(t, c.Lock(context.Background()))
			require.Equal(t, tc.want, c.Wait(tc.ctx))
			require.Equal(t, tc.want, c.WaitFor(tc.ctx, func() bool { panic("pred called") }))
			require.False(t, c.TryLock(), "a failed Wait unlocked")
			require.Equal(t, 0, c.Waiting())
			c.Unlock()
		})
	}
}

func TestConditionWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		n := 0 // guarded by c
		done := make(chan struct{})
		go func() {
			assert.NoError(t, c.Lock(t.Context()))
			assert.NoError(t, c.WaitFor(t.Context(), func() bool { return n >= 3 }))
			assert.Equal(t, 3, n)
			c.Unlock()
			close(done)
		}()
		for range 3 {
			synctest.Wait()
			require.NoError(t, c.Lock(t.Context()))
			n++
			c.NotifyAll()
			c.Unlock()
		}
		<-done
	})
}

func TestConditionWaitForDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		require.NoError(t, c.Lock(t.Context()))
		ctx, cancel := context.WithTimeout(t.Context(), 100)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, c.WaitFor(ctx, func() bool { return false }))
		c.Unlock()
	})
}

// TestConditionSharedLock: two Conditions on one Lock, as a bounded queue's
// "not empty" and "not full" would be.
func TestConditionSharedLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ctxsync.NewLock()
		a, b := ctxsync.NewCondition(l), ctxsync.NewCondition(l)
		woke := make(chan string, 2)
		for name, c := range map[string]*ctxsync.Condition{"a": a, "b": b} {
			go func() {
				assert.NoError(t, c.Lock(t.Context()))
				assert.NoError(t, c.Wait(t.Context()))
				woke <- name
				c.Unlock()
			}()
		}
		synctest.Wait()
		require.False(t, l.Locked(), "both waiters released the shared Lock")
		b.Notify(1)
		require.Equal(t, "b", <-woke)
		synctest.Wait()
		require.Zero(t, len(woke), "notifying b woke a")
		a.Notify(1)
		require.Equal(t, "a", <-woke)
	})
}

// TestConditionNotifyRacesCancel pins the lost-wake-up bug of golang/go#62180:
// a notification that reaches a waiter as its ctx ends must not vanish. Either
// the waiter takes it (returns nil) or the next waiter wakes.
func TestConditionNotifyRacesCancel(t *testing.T) {
	for range testutil.HammerRounds(1000) {
		c := ctxsync.NewCondition(nil)
		ctx, cancel := context.WithCancel(context.Background())
		queued := make(chan struct{}, 2)
		resA, resB := make(chan error, 1), make(chan error, 1)
		start := func(ctx context.Context, res chan error) {
			go func() {
				_ = c.Lock(context.Background())
				queued <- struct{}{}
				err := c.Wait(ctx)
				c.Unlock()
				res <- err
			}()
		}
		start(ctx, resA)
		<-queued
		start(context.Background(), resB)
		<-queued
		// Both have queued once both are waiting; the Lock shows it.
		for c.Waiting() < 2 {
			runtime.Gosched()
		}
		go cancel()
		c.Notify(1)
		if err := <-resA; err == nil {
			// A took the notification: B still waits for one of its own.
			c.Notify(1)
		}
		require.NoError(t, <-resB, "the notification was lost")
		cancel()
	}
}

// TestConditionBoundedBuffer is the classic: producers and consumers share a
// bounded buffer through two Conditions on one Lock, with random cancellation.
// Every item produced is consumed exactly once.
func TestConditionBoundedBuffer(t *testing.T) {
	const capacity, producers, consumers = 3, 4, 4
	perProducer := testutil.HammerRounds(300)
	l := ctxsync.NewLock()
	notEmpty, notFull := ctxsync.NewCondition(l), ctxsync.NewCondition(l)
	var buf []int // guarded by l
	closed := false

	var seen sync.Map
	var consumed atomic.Int64
	var pwg, cwg sync.WaitGroup
	for p := range producers {
		pwg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 7))
			for i := 0; i < perProducer; {
				ctx, cancel := randomCtx(r)
				_ = l.Lock(context.Background())
				err := notFull.WaitFor(ctx, func() bool { return len(buf) < capacity })
				if err == nil {
					buf = append(buf, p*perProducer+i)
					i++
					notEmpty.Notify(1)
				}
				l.Unlock()
				cancel()
			}
		})
	}
	for c := range consumers {
		cwg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 8))
			for {
				ctx, cancel := randomCtx(r)
				_ = l.Lock(context.Background())
				err := notEmpty.WaitFor(ctx, func() bool { return len(buf) > 0 || closed })
				if err == nil && len(buf) == 0 { // closed and drained
					l.Unlock()
					cancel()
					return
				}
				if err == nil {
					v := buf[0]
					buf = buf[1:]
					if _, dup := seen.LoadOrStore(v, true); dup {
						t.Errorf("item %d consumed twice", v)
					}
					consumed.Add(1)
					notFull.Notify(1)
				}
				l.Unlock()
				cancel()
			}
		})
	}
	pwg.Wait()
	_ = l.Lock(context.Background())
	closed = true
	notEmpty.NotifyAll()
	l.Unlock()
	cwg.Wait()
	require.Equal(t, int64(producers*perProducer), consumed.Load(), "items lost")
	require.False(t, l.Locked())
}

func TestConditionMisuse(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	bg := context.Background()
	require.PanicsWithValue(t, "ctxsync: Condition.Wait without holding its Lock", func() { _ = c.Wait(bg) })
	require.PanicsWithValue(t, "ctxsync: Condition.WaitFor without holding its Lock", func() {
		_ = c.WaitFor(bg, func() bool { return true })
	})
	require.PanicsWithValue(t, "ctxsync: Condition.WaitFor with nil predicate", func() { _ = c.WaitFor(bg, nil) })
	require.PanicsWithValue(t, "ctxsync: Condition.Notify with negative count", func() { c.Notify(-1) })
	require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", c.Unlock)
	require.NoError(t, c.Lock(bg))
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = c.Wait(nil)
	})
	require.False(t, c.TryLock(), "a misuse released the Lock")
	c.Unlock()
}

// TestHammerCondition: goroutines notify, wait and wait for predicates (which
// panic now and then) with random cancellation. Only one goroutine ever holds
// the Lock, and at the end nobody waits and the Lock is free. Waits that were
// notified (they return nil) take the Lock again in the order they queued,
// which is the order Notify wakes them in.
func TestHammerCondition(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	var holders atomic.Int32 // goroutines that hold the Lock, by their own count
	// Guarded by c's Lock: the number of Waits queued so far (Wait queues
	// before it unlocks), and that of the latest to return nil.
	var queued, relocked int
	enter := func() {
		if n := holders.Add(1); n != 1 {
			t.Errorf("%d goroutines hold the Lock", n)
		}
	}
	var wg sync.WaitGroup
	rounds := testutil.HammerRounds(300)
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range rounds {
				switch r.IntN(6) {
				case 0:
					c.Notify(r.IntN(3))
				case 1:
					c.NotifyAll()
				case 2:
					// Notify holding the Lock: the waiters get it after
					// this Unlock.
					_ = c.Lock(context.Background())
					enter()
					c.Notify(1 + r.IntN(2))
					holders.Add(-1)
					c.Unlock()
				case 3:
					// WaitFor whose predicate panics now and then: the
					// panic comes back with the Lock held, ours alone.
					ctx, cancel := endingCtx(r)
					_ = c.Lock(context.Background())
					enter()
					holders.Add(-1)
					pred := func() bool {
						enter()
						holders.Add(-1)
						switch r.IntN(4) {
						case 0:
							panic("the predicate panicked")
						case 1:
							return true
						}
						return false
					}
					func() {
						defer func() { _ = recover() }()
						_ = c.WaitFor(ctx, pred)
					}()
					enter()
					holders.Add(-1)
					c.Unlock()
					cancel()
				default:
					ctx, cancel := endingCtx(r)
					_ = c.Lock(context.Background())
					enter()
					queued++
					mine := queued
					holders.Add(-1)
					err := c.Wait(ctx)
					enter()
					if err != nil && err != ctx.Err() {
						t.Errorf("Wait = %v", err)
					}
					if err == nil {
						if mine < relocked {
							t.Errorf("Wait %d, notified, took the Lock after Wait %d, which queued after it", mine, relocked)
						}
						relocked = mine
					}
					holders.Add(-1)
					c.Unlock()
					cancel()
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 0, c.Waiting())
	require.False(t, c.Locked())
	require.NoError(t, c.Lock(context.Background()))
	c.Unlock()
}

// TestConditionNotifyHoldingLock: a waiter notified while the Lock is held
// takes the Lock after those already queued for it, and returns holding it.
func TestConditionNotifyHoldingLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var order []string
		waited := make(chan error, 1)
		go func() {
			require.NoError(t, c.Lock(t.Context()))
			err := c.Wait(t.Context())
			order = append(order, "waiter")
			waited <- err
			c.Unlock()
		}()
		synctest.Wait()
		require.Equal(t, 1, c.Waiting())

		require.NoError(t, c.Lock(t.Context()))
		locker := make(chan struct{})
		go func() {
			require.NoError(t, c.Lock(t.Context()))
			order = append(order, "locker")
			c.Unlock()
			close(locker)
		}()
		synctest.Wait() // the locker queues for the Lock first

		c.Notify(1)
		require.Equal(t, 0, c.Waiting())
		synctest.Wait()
		require.Empty(t, waited, "the waiter returned without the Lock")

		c.Unlock()
		<-locker
		require.NoError(t, <-waited)
		synctest.Wait()
		require.Equal(t, []string{"locker", "waiter"}, order)
		require.False(t, c.Locked())
	})
}
