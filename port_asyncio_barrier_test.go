package ctxsync_test

// The tests of this file port CPython's tests of asyncio.Barrier
// (Lib/test/test_asyncio/test_locks.py, BarrierTests) to ctxsync's Barrier.
// Tasks, cancels and steps of the loop are as in port_asyncio_lock_test.go;
// each case is named after the peer's.
//
// Where our documented behaviour differs from asyncio's by design:
//   - filling_tasks_cancel_one: a party that gives up before its round is
//     complete breaks the barrier (threading.Barrier's rule, documented on
//     Barrier); asyncio just counts it out and lets others take its place.
//     The port checks the break, and that a Reset makes the barrier whole.
//   - barrier_parties: fewer than one party is misuse and panics
//     ("ctxsync: ..."); asyncio raises ValueError.
//   - repr, draining_state, filling_task_by_task: there is no repr and no
//     "draining" state. A complete round releases all its parties at once,
//     and the next Wait starts the next round at once; Waiting and Broken
//     report the rest.
//   - reset_barrier_when_tasks_half_draining, ..._half_draining_half_blocking,
//     reset_barrier_while_tasks_draining,
//     abort_barrier_when_tasks_half_draining_half_blocking: with no draining
//     state, a Reset or an Abort by a party that has been released reaches
//     only parties that arrived since, in the next round; it never takes
//     back the release of a complete round. The peer's counts follow from
//     its draining; the ports set up the same steps one by one and check
//     our counts. The nearest thing to draining, a complete round whose
//     action runs, is ended by a Reset from that action, for every party.
//
// Skipped, with no counterpart:
//   - barrier's "await barrier": a type error that Go's compiler reports.
//   - context_manager's "async with": the port is a plain Wait.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

const pyParties = 5 // the peer's N

// barrierWaiters starts n tasks that each Wait once on b and log their
// index, and returns them.
func barrierWaiters(b *ctxsync.Barrier, got *pyLog, n int) []*pyTask {
	tasks := make([]*pyTask, n)
	for i := range n {
		tasks[i] = pyGo(func(ctx context.Context) error {
			idx, err := b.Wait(ctx)
			if err == nil {
				got.add(idx)
			}
			return err
		})
	}
	return tasks
}

// requireAll checks that every task returned want.
func requireAll(t *testing.T, want error, tasks []*pyTask) {
	t.Helper()
	for i, tk := range tasks {
		require.Equal(t, want, tk.result(), "task %d", i)
	}
}

func TestPortAsyncioBarrierBarrier(t *testing.T) {
	b := ctxsync.NewBarrier(pyParties, nil)
	require.Equal(t, pyParties, b.Parties())
	require.Zero(t, b.Waiting())
	require.False(t, b.Broken())
}

func TestPortAsyncioBarrierRepr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		var got pyLog
		first := barrierWaiters(b, &got, 2)
		synctest.Wait()
		require.Equal(t, 2, b.Waiting())
		require.False(t, b.Broken())

		rest := barrierWaiters(b, &got, b.Parties()-b.Waiting())
		requireAll(t, nil, append(first, rest...))
		require.Zero(t, b.Waiting())

		more := barrierWaiters(b, &got, 2)
		synctest.Wait()
		require.Equal(t, 2, b.Waiting())
		b.Reset()
		requireAll(t, ctxsync.ErrBrokenBarrier, more)
		require.False(t, b.Broken())
		require.Zero(t, b.Waiting())

		more = barrierWaiters(b, &got, 2)
		synctest.Wait()
		require.Equal(t, 2, b.Waiting())
		b.Abort()
		requireAll(t, ctxsync.ErrBrokenBarrier, more)
		require.True(t, b.Broken())
		require.Zero(t, b.Waiting())
	})
}

func TestPortAsyncioBarrierBarrierParties(t *testing.T) {
	for _, n := range []int{0, -4} {
		testutil.RequirePanicPrefix(t, "ctxsync: NewBarrier with fewer than 1 party", func() { ctxsync.NewBarrier(n, nil) })
	}
	require.NotNil(t, ctxsync.NewBarrier(pyParties, nil))
}

func TestPortAsyncioBarrierContextManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3
		b := ctxsync.NewBarrier(n, nil)
		var got pyLog
		requireAll(t, nil, barrierWaiters(b, &got, n))
		require.Equal(t, []int{0, 1, 2}, got.sorted())
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

