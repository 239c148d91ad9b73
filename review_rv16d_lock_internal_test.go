package ctxsync

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// lockAtRest checks that l is free with nobody queued, and that its fast
// paths work.
func lockAtRest(t *testing.T, l *Lock) {
	t.Helper()
	require.False(t, l.Locked(), "state %#x", l.state.Load())
	require.Zero(t, l.Waiting())
	require.True(t, l.TryLock())
	l.Unlock()
}

// lockEveryPath takes l once by each of its paths, in correct use, and
// checks it at rest after each: the fast Lock and TryLock; a hand-over to a
// queued waiter, and on along a queue of two; a waiter handed l by its
// holder's Unlock just as its ctx ends, alone and with one behind it; a take
// by the slow path whose ctx ends before its second look; a Condition's Wait
// and Notify. Each moves the count of takes on by one or more. Run in a
// synctest bubble.
func lockEveryPath(t *testing.T, l *Lock) {
	t.Helper()
	bg := context.Background()

	require.NoError(t, l.Lock(bg))
	l.Unlock()
	lockAtRest(t, l)

	// Hand-overs along a queue of two.
	require.NoError(t, l.Lock(bg))
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			if l.Lock(bg) == nil {
				got <- i
				l.Unlock()
			}
		}()
		synctest.Wait()
	}
	require.Equal(t, 2, l.Waiting())
	l.Unlock()
	synctest.Wait()
	require.Equal(t, 0, <-got)
	require.Equal(t, 1, <-got)
	lockAtRest(t, l)

	// The holder's own Unlock hands l over just as the waiter's ctx ends,
	// with 0 or 1 waiters behind it: the waiter returns ctx.Err() and hands
	// l on, or frees it.
	for behind := range 2 {
		require.NoError(t, l.Lock(bg))
		ctx, cancel := context.WithCancel(bg)
		errc := make(chan error, 1)
		go func() { errc <- l.Lock(ctx) }()
		synctest.Wait()
		for range behind {
			go func() {
				if l.Lock(bg) == nil {
					got <- 9
					l.Unlock()
				}
			}()
			synctest.Wait()
		}
		l.q.Lock()
		l.unlockLocked() // the holder's own Unlock: it hands l to the waiter
		cancel()
		l.q.Unlock()
		err := <-errc
		synctest.Wait()
		if err == nil {
			l.Unlock() // the hand-over won the select
		} else {
			require.ErrorIs(t, err, context.Canceled)
		}
		synctest.Wait()
		for range behind {
			require.Equal(t, 9, <-got, "the goroutine behind was handed l on")
		}
		lockAtRest(t, l)
	}

	// The slow path takes l free, then finds ctx ended at its second look.
	require.True(t, l.TryLock())
	ctx, cancel := context.WithCancel(bg)
	calls := 0
	c := &hookCtx{Context: ctx, err: func() {
		switch calls++; calls {
		case 1:
			l.Unlock() // the holder lets go after Lock loaded the state
		case 2:
			cancel()
		}
	}}
	require.ErrorIs(t, l.Lock(c), context.Canceled)
	require.Equal(t, 2, calls, "the take was made by the slow path")
	lockAtRest(t, l)

	// A Condition on l: Wait, notified, takes l again.
	cond := NewCondition(l)
	require.NoError(t, l.Lock(bg))
	waited := make(chan error, 1)
	go func() {
		require.NoError(t, cond.Lock(bg))
		waited <- cond.Wait(bg)
		cond.Unlock()
	}()
	synctest.Wait()
	require.Equal(t, 1, l.Waiting())
	l.Unlock()
	synctest.Wait()
	require.NoError(t, l.Lock(bg))
	cond.Notify(1)
	l.Unlock()
	require.NoError(t, <-waited)
	synctest.Wait()
	lockAtRest(t, l)
}

