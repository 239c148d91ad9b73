package ctxsyncotel_test

import (
	"sync"
	"testing"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// grownBetweenReads is a Weighted that is grown to 10 units just after
// each read of its capacity: the Resize that lands between a collection's
// read of Capacity and its read of Available.
type grownBetweenReads struct{ *ctxsync.Weighted }

func (w grownBetweenReads) Capacity() int64 {
	c := w.Weighted.Capacity()
	w.Resize(10)
	return c
}

// TestReview11WeightedAvailableWithinCapacity pins a defect: a collection
// read a Weighted's Capacity and Available apart, so that a Resize between
// them (or one half done: Resize sets the capacity before it takes the
// units away) gave ctxsync.weighted.available above
// ctxsync.weighted.capacity, a pair no moment of the Weighted holds: held
// units (capacity - available) came out negative. Found here: available 10
// beside capacity 2. The right behaviour: each collection gives a pair with
// available <= capacity, read again while the capacity moved under it.
func TestReview11WeightedAvailableWithinCapacity(t *testing.T) {
	r, mp := newProvider(t)
	w := ctxsync.NewWeighted(2)
	reg, err := ctxsyncotel.ObserveWeighted("w", grownBetweenReads{w}, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	w.Resize(2) // ObserveWeighted read it once
	c := collect(t, r)
	name := attrString("ctxsync.weighted.name", "w")
	if a, cp := c.point(t, "ctxsync.weighted.available", name), c.point(t, "ctxsync.weighted.capacity", name); a > cp {
		t.Errorf("one collection: ctxsync.weighted.available %d > ctxsync.weighted.capacity %d", a, cp)
	}

	// The same with a real Weighted, resized back and forth while it is
	// collected.
	real := ctxsync.NewWeighted(10)
	reg2, err := ctxsyncotel.ObserveWeighted("real", real, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Unregister()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			real.Resize(int64(2 + 8*(i%2)))
		}
	})
	name = attrString("ctxsync.weighted.name", "real")
	for range 2000 {
		c := collect(t, r)
		if a, cp := c.point(t, "ctxsync.weighted.available", name), c.point(t, "ctxsync.weighted.capacity", name); a > cp {
			t.Errorf("collection while resized: ctxsync.weighted.available %d > ctxsync.weighted.capacity %d", a, cp)
			break
		}
	}
	close(stop)
	wg.Wait()
}

// drainedBetweenReads is a queue whose items are all taken and marked done
// just after each read of its length: the consumers that run between a
// collection's read of Len and its read of Unfinished.
type drainedBetweenReads struct{ *ctxsync.Queue[int] }

func (q drainedBetweenReads) Len() int {
	n := q.Queue.Len()
	for {
		if _, ok := q.TryGet(); !ok {
			break
		}
		q.TaskDone()
	}
	return n
}

// TestReview11QueueLengthWithinUnfinished pins a defect: a collection read
// a queue's Len and Unfinished apart, so that consumers that took and
// finished items between them gave ctxsync.queue.length above
// ctxsync.queue.unfinished, a pair no moment of the queue holds (the items
// in the queue are unfinished): the tasks in progress (unfinished - length)
// came out negative. Found here: length 5 beside unfinished 0. The right
// behaviour: each collection gives a pair with length <= unfinished.
func TestReview11QueueLengthWithinUnfinished(t *testing.T) {
	r, mp := newProvider(t)
	q := ctxsync.NewQueue[int](0)
	reg, err := ctxsyncotel.ObserveQueue("q", drainedBetweenReads{q}, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for i := range 5 {
		q.TryPut(i)
	}
	c := collect(t, r)
	name := attrString("ctxsync.queue.name", "q")
	if l, u := c.point(t, "ctxsync.queue.length", name), c.point(t, "ctxsync.queue.unfinished", name); l > u {
		t.Errorf("one collection: ctxsync.queue.length %d > ctxsync.queue.unfinished %d", l, u)
	}
}