func TestPortAsyncioBarrierFillingOneTask(t *testing.T) {
	b := ctxsync.NewBarrier(1, nil)
	i, err := b.Wait(context.Background())
	require.NoError(t, err)
	require.Zero(t, i)
	require.Zero(t, b.Waiting())
	require.False(t, b.Broken())
}

func TestPortAsyncioBarrierFillingOneTaskTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(1, nil)
		var got pyLog
		t1 := barrierWaiters(b, &got, 1)
		synctest.Wait()
		require.Zero(t, b.Waiting())
		t2 := barrierWaiters(b, &got, 1)
		synctest.Wait()
		requireAll(t, nil, append(t1, t2...))
		require.Equal(t, []int{0, 0}, got.get())
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

func TestPortAsyncioBarrierFillingTaskByTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3
		b := ctxsync.NewBarrier(n, nil)
		var idx [n]int
		var tasks []*pyTask
		for i := range n {
			tasks = append(tasks, pyGo(func(ctx context.Context) (err error) {
				idx[i], err = b.Wait(ctx)
				return err
			}))
			synctest.Wait()
			if i < n-1 {
				require.Equal(t, i+1, b.Waiting())
			}
		}
		requireAll(t, nil, tasks)
		require.Equal(t, [n]int{0, 1, 2}, idx, "indices in the order of arrival")
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

// twiceBarrier runs the peer's N tasks that each pass b twice, and returns
// the indices of the two rounds.
func twiceBarrier(t *testing.T, b *ctxsync.Barrier) (first, second []int) {
	var r1, r2 pyLog
	tasks := make([]*pyTask, pyParties)
	for i := range tasks {
		tasks[i] = pyGo(func(ctx context.Context) error {
			idx, err := b.Wait(ctx)
			if err != nil {
				return err
			}
			r1.add(idx)
			if idx, err = b.Wait(ctx); err != nil {
				return err
			}
			r2.add(idx)
			return nil
		})
	}
	requireAll(t, nil, tasks)
	return r1.sorted(), r2.sorted()
}

func TestPortAsyncioBarrierFillingTasksWaitTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		first, second := twiceBarrier(t, b)
		require.Len(t, first, pyParties)
		require.Len(t, second, pyParties)
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

func TestPortAsyncioBarrierFillingTasksCheckReturnValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		first, second := twiceBarrier(t, b)
		want := []int{0, 1, 2, 3, 4}
		require.Equal(t, want, first)
		require.Equal(t, want, second)
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

// TestPortAsyncioBarrierDrainingState: every party of a complete round is
// released at once; none finds its round still gathering parties.
func TestPortAsyncioBarrierDrainingState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		var seen pyLog
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				_, err := b.Wait(ctx)
				seen.add(b.Waiting())
				return err
			})
		}
		requireAll(t, nil, tasks)
		require.Equal(t, make([]int, pyParties), seen.get())
		require.False(t, b.Broken())
	})
}

// TestPortAsyncioBarrierBlockingTasksWhileDraining: after a first round, two
// parties wait again at once, and three meet on a second barrier first; the
// five make the second round.
func TestPortAsyncioBarrierBlockingTasksWhileDraining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rewait = 2
		b := ctxsync.NewBarrier(pyParties, nil)
		others := ctxsync.NewBarrier(pyParties-rewait, nil)
		var mu sync.Mutex
		left := rewait
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				if _, err := b.Wait(ctx); err != nil {
					return err
				}
				mu.Lock()
				again := left > 0
				left--
				mu.Unlock()
				if !again {
					if _, err := others.Wait(ctx); err != nil {
						return err
					}
				}
				_, err := b.Wait(ctx)
				return err
			})
		}
		requireAll(t, nil, tasks)
		require.False(t, b.Broken())
		require.False(t, others.Broken())
	})
}

// TestPortAsyncioBarrierFillingTasksCancelOne: of three parties, the first
// gives up while the second waits. The barrier breaks (our rule, not
// asyncio's): the second is released with ErrBrokenBarrier, and so is a
// third that comes before a Reset. After the Reset, three make a round.
func TestPortAsyncioBarrierFillingTasksCancelOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3
		b := ctxsync.NewBarrier(n, nil)
		var got pyLog
		t1 := barrierWaiters(b, &got, 1)[0]
		synctest.Wait()
		require.Equal(t, 1, b.Waiting())
		t2 := barrierWaiters(b, &got, 1)[0]
		synctest.Wait()
		require.Equal(t, 2, b.Waiting())

		t1.cancel()
		require.Equal(t, context.Canceled, t1.result())
		require.Equal(t, ctxsync.ErrBrokenBarrier, t2.result())
		require.True(t, b.Broken())
		require.Zero(t, b.Waiting())
		t3 := barrierWaiters(b, &got, 1)[0]
		require.Equal(t, ctxsync.ErrBrokenBarrier, t3.result())

		b.Reset()
		requireAll(t, nil, barrierWaiters(b, &got, n))
		require.Equal(t, []int{0, 1, 2}, got.sorted())
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

