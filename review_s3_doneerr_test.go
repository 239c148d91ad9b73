package ctxsync

import (
	"context"
	"testing"
	"testing/synctest"
)

// doneNoErrCtx is a caller's ctx whose Done channel is closed while its Err
// still returns nil: a Context that closes its channel before it stores its
// error, read in between (the standard library sets the error first, but
// the interface allows any order for a moment), or one that never stores it.
type doneNoErrCtx struct{ context.Context }

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (doneNoErrCtx) Done() <-chan struct{} { return closedDone }
func (doneNoErrCtx) Err() error            { return nil }

// Regression: since every primitive tests the Done channel it read before
// locking (waitq.Ended, and Wait's select) and reads ctx.Err() only once
// unlocked, a call that gave up because its Done channel was closed returned
// whatever Err said: nil, for a ctx whose Err lags its channel. The call then
// reported success having been granted nothing: Lock returned nil without the
// lock (and the caller's Unlock released another's), Acquire without a
// permit, Get without an item, Barrier.Wait without passing, Flight.Do a zero
// result as fn's. A call that gives up must return an error whatever Err says
// in that moment: ctx.Err() when it is non-nil, else context.Canceled.
func TestReviewS3_DoneClosedErrNilNeverReportsAGrant(t *testing.T) {
	bg := context.Background()
	ctx := doneNoErrCtx{bg}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each case makes its primitive contended, so that nothing can be
	// granted to the call, runs the call under ctx and returns its error,
	// then releases the contention.
	cases := []struct {
		name string
		run  func(t *testing.T) error
	}{
		{"Lock.Lock", func(t *testing.T) error {
			l := NewLock()
			must(t, l.Lock(bg))
			defer l.Unlock()
			return l.Lock(ctx)
		}},
		{"Semaphore.Acquire", func(t *testing.T) error {
			return NewSemaphore(0).Acquire(ctx)
		}},
		{"Weighted.Acquire", func(t *testing.T) error {
			w := NewWeighted(1)
			must(t, w.Acquire(bg, 1))
			return w.Acquire(ctx, 1)
		}},
		{"RWLock.RLock", func(t *testing.T) error {
			rw := NewRWLock()
			must(t, rw.Lock(bg))
			defer rw.Unlock()
			return rw.RLock(ctx)
		}},
		{"RWLock.Lock", func(t *testing.T) error {
			rw := NewRWLock()
			must(t, rw.RLock(bg))
			defer rw.RUnlock()
			return rw.Lock(ctx)
		}},
		{"Queue.Get", func(t *testing.T) error {
			_, err := NewQueue[int](1).Get(ctx)
			return err
		}},
		{"Queue.Put", func(t *testing.T) error {
			q := NewQueue[int](1)
			must(t, q.Put(bg, 1))
			return q.Put(ctx, 2)
		}},
		{"Queue.Join", func(t *testing.T) error {
			q := NewQueue[int](1)
			must(t, q.Put(bg, 1))
			return q.Join(ctx)
		}},
		{"PriorityQueue.Get", func(t *testing.T) error {
			_, err := NewPriorityQueue[int](1).Get(ctx)
			return err
		}},
		{"PriorityQueue.Put", func(t *testing.T) error {
			q := NewPriorityQueue[int](1)
			must(t, q.Put(bg, 0, 1))
			return q.Put(ctx, 0, 2)
		}},
		{"Event.Wait", func(t *testing.T) error {
			return NewEvent().Wait(ctx)
		}},
		{"Watch.Wait", func(t *testing.T) error {
			_, _, err := NewWatch(0).Wait(ctx, 1)
			return err
		}},
		{"WaitGroup.Wait", func(t *testing.T) error {
			wg := new(WaitGroup)
			wg.Add(1)
			defer wg.Done()
			return wg.Wait(ctx)
		}},
		{"Barrier.Wait", func(t *testing.T) error {
			_, err := NewBarrier(2, nil).Wait(ctx)
			return err
		}},
		{"Condition.Wait", func(t *testing.T) error {
			c := NewCondition(NewLock())
			must(t, c.Lock(bg))
			defer c.Unlock()
			return c.Wait(ctx)
		}},
		{"KeyedLock.Lock", func(t *testing.T) error {
			k := new(KeyedLock[string])
			must(t, k.Lock(bg, "a"))
			defer k.Unlock("a")
			return k.Lock(ctx, "a")
		}},
		{"Flight.Do", func(t *testing.T) error {
			f := new(Flight[string, int])
			gate := make(chan struct{})
			started := make(chan struct{})
			go f.Do(bg, "k", func(context.Context) (int, error) { close(started); <-gate; return 1, nil })
			<-started
			defer close(gate)
			_, err, _ := f.Do(ctx, "k", func(context.Context) (int, error) { return 2, nil })
			return err
		}},
		{"Lazy.Get", func(t *testing.T) error {
			gate := make(chan struct{})
			started := make(chan struct{})
			l := NewLazy(func(context.Context) (int, error) { close(started); <-gate; return 1, nil })
			go l.Get(bg)
			<-started
			defer close(gate)
			_, err := l.Get(ctx)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if err := c.run(t); err == nil {
					t.Errorf("%s under a ctx whose Done is closed and Err nil, contended = nil (success, granted nothing), want a non-nil error", c.name)
				}
				synctest.Wait()
			})
		})
	}
}
