package ctxsync

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A caller's Context is the caller's code. These tests give every blocking
// call of the package a ctx whose methods look at the primitive's internal
// locks, and one whose methods panic from their nth call on, for every n the
// call reaches. No method may run while an internal lock is held (it could
// call back into the primitive and deadlock, or panic and leave the lock
// held), and a panic must leave the primitive whole: once the contention the
// test set up is released, a new caller gets through.

// tryLocker is an internal lock of a primitive, as its probe sees it.
type tryLocker = testutil.TryLocker

var errUserCtxPanic = testutil.ErrCtxPanic

// A ctxCase is a blocking call made to wait, and what releases it.
type ctxCase struct {
	name string
	// setup makes the primitive, contended so that call waits until its ctx
	// ends, and returns the call, the primitive's internal locks, and again:
	// a call that releases the contention and must then get through.
	setup func() (call func(ctx context.Context), locks []tryLocker, again func())
}

func ctxCases() []ctxCase {
	bg := context.Background()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	return []ctxCase{
		{"Lock.Lock", func() (func(context.Context), []tryLocker, func()) {
			l := NewLock()
			must(l.Lock(bg))
			return func(ctx context.Context) {
					if l.Lock(ctx) == nil {
						l.Unlock()
					}
				}, []tryLocker{&l.q.Mutex}, func() {
					l.Unlock()
					must(l.Lock(bg))
					l.Unlock()
				}
		}},
		{"Semaphore.Acquire", func() (func(context.Context), []tryLocker, func()) {
			s := NewSemaphore(0)
			return func(ctx context.Context) {
					if s.Acquire(ctx) == nil {
						s.Release()
					}
				}, []tryLocker{&s.q.Mutex}, func() {
					s.Release()
					must(s.Acquire(bg))
				}
		}},
		{"BoundedSemaphore.Acquire", func() (func(context.Context), []tryLocker, func()) {
			s := NewBoundedSemaphore(1)
			must(s.Acquire(bg))
			return func(ctx context.Context) {
					if s.Acquire(ctx) == nil {
						s.Release()
					}
				}, []tryLocker{&s.s.q.Mutex}, func() {
					s.Release()
					must(s.Acquire(bg))
				}
		}},
		{"Weighted.Acquire", func() (func(context.Context), []tryLocker, func()) {
			w := NewWeighted(2)
			must(w.Acquire(bg, 2))
			return func(ctx context.Context) {
					if w.Acquire(ctx, 1) == nil {
						w.Release(1)
					}
				}, []tryLocker{&w.q.Mutex}, func() {
					w.Release(2)
					must(w.Acquire(bg, 2))
				}
		}},
		{"Condition.Wait", func() (func(context.Context), []tryLocker, func()) {
			l := NewLock()
			c := NewCondition(l)
			return func(ctx context.Context) {
					must(c.Lock(bg))
					defer c.Unlock() // Wait holds the Lock again however it ends
					_ = c.Wait(ctx)
				}, []tryLocker{&c.q.Mutex, &l.q.Mutex}, func() {
					must(c.Lock(bg))
					c.NotifyAll()
					c.Unlock()
				}
		}},
		{"Barrier.Wait", func() (func(context.Context), []tryLocker, func()) {
			b := NewBarrier(2, nil)
			return func(ctx context.Context) { _, _ = b.Wait(ctx) }, []tryLocker{&b.q.Mutex}, func() {
				b.Reset()
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						_, err := b.Wait(bg)
						must(err)
					})
				}
				wg.Wait()
			}
		}},
		{"RWLock.RLock", func() (func(context.Context), []tryLocker, func()) {
			rw := NewRWLock()
			must(rw.Lock(bg))
			return func(ctx context.Context) {
					if rw.RLock(ctx) == nil {
						rw.RUnlock()
					}
				}, []tryLocker{&rw.q.Mutex}, func() {
					rw.Unlock()
					must(rw.Lock(bg))
					rw.Unlock()
				}
		}},
		{"RWLock.Lock", func() (func(context.Context), []tryLocker, func()) {
			rw := NewRWLock()
			must(rw.RLock(bg))
			return func(ctx context.Context) {
					if rw.Lock(ctx) == nil {
						rw.Unlock()
					}
				}, []tryLocker{&rw.q.Mutex}, func() {
					rw.RUnlock()
					must(rw.Lock(bg))
					rw.Unlock()
				}
		}},
		{"Queue.Put", func() (func(context.Context), []tryLocker, func()) {
			q := NewQueue[int](1)
			must(q.Put(bg, 1))
			return func(ctx context.Context) { _ = q.Put(ctx, 2) },
				[]tryLocker{&q.putMu, &q.takeMu, &q.joinMu}, func() {
					for q.Len() > 0 {
						_, _ = q.TryGet()
					}
					must(q.Put(bg, 3))
				}
		}},
		{"Queue.Get", func() (func(context.Context), []tryLocker, func()) {
			q := NewQueue[int](1)
			return func(ctx context.Context) { _, _ = q.Get(ctx) },
				[]tryLocker{&q.putMu, &q.takeMu, &q.joinMu}, func() {
					must(q.Put(bg, 1))
					_, err := q.Get(bg)
					must(err)
				}
		}},
		{"Queue.Join", func() (func(context.Context), []tryLocker, func()) {
			q := NewQueue[int](1)
			must(q.Put(bg, 1))
			return func(ctx context.Context) { _ = q.Join(ctx) },
				[]tryLocker{&q.putMu, &q.takeMu, &q.joinMu}, func() {
					_, err := q.Get(bg)
					must(err)
					q.TaskDone()
					must(q.Join(bg))
				}
		}},
		{"PriorityQueue.Put", func() (func(context.Context), []tryLocker, func()) {
			q := NewPriorityQueue[int](1)
			must(q.Put(bg, 0, 1))
			return func(ctx context.Context) { _ = q.Put(ctx, 0, 2) },
				[]tryLocker{&q.core.mu}, func() {
					for q.Len() > 0 {
						_, _ = q.TryGet()
					}
					must(q.Put(bg, 0, 3))
				}
		}},
		{"PriorityQueue.Get", func() (func(context.Context), []tryLocker, func()) {
			q := NewPriorityQueue[int](1)
			return func(ctx context.Context) { _, _ = q.Get(ctx) },
				[]tryLocker{&q.core.mu}, func() {
					must(q.Put(bg, 0, 1))
					_, err := q.Get(bg)
					must(err)
				}
		}},
		{"PriorityQueue.Join", func() (func(context.Context), []tryLocker, func()) {
			q := NewPriorityQueue[int](1)
			must(q.Put(bg, 0, 1))
			return func(ctx context.Context) { _ = q.Join(ctx) },
				[]tryLocker{&q.core.mu}, func() {
					_, err := q.Get(bg)
					must(err)
					q.TaskDone()
					must(q.Join(bg))
				}
		}},
		{"WaitGroup.Wait", func() (func(context.Context), []tryLocker, func()) {
			wg := new(WaitGroup)
			wg.Add(1)
			return func(ctx context.Context) { _ = wg.Wait(ctx) }, []tryLocker{&wg.q.Mutex}, func() {
				wg.Done()
				must(wg.Wait(bg))
			}
		}},
		{"Event.Wait", func() (func(context.Context), []tryLocker, func()) {
			e := NewEvent()
			return func(ctx context.Context) { _ = e.Wait(ctx) }, []tryLocker{&e.mu}, func() {
				e.Set()
				must(e.Wait(bg))
			}
		}},
		{"Watch.Wait", func() (func(context.Context), []tryLocker, func()) {
			w := NewWatch(0)
			return func(ctx context.Context) { _, _, _ = w.Wait(ctx, 1) }, []tryLocker{&w.mu}, func() {
				w.Store(1)
				_, _, err := w.Wait(bg, 1)
				must(err)
			}
		}},
		{"Flight.Do", func() (func(context.Context), []tryLocker, func()) {
			f := new(Flight[string, int])
			gate := make(chan struct{})
			go f.Do(bg, "k", func(context.Context) (int, error) { <-gate; return 1, nil })
			// The call in flight, and its first caller, settle before the
			// probe looks: until then that caller takes f.mu now and then
			// (to start the call, and to block after it yields), and the
			// probe, finding the lock held, would blame the ctx's caller.
			synctest.Wait()
			return func(ctx context.Context) {
					_, _, _ = f.Do(ctx, "k", func(context.Context) (int, error) { return 2, nil })
				}, []tryLocker{&f.mu}, func() {
					close(gate)
					_, err, _ := f.Do(bg, "k", func(context.Context) (int, error) { return 3, nil })
					must(err)
				}
		}},
		{"Flight.Do, first caller", func() (func(context.Context), []tryLocker, func()) {
			f := new(Flight[string, int])
			gate := make(chan struct{})
			return func(ctx context.Context) {
					// fn waits for the gate alone: were it to return when
					// the call's ctx is cancelled, its finish would lock
					// f.mu while the probe looks, and the probe would blame
					// the caller's ctx.
					_, _, _ = f.Do(ctx, "k", func(context.Context) (int, error) {
						<-gate
						return 1, nil
					})
				}, []tryLocker{&f.mu}, func() {
					close(gate)
					_, err, _ := f.Do(bg, "k", func(context.Context) (int, error) { return 3, nil })
					must(err)
				}
		}},
		{"Lazy.Get", func() (func(context.Context), []tryLocker, func()) {
			gate := make(chan struct{})
			l := NewLazy(func(context.Context) (int, error) {
				<-gate // alone, as in the Flight case above
				return 1, nil
			})
			return func(ctx context.Context) { _, _ = l.Get(ctx) }, []tryLocker{&l.flight.mu, &l.keep}, func() {
				close(gate)
				_, err := l.Get(bg)
				must(err)
			}
		}},
		{"KeyedLock.Lock", func() (func(context.Context), []tryLocker, func()) {
			k := new(KeyedLock[string])
			must(k.Lock(bg, "a"))
			var locks []tryLocker
			for i := range k.shards {
				locks = append(locks, &k.shards[i].mu)
			}
			return func(ctx context.Context) {
					if k.Lock(ctx, "a") == nil {
						k.Unlock("a")
					}
				}, locks, func() {
					k.Unlock("a")
					must(k.Lock(bg, "a"))
					k.Unlock("a")
					if n := k.Len(); n != 0 {
						panic(fmt.Sprintf("KeyedLock.Len() = %d once every key is unlocked", n))
					}
				}
		}},
	}
}