func TestPortAsyncioBarrierResetBarrier(t *testing.T) {
	b := ctxsync.NewBarrier(1, nil)
	b.Reset()
	require.Zero(t, b.Waiting())
	require.False(t, b.Broken())
}

// TestPortAsyncioBarrierResetBarrierWhileTasksWaiting: N-1 parties wait, and
// a Reset releases them with ErrBrokenBarrier, the barrier whole. The
// subtests race the Reset with the end of one waiter's ctx, in both orders:
// a waiter whose ctx ended first returns ctx.Err() and must not break the
// barrier the Reset made whole; one handed the Reset's error first reports
// either. In every case N parties then make a round.
func TestPortAsyncioBarrierResetBarrierWhileTasksWaiting(t *testing.T) {
	for _, order := range []string{"NoCancel", "CancelThenReset", "ResetThenCancel"} {
		t.Run(order, func(t *testing.T) {
			testutil.OneProcessor(t) // the waiter does not run between the two
			synctest.Test(t, func(t *testing.T) {
				b := ctxsync.NewBarrier(pyParties, nil)
				var got pyLog
				tasks := barrierWaiters(b, &got, pyParties-1)
				synctest.Wait()
				require.Equal(t, pyParties-1, b.Waiting())
				switch order {
				case "CancelThenReset":
					tasks[0].cancel()
					b.Reset()
				case "ResetThenCancel":
					b.Reset()
					tasks[0].cancel()
				default:
					b.Reset()
				}
				err := tasks[0].result()
				switch order {
				case "CancelThenReset":
					require.Equal(t, context.Canceled, err)
				case "ResetThenCancel":
					if err != ctxsync.ErrBrokenBarrier {
						require.Equal(t, context.Canceled, err)
					}
				default:
					require.Equal(t, ctxsync.ErrBrokenBarrier, err)
				}
				requireAll(t, ctxsync.ErrBrokenBarrier, tasks[1:])
				require.Zero(t, b.Waiting())
				require.False(t, b.Broken(), "a party that gave up broke the barrier after the Reset")

				requireAll(t, nil, barrierWaiters(b, &got, pyParties))
				require.Equal(t, []int{0, 1, 2, 3, 4}, got.sorted())
			})
		})
	}
}

// TestPortAsyncioBarrierAbortWhileTasksWaiting is the Abort twin of the
// subtests above, which the peer has no case for: whatever the order of the
// Abort and the end of a waiter's ctx, the barrier is broken, every other
// waiter is released with ErrBrokenBarrier, and nobody is left waiting.
func TestPortAsyncioBarrierAbortWhileTasksWaiting(t *testing.T) {
	for _, cancelFirst := range []bool{true, false} {
		name := "AbortThenCancel"
		if cancelFirst {
			name = "CancelThenAbort"
		}
		t.Run(name, func(t *testing.T) {
			testutil.OneProcessor(t)
			synctest.Test(t, func(t *testing.T) {
				b := ctxsync.NewBarrier(pyParties, nil)
				var got pyLog
				tasks := barrierWaiters(b, &got, pyParties-1)
				synctest.Wait()
				if cancelFirst {
					tasks[0].cancel()
					b.Abort()
				} else {
					b.Abort()
					tasks[0].cancel()
				}
				if err := tasks[0].result(); err != ctxsync.ErrBrokenBarrier {
					require.Equal(t, context.Canceled, err)
				}
				requireAll(t, ctxsync.ErrBrokenBarrier, tasks[1:])
				require.True(t, b.Broken())
				require.Zero(t, b.Waiting())
			})
		})
	}
}