// TestLockTakeCountWraps: the count of takes in a Lock's state is 62 bits
// wide (the bits above lockWaiters of an int64): it turns negative after 2⁶¹
// takes, and comes back to zero after 2⁶². Nothing compares it but for
// equality, so neither moment changes anything: every path of Lock, a
// Condition's included, works across both.
func TestLockTakeCountWraps(t *testing.T) {
	for _, start := range []int64{
		math.MaxInt64&^(lockHeld|lockWaiters) - 3*lockTake, // to the sign bit
		-4 * lockTake, // to zero
	} {
		synctest.Test(t, func(t *testing.T) {
			l := new(Lock)
			l.state.Store(start)
			crossed := false
			for range 8 {
				before := l.state.Load()
				lockEveryPath(t, l)
				after := l.state.Load()
				require.Zero(t, after&(lockHeld|lockWaiters))
				require.NotEqual(t, before, after, "the count moves on")
				if (before < 0) != (after < 0) {
					crossed = true
				}
			}
			require.True(t, crossed, "the count crossed its boundary from %#x", start)
		})
	}
}

// TestLockFIFOUnderRandomCancellation: in a synctest bubble, waiters queue
// one at a time behind a holder, each with a deadline at a random virtual
// moment, often the very moment that the holder, or the waiter before it,
// unlocks (the unlocks come at whole milliseconds, and so do the deadlines).
// A TryLock is made at such moments too. Those that get the Lock get it in
// the order they queued, one at a time; each that fails returns its ctx's
// error and holds nothing; and in the end the Lock is free with nobody
// queued.
func TestLockFIFOUnderRandomCancellation(t *testing.T) {
	for seed := range uint64(200) {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0xd16))
			var l Lock
			bg := context.Background()
			require.NoError(t, l.Lock(bg))
			const n = 12
			holding := 0
			var order []int
			results := make(chan error, n)
			for i := range n {
				ctx, cancel := context.WithTimeout(bg, time.Duration(r.IntN(2*n))*time.Millisecond)
				hold := time.Duration(r.IntN(3)) * time.Millisecond
				go func() {
					defer cancel()
					err := l.Lock(ctx)
					if err == nil {
						holding++
						if holding != 1 {
							t.Errorf("%d goroutines hold the Lock", holding)
						}
						order = append(order, i)
						time.Sleep(hold)
						holding--
						l.Unlock()
					} else if err != context.DeadlineExceeded {
						t.Errorf("waiter %d: %v", i, err)
					}
					results <- err
				}()
				synctest.Wait() // queued, in order
			}
			// A TryLock now and then, at the same moments: it may take l only
			// when nobody holds it, and it never takes it from a queued
			// waiter (which would show as two holds, or a waiter served out
			// of order behind it).
			probes := make([]time.Duration, 2*n)
			for i := range probes {
				probes[i] = time.Duration(r.IntN(2)) * time.Millisecond
			}
			probed := make(chan struct{})
			go func() {
				defer close(probed)
				for _, d := range probes {
					time.Sleep(d)
					if l.TryLock() {
						holding++
						if holding != 1 {
							t.Errorf("%d goroutines hold the Lock, TryLock's among them", holding)
						}
						holding--
						l.Unlock()
					}
				}
			}()
			time.Sleep(time.Duration(r.IntN(n)) * time.Millisecond)
			l.Unlock()
			for range n {
				<-results
			}
			<-probed
			for k := 1; k < len(order); k++ {
				require.Less(t, order[k-1], order[k], "order %v", order)
			}
			lockAtRest(t, &l)
		})
	}
}

