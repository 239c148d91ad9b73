package ctxsync_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// condModel is what a Condition and its Lock should be. Between steps, only
// the script's goroutine holds the Lock, if anyone does: each waiter locks,
// calls Wait, and unlocks as soon as Wait returns. So the model needs the
// goroutines waiting for a notification, in order, and those waiting for the
// Lock while the script holds it, in order: waiters still to call Wait, and
// waiters that Wait must lock for again before it returns.
//
// Each waiter logs its number once its call has returned, holding the Lock;
// relocks is the log the model expects. Waiters that one Notify wakes, and
// those that later ones wake, take the Lock in the order they were notified,
// after the goroutines queued for it before they were woken.
type condModel struct {
	panics      map[*modelWaiter]bool // waiters in WaitFor, whose predicate panics once woken
	ids         map[*modelWaiter]int
	scriptHolds bool
	waiting     []*modelWaiter // in Wait, for a notification
	locking     []condLocker   // for the Lock, held by the script
	relocks     []int          // the waiters' log, in the order they return
}

type condLocker struct {
	w      *modelWaiter
	inWait bool // Wait is locking again, to return w's settled result
	ended  bool // not inWait: the waiter's ctx ended before it called Wait
}

// wake ends the Wait of the i'th waiter with err: at once if the Lock is free,
// else once the script unlocks.
func (m *condModel) wake(i int, err error) {
	mw := m.waiting[i]
	m.waiting = append(m.waiting[:i], m.waiting[i+1:]...)
	if err == nil && m.panics[mw] {
		err = errPanicked // WaitFor calls the predicate again, holding the Lock
	}
	if m.scriptHolds {
		mw.want = err // returned once Wait has the Lock again
		m.locking = append(m.locking, condLocker{w: mw, inWait: true})
		return
	}
	mw.settle(err)
	m.relocks = append(m.relocks, m.ids[mw])
}

// unlock is the script's Unlock: the goroutines waiting for the Lock take it
// in turn, calling Wait or returning from it.
func (m *condModel) unlock() {
	m.scriptHolds = false
	for _, l := range m.locking {
		switch {
		case l.inWait:
			l.w.settle(l.w.want)
		case l.ended:
			l.w.settle(context.Canceled) // a done ctx fails Wait at once
		default:
			m.waiting = append(m.waiting, l.w)
			continue
		}
		m.relocks = append(m.relocks, m.ids[l.w])
	}
	m.locking = nil
}

// FuzzConditionModel checks a Condition against condModel (see
// model_test.go): after each step, every Wait's outcome, Waiting and Locked.
// Each step is two bytes: an operation and its argument (how many to Notify,
// which waiter's ctx to end). Some waiters call WaitFor with a predicate that
// panics when it is called after a wake-up: the panic must reach them with the
// Lock held, so that their deferred Unlock stays right. The order in which the
// calls return, each holding the Lock, is checked too: waiters notified earlier
// take the Lock before those notified later.
func FuzzConditionModel(f *testing.F) {
	// Notify wakes the oldest; NotifyAll the rest; a waiter whose ctx ends
	// leaves the queue and returns its error.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 5, 1, 4, 0, 3, 5})
	// With the Lock held by the script, woken and ending waiters wait for it;
	// a waiter that came while it was held calls Wait on its Unlock, or fails
	// at once if its ctx ended first.
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3, 1, 5, 0, 5, 2, 2, 0, 4, 0})
	// Misuse: Unlock of an unlocked Lock, Wait without the Lock.
	f.Add([]byte{2, 0, 6, 0, 1, 0, 1, 0, 2, 0, 2, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 4, 0, 5, 1, 3, 2, 2, 0})
	// Predicates that panic after a wake-up, by Notify(math.MaxInt) and by
	// Notify with the Lock held.
	f.Add([]byte{7, 0, 0, 0, 7, 0, 3, 255, 7, 0, 1, 0, 3, 1, 5, 0, 2, 0})
	// On a Lock of the script's (an odd length): its Waiting counts the
	// goroutines in Lock and the woken waiters that lock again.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 2, 5, 3, 4, 0, 5, 0, 2, 0, 9})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := condModel{panics: make(map[*modelWaiter]bool), ids: make(map[*modelWaiter]int)}
			// An odd script's Condition is on a Lock of the script's, whose
			// Waiting counts the goroutines of m.locking: those in Lock,
			// and those Wait locks for again (see Lock.Waiting).
			var l *ctxsync.Lock
			if len(script)%2 == 1 {
				l = ctxsync.NewLock()
			}
			c := ctxsync.NewCondition(l)
			var all []*modelWaiter
			var relocks pyLog
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%8, int(script[1]); op {
				case 0, 7:
					call := func(ctx context.Context) error { return c.Wait(ctx) }
					if op == 7 {
						call = func(ctx context.Context) (err error) {
							defer func() {
								if recover() != nil {
									err = errPanicked
								}
							}()
							calls := 0
							return c.WaitFor(ctx, func() bool {
								if calls++; calls > 1 {
									panic("the predicate panicked")
								}
								return false
							})
						}
					}
					id := len(m.ids)
					mw := startWaiter(t.Context(), "Wait", func(ctx context.Context) error {
						if err := c.Lock(context.Background()); err != nil {
							return err
						}
						defer c.Unlock() // panics if WaitFor let its panic go without the Lock
						err := call(ctx)
						relocks.add(id)
						return err
					})
					all = append(all, mw)
					m.ids[mw] = id
					m.panics[mw] = op == 7
					if m.scriptHolds {
						m.locking = append(m.locking, condLocker{w: mw})
					} else {
						m.waiting = append(m.waiting, mw)
					}
				case 1:
					require.Equal(t, !m.scriptHolds, c.TryLock(), "TryLock")
					m.scriptHolds = true
				case 2:
					if !m.scriptHolds {
						require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", c.Unlock)
						continue
					}
					c.Unlock()
					m.unlock()
				case 3:
					n := arg % 4
					if arg >= 128 {
						n = math.MaxInt
					}
					c.Notify(n)
					for range min(n, len(m.waiting)) {
						m.wake(0, nil)
					}
				case 4:
					c.NotifyAll()
					for len(m.waiting) > 0 {
						m.wake(0, nil)
					}
				case 5:
					// End the ctx of a waiter: one waiting for a
					// notification, or for the Lock.
					n := len(m.waiting) + len(m.locking)
					if n == 0 {
						continue
					}
					if i := arg % n; i < len(m.waiting) {
						m.waiting[i].cancel()
						m.wake(i, context.Canceled)
					} else {
						l := &m.locking[i-len(m.waiting)]
						l.w.cancel()
						// Woken already, Wait returns nil: the wake-up is
						// not undone. Not yet in Wait, it will fail at once.
						l.ended = l.ended || !l.inWait
					}
				case 6:
					if !m.scriptHolds {
						require.PanicsWithValue(t, "ctxsync: Condition.Wait without holding its Lock", func() {
							_ = c.Wait(t.Context())
						})
					}
					continue
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, m.relocks, relocks.get(), "the order in which the calls took the Lock to return")
				require.Equal(t, len(m.waiting), c.Waiting())
				require.Equal(t, m.scriptHolds, c.Locked())
				if l != nil {
					require.Equal(t, len(m.locking), l.Waiting(), "Lock.Waiting")
				}
			}
			if m.scriptHolds {
				c.Unlock()
				m.unlock()
			}
			cancelAll(all)
		})
	})
}