// TestPortAsyncioBarrierResetBarrierWhenTasksHalfDraining: a party released
// from a complete round resets the barrier at once. Its round stays
// complete: every party returns nil. (The peer's Reset breaks the parties
// still draining.) The subtest ResetInAction is the nearest thing to the
// peer's case: a Reset from the action of a complete round, before its
// parties are released, ends the round for all of them.
func TestPortAsyncioBarrierResetBarrierWhenTasksHalfDraining(t *testing.T) {
	t.Run("ResetAfterRelease", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := ctxsync.NewBarrier(pyParties, nil)
			tasks := make([]*pyTask, pyParties)
			for i := range tasks {
				tasks[i] = pyGo(func(ctx context.Context) error {
					idx, err := b.Wait(ctx)
					if err == nil && idx == pyParties/2 {
						b.Reset()
					}
					return err
				})
			}
			requireAll(t, nil, tasks)
			require.Zero(t, b.Waiting())
			require.False(t, b.Broken())
		})
	})
	t.Run("ResetInAction", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var b *ctxsync.Barrier
			b = ctxsync.NewBarrier(pyParties, func() error { b.Reset(); return nil })
			var got pyLog
			requireAll(t, ctxsync.ErrBrokenBarrier, barrierWaiters(b, &got, pyParties))
			require.Zero(t, b.Waiting())
			require.False(t, b.Broken())
		})
	})
}

// TestPortAsyncioBarrierResetBarrierWhenTasksHalfDrainingHalfBlocking, step
// by step: all pass a first round; two wait again at once; a Reset releases
// those two with ErrBrokenBarrier, and they wait again; the three others
// join them, and the round completes.
func TestPortAsyncioBarrierResetBarrierWhenTasksHalfDrainingHalfBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const blocking = pyParties / 2
		b := ctxsync.NewBarrier(pyParties, nil)
		var broken, brokenAgain pyLog
		gates := make([]chan struct{}, pyParties)
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			gates[i] = make(chan struct{})
			tasks[i] = pyGo(func(ctx context.Context) error {
				if _, err := b.Wait(ctx); err != nil {
					return err
				}
				<-gates[i]
				_, err := b.Wait(ctx)
				if errors.Is(err, ctxsync.ErrBrokenBarrier) {
					broken.add(i)
					if _, err = b.Wait(ctx); errors.Is(err, ctxsync.ErrBrokenBarrier) {
						brokenAgain.add(i)
					}
				}
				return err
			})
		}
		synctest.Wait() // the first round is over; every task waits at its gate
		require.Zero(t, b.Waiting())
		for i := range blocking {
			close(gates[i])
		}
		synctest.Wait()
		require.Equal(t, blocking, b.Waiting())
		b.Reset()
		synctest.Wait()
		require.Equal(t, []int{0, 1}, broken.sorted())
		require.Equal(t, blocking, b.Waiting(), "the two wait again")
		for i := blocking; i < pyParties; i++ {
			close(gates[i])
		}
		requireAll(t, nil, tasks)
		require.Empty(t, brokenAgain.get())
		require.Zero(t, b.Waiting())
		require.False(t, b.Broken())
	})
}

// TestPortAsyncioBarrierResetBarrierWhileTasksWaitingAndWaitingAgain: N-1
// parties wait, a Reset releases them with ErrBrokenBarrier, they wait
// again, and one more party completes the round.
func TestPortAsyncioBarrierResetBarrierWhileTasksWaitingAndWaitingAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		var r1, r2 pyLog
		tasks := make([]*pyTask, pyParties-1)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				if _, err := b.Wait(ctx); errors.Is(err, ctxsync.ErrBrokenBarrier) {
					r1.add(1)
				}
				if _, err := b.Wait(ctx); err != nil {
					return err
				}
				r2.add(1)
				return nil
			})
		}
		synctest.Wait()
		b.Reset()
		synctest.Wait()
		last := pyGo(func(ctx context.Context) error {
			if _, err := b.Wait(ctx); err != nil {
				return err
			}
			r2.add(1)
			return nil
		})
		requireAll(t, nil, append(tasks, last))
		require.False(t, b.Broken())
		require.Len(t, r1.get(), pyParties-1)
		require.Len(t, r2.get(), pyParties)
		require.Zero(t, b.Waiting())
	})
}

// TestPortAsyncioBarrierResetBarrierWhileTasksDraining: after a first round,
// one party resets the barrier before the others come back (a Reset with
// nobody waiting changes nothing); then all pass two more rounds.
func TestPortAsyncioBarrierResetBarrierWhileTasksDraining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		reset := make(chan struct{})
		var second, third pyLog
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				idx, err := b.Wait(ctx)
				if err != nil {
					return err
				}
				if idx == pyParties-1 {
					b.Reset()
					close(reset)
				} else {
					<-reset
				}
				if _, err := b.Wait(ctx); err != nil {
					return err
				}
				second.add(1)
				if _, err := b.Wait(ctx); err != nil {
					return err
				}
				third.add(1)
				return nil
			})
		}
		requireAll(t, nil, tasks)
		require.False(t, b.Broken())
		require.Len(t, second.get(), pyParties)
		require.Len(t, third.get(), pyParties)
		require.Zero(t, b.Waiting())
	})
}