// TestHammerConditionMisusedUnlocks: goroutines lock a Condition's Lock with
// random cancellation, Wait on it with ctxs that end, and unlock, while
// another notifies now and then, and another unlocks the Lock without
// holding it. The misuse shows only where it may: an Unlock that finds the
// Lock unlocked panics, and so does a Wait called once the caller's hold was
// let go; Lock never panics, Wait panics with nothing else, nothing hangs,
// and once every goroutine is done the Lock is free, with nobody queued on
// it or on the Condition.
func TestHammerConditionMisusedUnlocks(t *testing.T) {
	const workers = 6
	var l Lock
	c := NewCondition(&l)
	known := func(p any) {
		switch p {
		case nil, "ctxsync: Unlock of unlocked Lock", "ctxsync: Condition.Wait without holding its Lock":
		default:
			t.Errorf("unexpected panic: %v", p)
		}
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	for i := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 0xc0d))
			for range 300 {
				ctx, cancel := rv16dCtx(r)
				var err error
				if p := testutil.PanicOf(func() { err = c.Lock(ctx) }); p != nil {
					t.Errorf("Lock panicked: %v", p)
				}
				cancel()
				if err != nil {
					continue
				}
				for range r.IntN(3) {
					wctx, wcancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(300))*time.Microsecond)
					p := testutil.PanicOf(func() { _ = c.Wait(wctx) })
					wcancel()
					known(p)
					if p != nil {
						break // its hold was let go: it holds nothing
					}
				}
				known(testutil.PanicOf(c.Unlock))
			}
		})
	}
	var helpers sync.WaitGroup
	helpers.Go(func() {
		r := rand.New(rand.NewPCG(1, 0xc0d))
		for !stop.Load() {
			if r.IntN(2) == 0 {
				c.Notify(1 + r.IntN(2))
			} else {
				c.NotifyAll()
			}
			runtime.Gosched()
		}
	})
	helpers.Go(func() {
		r := rand.New(rand.NewPCG(2, 0xc0d))
		for !stop.Load() {
			known(testutil.PanicOf(c.Unlock))
			for range r.IntN(200) {
				runtime.Gosched()
			}
		}
	})
	wg.Wait()
	stop.Store(true)
	helpers.Wait()
	require.Zero(t, c.Waiting())
	lockAtRest(t, &l)
}

// TestLockMisusedUnlocksAtHandOvers: TestLockFIFOUnderRandomCancellation with
// a goroutine that, at whole milliseconds too, unlocks the Lock without
// holding it: so that misused Unlocks, hand-overs and the ends of waiters'
// ctxs fall on the same virtual moments, in every order the scheduler picks.
// Lock never panics; an Unlock that panics does so with Lock's message; and
// in the end the Lock is free with nobody queued.
func TestLockMisusedUnlocksAtHandOvers(t *testing.T) {
	for seed := range uint64(300) {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0xabc))
			var l Lock
			bg := context.Background()
			unlock := func() {
				if p := testutil.PanicOf(l.Unlock); p != nil && p != "ctxsync: Unlock of unlocked Lock" {
					t.Errorf("Unlock panicked with %v", p)
				}
			}
			require.NoError(t, l.Lock(bg))
			const n = 10
			var wg sync.WaitGroup
			for range n {
				ctx, cancel := context.WithTimeout(bg, time.Duration(1+r.IntN(n))*time.Millisecond)
				hold := time.Duration(r.IntN(3)) * time.Millisecond
				again := r.IntN(2) == 0
				wg.Go(func() {
					defer cancel()
					for {
						var err error
						if p := testutil.PanicOf(func() { err = l.Lock(ctx) }); p != nil {
							t.Errorf("Lock panicked with %v", p)
						}
						if err != nil {
							return
						}
						time.Sleep(hold)
						unlock()
						if !again {
							return
						}
						time.Sleep(time.Millisecond)
					}
				})
			}
			misuses := make([]time.Duration, 1+r.IntN(4))
			for i := range misuses {
				misuses[i] = time.Duration(r.IntN(n)) * time.Millisecond
			}
			wg.Go(func() {
				for _, d := range misuses {
					time.Sleep(d)
					unlock()
				}
			})
			time.Sleep(time.Duration(r.IntN(n)) * time.Millisecond)
			unlock()
			wg.Wait()
			lockAtRest(t, &l)
		})
	}
}
