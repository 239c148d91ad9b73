package ctxsync

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// TestRelockPlaces checks relockPlaces against a map: tickets put in
// increasing order, with gaps, and taken in any order, across growth and the
// wrap of the ring.
func TestRelockPlaces(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 14))
	var rp relockPlaces
	held := map[uint64]*waitq.Waiter[int64]{}
	next := uint64(1) << 40 // far from 0: the ring's index wraps
	for range 20000 {
		if len(held) == 0 || r.IntN(2) == 0 {
			next += uint64(r.IntN(3)) // tickets that settled themselves hold nothing
			p := new(waitq.Waiter[int64])
			rp.put(next, p)
			held[next] = p
			next++
			continue
		}
		// Take the oldest now and then, to move low on; any other else.
		var k uint64
		for k = range held {
			break
		}
		if r.IntN(4) == 0 {
			for j := range held {
				k = min(k, j)
			}
		}
		require.Same(t, held[k], rp.take(k), "place of ticket %d", k)
		delete(held, k)
		require.Equal(t, len(held), rp.n)
	}
	for k, p := range held {
		require.Same(t, p, rp.take(k))
	}
	require.Zero(t, rp.n)
	require.Panics(t, func() { rp.take(next) }, "a ticket with no place")
}

// TestConditionNotifyAllThousands: NotifyAll wakes 3000 waiters with the Lock
// held, and the youngest runs first (one processor: the goroutine readied last
// runs next). It queues places for all of them at once; they take the Lock in
// the order they were notified, and a NotifyAll that large leaves no ring of
// places behind.
func TestConditionNotifyAllThousands(t *testing.T) {
	const n = 3000
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		c := NewCondition(nil)
		ctx := context.Background()
		var got []int // guarded by c's Lock
		returned := make(chan struct{}, n)
		for i := range n {
			go func() {
				_ = c.Lock(ctx)
				defer c.Unlock()
				if err := c.Wait(ctx); err != nil {
					t.Errorf("Wait = %v", err)
				}
				got = append(got, i)
				returned <- struct{}{}
			}()
			synctest.Wait()
		}
		require.NoError(t, c.Lock(ctx))
		c.NotifyAll()
		c.Unlock()
		for range n {
			<-returned
		}
		require.NoError(t, c.Lock(ctx))
		defer c.Unlock()
		for i := range n {
			if got[i] != i {
				t.Fatalf("the %d'th waiter to take the Lock was the %d'th notified", i, got[i])
			}
		}
		require.Zero(t, c.places.n)
		require.LessOrEqual(t, len(c.places.slots), relockKeep)
		require.Equal(t, c.tickets, c.turn.Load(), "every ticket settled")
	})
}

// TestConditionWithdrawNotified: a Wait that panics because the Lock was
// unlocked under it (see unlockQueued) may have been notified meanwhile. It
// passes the notification on and gives up the place on the Lock that came
// with its ticket, whether a waiter notified after it had queued that place
// (taken) or not yet (settled by the withdrawal itself), and the waiters
// notified with it take the Lock in order, with none left stuck behind it.
func TestConditionWithdrawNotified(t *testing.T) {
	type tc struct{ wFirst, queuedByOther, held bool }
	for _, tc := range []tc{{false, false, false}, {false, false, true}, {false, true, true}, {true, false, false}, {true, false, true}} {
		wFirst, queuedByOther, held := tc.wFirst, tc.queuedByOther, tc.held
		{
			testutil.OneProcessor(t)
			synctest.Test(t, func(t *testing.T) {
				c := NewCondition(nil)
				ctx := context.Background()
				var got []string // guarded by c's Lock
				waiter := func(name string) {
					_ = c.Lock(ctx)
					defer c.Unlock()
					if err := c.Wait(ctx); err != nil {
						t.Errorf("%s: Wait = %v", name, err)
					}
					got = append(got, name)
				}
				// The misused Wait's waiter, between a and b or before them.
				push := func() *waitq.Waiter[uint64] {
					c.q.Lock()
					defer c.q.Unlock()
					return c.q.PushDone(nil, 0)
				}
				var w *waitq.Waiter[uint64]
				if wFirst {
					w = push()
				}
				go waiter("a")
				synctest.Wait()
				if !wFirst {
					w = push()
				}
				go waiter("b")
				synctest.Wait()
				if held {
					require.NoError(t, c.Lock(ctx))
				}
				c.NotifyAll() // w's ticket is 0 or 1
				if queuedByOther {
					synctest.Wait() // b queues places for a, w and itself
					require.Equal(t, uint64(3), c.turn.Load())
				}
				c.withdraw(w)
				// The withdrawal settled a's place, if b had not, and its
				// own. (b may have run meanwhile: with w first, alone in
				// the queue, its wait for the grant yields, and the race
				// detector may switch goroutines too.)
				settled := uint64(2) // w's ticket is 1
				if wFirst {
					settled = 1 // w's ticket is 0
				}
				require.GreaterOrEqual(t, c.turn.Load(), settled)
				require.Zero(t, c.Waiting())
				if held {
					c.Unlock()
				}
				synctest.Wait()
				require.NoError(t, c.Lock(ctx))
				require.Equal(t, []string{"a", "b"}, got)
				require.Zero(t, c.lock().Waiting())
				require.Zero(t, c.places.n)
				c.Unlock()
				require.False(t, c.Locked())
			})
		}
	}
}

// TestConditionTookTurnAfterPlaceQueued: the waiter of the oldest ticket takes
// a free Lock by TryLock without the Condition's lock, and before it moves
// turn on, a waiter notified after it queues places for both. Its CAS fails;
// it takes its place back out of the Lock's queue, keeping the Lock, and the
// later waiter's place is next.
func TestConditionTookTurnAfterPlaceQueued(t *testing.T) {
	c := NewCondition(nil)
	l := c.lock()
	c.tickets = 2 // tickets 0 and 1 notified
	require.True(t, l.TryLock(), "ticket 0's fast path")
	c.q.Lock()
	p1 := c.settleLocked(l, 1) // ticket 1 finds the Lock taken
	c.q.Unlock()
	require.NotNil(t, p1)
	require.Equal(t, 2, l.Waiting(), "places for tickets 0 and 1")
	c.tookTurn(l, 0)
	require.Equal(t, 1, l.Waiting(), "ticket 0's place taken out")
	require.Zero(t, c.places.n)
	require.True(t, l.Locked())
	l.Unlock() // ticket 0 is done: the Lock goes to ticket 1's place
	l.waitPlace(p1)
	require.True(t, l.Locked())
	require.Zero(t, l.Waiting())
	l.Unlock()
	require.False(t, l.Locked())
	require.True(t, l.TryLock(), "nothing left queued")
	l.Unlock()
}