func TestPortAsyncioBarrierAbortBarrier(t *testing.T) {
	b := ctxsync.NewBarrier(1, nil)
	b.Abort()
	require.Zero(t, b.Waiting())
	require.True(t, b.Broken())
	_, err := b.Wait(context.Background())
	require.Equal(t, ctxsync.ErrBrokenBarrier, err)
}

// TestPortAsyncioBarrierAbortBarrierWhenTasksHalfDrainingHalfBlocking: all
// pass a first round; the first two out wait again, and the others abort.
// Nobody's first round is taken back; the two that wait again (or come after
// an Abort) get ErrBrokenBarrier.
func TestPortAsyncioBarrierAbortBarrierWhenTasksHalfDrainingHalfBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const blocking = pyParties / 2
		b := ctxsync.NewBarrier(pyParties, nil)
		var r1, r2 pyLog
		var mu sync.Mutex
		count := 0
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				if _, err := b.Wait(ctx); errors.Is(err, ctxsync.ErrBrokenBarrier) {
					r1.add(1)
					return nil
				} else if err != nil {
					return err
				}
				mu.Lock()
				count++
				abort := count > blocking
				mu.Unlock()
				if abort {
					b.Abort()
					return nil
				}
				if _, err := b.Wait(ctx); errors.Is(err, ctxsync.ErrBrokenBarrier) {
					r2.add(1)
				} else {
					return err
				}
				return nil
			})
		}
		requireAll(t, nil, tasks)
		require.True(t, b.Broken())
		require.Empty(t, r1.get())
		require.Len(t, r2.get(), blocking)
		require.Zero(t, b.Waiting())
	})
}

// TestPortAsyncioBarrierAbortBarrierWhenException: all pass a first round;
// the party with the middle index fails and aborts, and the others, waiting
// for a second round, get ErrBrokenBarrier.
func TestPortAsyncioBarrierAbortBarrierWhenException(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(pyParties, nil)
		var r1, r2 pyLog
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				idx, err := b.Wait(ctx)
				if err == nil && idx == pyParties/2 {
					b.Abort() // the party's work failed
					return nil
				}
				if err == nil {
					_, err = b.Wait(ctx)
				}
				switch {
				case err == nil:
					r1.add(1)
				case errors.Is(err, ctxsync.ErrBrokenBarrier):
					r2.add(1)
				default:
					return err
				}
				return nil
			})
		}
		requireAll(t, nil, tasks)
		require.True(t, b.Broken())
		require.Empty(t, r1.get())
		require.Len(t, r2.get(), pyParties-1)
		require.Zero(t, b.Waiting())
	})
}

// TestPortAsyncioBarrierAbortBarrierWhenExceptionThenResetting: as above,
// then the parties meet on a second barrier, one of them resets the first
// between two rounds of the second, and all pass the first again.
func TestPortAsyncioBarrierAbortBarrierWhenExceptionThenResetting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b1 := ctxsync.NewBarrier(pyParties, nil)
		b2 := ctxsync.NewBarrier(pyParties, nil)
		var r1, r2, r3 pyLog
		tasks := make([]*pyTask, pyParties)
		for i := range tasks {
			tasks[i] = pyGo(func(ctx context.Context) error {
				idx, err := b1.Wait(ctx)
				switch {
				case err == nil && idx == pyParties/2:
					b1.Abort()
				case err == nil:
					if _, err = b1.Wait(ctx); err == nil {
						r1.add(1)
					} else if errors.Is(err, ctxsync.ErrBrokenBarrier) {
						r2.add(1)
					} else {
						return err
					}
				default:
					return err
				}
				// Everyone has left b1 before the Reset, and nobody comes
				// back to it before.
				if idx, err = b2.Wait(ctx); err != nil {
					return err
				}
				if idx == pyParties/2 {
					b1.Reset()
				}
				if _, err = b2.Wait(ctx); err != nil {
					return err
				}
				if _, err = b1.Wait(ctx); err != nil {
					return err
				}
				r3.add(1)
				return nil
			})
		}
		requireAll(t, nil, tasks)
		require.False(t, b1.Broken())
		require.Empty(t, r1.get())
		require.Len(t, r2.get(), pyParties-1)
		require.Len(t, r3.get(), pyParties)
		require.Zero(t, b1.Waiting())
	})
}
