package ctxsync_test

// The tests of this file are Go's tests of sync.Cond (src/sync/
// cond_test.go), re-expressed against Condition, one Go test per peer test,
// named after it. Signal is Notify(1), Broadcast is NotifyAll, c.L.Lock is
// the Condition's Lock with a ctx that never ends. The peer's channel
// hand-shakes that show a goroutine asleep are synctest.Wait in a
// testing/synctest bubble, and its two-second timeout is the bubble's
// deadlock detection.
//
// Where our contract differs by design (doc.go and Condition's doc):
//
//   - CondSignal, CondSignalGenerations: sync.Cond wakes some waiter; ours
//     wakes the one that has waited longest, and the port checks which.
//   - CondBroadcast: the peer runs 200 goroutines for 200 rounds; the port
//     runs fewer on this shared machine. Waiters woken together may re-take
//     the Lock in any order (see TestPortAsyncioConditionNotifiedRelockInOrder);
//     the port, like the peer, checks only that each wakes once per round.
//   - CondCopy: sync.Cond detects a copy at run time and panics; a
//     Condition carries a noCopy for go vet instead, which
//     TestVetReportsCopies checks. A copy is not detected at run time.
//   - Race: the peer's name; its Signal calls are made under the Lock, as
//     ours are.
//
// Skipped, with no counterpart: the Benchmark* functions (see bench/).

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// gosyncWaiter locks c, reports it runs, waits for one notification, reports
// it woke, and unlocks.
func gosyncWaiter(t *testing.T, c *ctxsync.Condition, id int, awake chan<- int) {
	if err := c.Lock(context.Background()); err != nil {
		t.Errorf("Lock = %v", err)
		return
	}
	defer c.Unlock()
	if err := c.Wait(context.Background()); err != nil {
		t.Errorf("Wait = %v", err)
		return
	}
	awake <- id
}

func TestPortGoConditionSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		const n = 2
		awake := make(chan int, n)
		for i := range n {
			go gosyncWaiter(t, c, i, awake)
			synctest.Wait() // waiting, in this order
		}
		require.Equal(t, n, c.Waiting())
		for i := range n {
			require.Empty(t, awake, "a goroutine woke before a Notify")
			require.NoError(t, c.Lock(t.Context()))
			c.Notify(1)
			c.Unlock()
			synctest.Wait()
			require.Len(t, awake, 1, "goroutines woken by one Notify(1)")
			require.Equal(t, i, <-awake, "Notify(1) wakes the longest waiter")
		}
		c.Notify(1) // nobody waits: nothing happens
		require.Zero(t, c.Waiting())
	})
}

// TestPortGoConditionSignalGenerations: each Notify(1) wakes the goroutine
// that was waiting when it was made, not one that came after.
func TestPortGoConditionSignalGenerations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		const n = 100
		awake := make(chan int, n)
		for i := range n {
			go gosyncWaiter(t, c, i, awake)
			if i > 0 {
				require.Equal(t, i-1, <-awake, "woken goroutine")
			}
			synctest.Wait() // goroutine i waits
			require.NoError(t, c.Lock(t.Context()))
			c.Notify(1)
			c.Unlock()
		}
		require.Equal(t, n-1, <-awake)
	})
}

func TestPortGoConditionBroadcast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		const n = 40
		running := make(chan int, n)
		awake := make(chan int, n)
		exit := false // guarded by c's Lock
		for g := range n {
			go func() {
				if err := c.Lock(context.Background()); err != nil {
					t.Errorf("Lock = %v", err)
					return
				}
				defer c.Unlock()
				for !exit {
					running <- g
					if err := c.Wait(context.Background()); err != nil {
						t.Errorf("Wait = %v", err)
						return
					}
					awake <- g
				}
			}()
		}
		for round := range n {
			for range n {
				<-running
			}
			if round == n-1 {
				require.NoError(t, c.Lock(t.Context()))
				exit = true
				c.Unlock()
			}
			synctest.Wait()
			require.Empty(t, awake, "a goroutine woke before the NotifyAll")
			require.NoError(t, c.Lock(t.Context()))
			c.NotifyAll()
			c.Unlock()
			seen := make([]bool, n)
			for range n {
				g := <-awake
				require.False(t, seen[g], "goroutine %d woke twice in round %d", g, round)
				seen[g] = true
			}
		}
		synctest.Wait()
		require.Empty(t, running, "a goroutine did not exit")
		require.Zero(t, c.Waiting())
		c.NotifyAll()
	})
}

// TestPortGoConditionRace: three goroutines hand x along under the Lock,
// each change announced with Notify(1); each must see the value the one
// before it left.
func TestPortGoConditionRace(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	bg := context.Background()
	x := 0 // guarded by c's Lock
	done := make(chan struct{}, 3)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = c.Lock(bg)
		defer c.Unlock()
		x = 1
		_ = c.Wait(bg)
		if x != 2 {
			t.Errorf("x = %d after the first Wait, want 2", x)
		}
		x = 3
		c.Notify(1)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		_ = c.Lock(bg)
		defer c.Unlock()
		for x != 1 {
			c.Unlock()
			runtime.Gosched()
			_ = c.Lock(bg)
		}
		x = 2
		c.Notify(1)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		_ = c.Lock(bg)
		defer c.Unlock()
		for {
			if x == 2 {
				_ = c.Wait(bg)
				if x != 3 {
					t.Errorf("x = %d after the third goroutine's Wait, want 3", x)
				}
				return
			}
			if x == 3 {
				return
			}
			c.Unlock()
			runtime.Gosched()
			_ = c.Lock(bg)
		}
	}()
	for range 3 {
		<-done
	}
}

// TestPortGoConditionSignalStealing: a NotifyAll racing with a new Wait must
// wake the goroutine that was waiting before it; the newcomer may or may not
// be woken.
func TestPortGoConditionSignalStealing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 200 {
			c := ctxsync.NewCondition(nil)
			first := make(chan struct{})
			go func() {
				defer close(first)
				_ = c.Lock(context.Background())
				_ = c.Wait(context.Background())
				c.Unlock()
			}()
			// Once the Lock is free again, the first waiter is in Wait.
			for c.Waiting() == 0 {
				runtime.Gosched()
			}
			require.NoError(t, c.Lock(t.Context()))
			c.Unlock()

			var done atomic.Bool
			second := make(chan struct{})
			go c.NotifyAll()
			go func() {
				defer close(second)
				_ = c.Lock(context.Background())
				for !done.Load() {
					_ = c.Wait(context.Background())
				}
				c.Unlock()
			}()
			synctest.Wait()
			select {
			case <-first:
			default:
				t.Fatal("the first waiter missed the NotifyAll")
			}
			done.Store(true)
			c.NotifyAll()
			<-second
		}
	})
}