// runCtxCase runs c's call under a probeCtx panicking from its panicAt'th
// method call (0: never), makes it wait, ends its ctx, and checks that the
// primitive lets a new caller through. It returns the number of ctx method
// calls the call made.
func runCtxCase(t *testing.T, c ctxCase, panicAt int32) int32 {
	t.Helper()
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		call, locks, again := c.setup()
		calls = testutil.ProbeCall(t, locks, panicAt, call)
		for i, l := range locks {
			if !l.TryLock() {
				t.Fatalf("internal lock %d left held", i)
			}
			l.Unlock()
		}
		through := make(chan any, 1)
		go func() {
			defer func() { through <- recover() }()
			again()
		}()
		synctest.Wait()
		select {
		case p := <-through:
			if p != nil {
				t.Fatalf("a new caller, once the contention was released, panicked: %v", p)
			}
		default:
			t.Fatal("a new caller, once the contention was released, did not get through: the primitive was left broken")
		}
	})
	return calls
}

func TestCallerCtxNeverRunsUnderAnInternalLock(t *testing.T) {
	for _, c := range ctxCases() {
		t.Run(c.name, func(t *testing.T) {
			if n := runCtxCase(t, c, 0); n == 0 {
				t.Fatal("the call never looked at its ctx: the probe tested nothing")
			}
		})
	}
}

func TestCallerCtxThatPanicsLeavesThePrimitiveWhole(t *testing.T) {
	for _, c := range ctxCases() {
		t.Run(c.name, func(t *testing.T) {
			n := runCtxCase(t, c, 0)
			for at := int32(1); at <= n; at++ {
				t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
					runCtxCase(t, c, at)
				})
			}
		})
	}
}
