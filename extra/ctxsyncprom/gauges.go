package ctxsyncprom

// The gauge primitives are read through small interfaces, so that any type
// with the getters fits: the root package's types, and the getters it gains.

// A Semaphore is what AddSemaphore reads: *ctxsync.Semaphore and
// *ctxsync.BoundedSemaphore are ones.
type Semaphore interface {
	Available() int // permits free now
	Waiting() int   // goroutines waiting now
}

// A Weighted is what AddWeighted reads: *ctxsync.Weighted is one.
type Weighted interface {
	Capacity() int64
	Available() int64
	Waiting() int
}

// A Queue is what AddQueue reads: *ctxsync.Queue[T] and
// *ctxsync.PriorityQueue[T] are ones. Their capacity and the goroutines
// waiting on them, if they tell (as a QueueWaiters), are exported too.
type Queue interface {
	Len() int        // items in the queue
	Unfinished() int // items put and not yet marked done
}

// QueueWaiters is what AddQueue reads, besides Queue, of a queue that tells
// its capacity and the goroutines waiting on it: *ctxsync.Queue[T] and
// *ctxsync.PriorityQueue[T] do.
type QueueWaiters interface {
	Cap() int     // the most items the queue holds; 0 if unbounded
	Getters() int // goroutines waiting in Get now: consumers starved of items
	Putters() int // goroutines waiting in Put now: producers held back
}

// A Waiter counts the goroutines waiting on it: *ctxsync.Barrier and
// *ctxsync.Condition are ones, as is any primitive with a Waiting method.
type Waiter interface {
	Waiting() int
}

// AddSemaphore adds s under name: each scrape reads its Available and
// Waiting, as semaphore_available and semaphore_waiters.
//
// AddSemaphore returns an error wrapping ErrDuplicateName if a semaphore or a
// Weighted was added under name already. It panics if s is nil or name is
// empty.
func (c *Collector) AddSemaphore(name string, s Semaphore) error {
	c.mustBeMade()
	checkName("AddSemaphore", name)
	checkSource("AddSemaphore", s)
	return c.add("semaphore", name, &semSource{
		s:         s,
		available: newSeries(c.d.semAvailable, false, name),
		waiters:   newSeries(c.d.semWaiters, false, name),
	})
}

type semSource struct {
	s                  Semaphore
	available, waiters series
}

func (s *semSource) size() int { return 2 }

func (s *semSource) collect(out []sample) []sample {
	return append(out, s.available.at(float64(s.s.Available())), s.waiters.at(float64(s.s.Waiting())))
}

// AddWeighted adds w under name: each scrape reads its Capacity, Available
// and Waiting, as semaphore_capacity, semaphore_available and
// semaphore_waiters. A scrape never gives more units available than
// capacity, even while w is resized.
//
// AddWeighted returns an error wrapping ErrDuplicateName if a semaphore or a
// Weighted was added under name already. It panics if w is nil or name is
// empty.
func (c *Collector) AddWeighted(name string, w Weighted) error {
	c.mustBeMade()
	checkName("AddWeighted", name)
	checkSource("AddWeighted", w)
	return c.add("semaphore", name, &weightedSource{
		w:         w,
		capacity:  newSeries(c.d.semCapacity, false, name),
		available: newSeries(c.d.semAvailable, false, name),
		waiters:   newSeries(c.d.semWaiters, false, name),
	})
}

type weightedSource struct {
	w                            Weighted
	capacity, available, waiters series
}

func (s *weightedSource) size() int { return 3 }

func (s *weightedSource) collect(out []sample) []sample {
	capacity, available := weightedPair(s.w)
	return append(out,
		s.available.at(float64(available)),
		s.capacity.at(float64(capacity)),
		s.waiters.at(float64(s.w.Waiting())),
	)
}

// weightedPair reads w's capacity and free units as a pair that keeps
// available <= capacity, as every moment of a Weighted does: a dashboard
// takes capacity - available for the units held. Two reads apart do not
// keep it: a Resize that shrinks w between them gives the old, larger free
// units beside the new capacity, and so does one half done (Resize sets the
// capacity before it takes the units away). So the capacity is read on
// both sides of the free units, and all three read again while it moved;
// after a few tries, each spoiled by a Resize, the free units are cut to
// the capacity: a Resize under way leaves them no more than that as it
// ends.
func weightedPair(w Weighted) (capacity, available int64) {
	for range 4 {
		before := w.Capacity()
		available = w.Available()
		capacity = w.Capacity()
		if before == capacity && available <= capacity {
			return capacity, available
		}
	}
	return capacity, min(available, capacity)
}

// AddQueue adds q under name: each scrape reads its Len and Unfinished, as
// queue_items and queue_unfinished_tasks, and if q is a QueueWaiters, its
// Cap, as queue_capacity, and its Getters and Putters, as queue_waiters
// with side "get" and "put". A scrape never gives more items than
// unfinished tasks, even while consumers finish them.
//
// AddQueue returns an error wrapping ErrDuplicateName if a queue was added
// under name already. It panics if q is nil or name is empty.
func (c *Collector) AddQueue(name string, q Queue) error {
	c.mustBeMade()
	checkName("AddQueue", name)
	checkSource("AddQueue", q)
	s := &queueSource{
		q:          q,
		items:      newSeries(c.d.queueItems, false, name),
		unfinished: newSeries(c.d.queueUnfinished, false, name),
	}
	if w, ok := q.(QueueWaiters); ok {
		s.w = w
		s.capacity = newSeries(c.d.queueCapacity, false, name)
		s.getters = newSeries(c.d.queueWaiters, false, name, "get")
		s.putters = newSeries(c.d.queueWaiters, false, name, "put")
	}
	return c.add("queue", name, s)
}

type queueSource struct {
	q                 Queue
	w                 QueueWaiters // q, if it tells its capacity and waiters
	items, unfinished series
	capacity          series
	getters, putters  series
}

func (s *queueSource) size() int { return 5 }

func (s *queueSource) collect(out []sample) []sample {
	items, unfinished := queuePair(s.q)
	out = append(out, s.items.at(float64(items)), s.unfinished.at(float64(unfinished)))
	if s.w != nil {
		out = append(out, s.capacity.at(float64(s.w.Cap())),
			s.getters.at(float64(s.w.Getters())), s.putters.at(float64(s.w.Putters())))
	}
	return out
}

// queuePair reads q's items and unfinished tasks as a pair that keeps
// items <= unfinished, as every moment of a queue does (an item in the
// queue is unfinished): a dashboard takes unfinished - items for the tasks
// in progress. Two reads apart do not keep it: consumers that take items
// and mark them done between the reads leave fewer unfinished than the
// items read. So the two are read again while they disagree; after a few
// tries, each spoiled by consumers, the items are cut to the unfinished
// tasks, read last.
func queuePair(q Queue) (items, unfinished int) {
	for range 4 {
		items = q.Len()
		unfinished = q.Unfinished()
		if items <= unfinished {
			return items, unfinished
		}
	}
	return min(items, unfinished), unfinished
}

// AddWaiter adds w under name: each scrape reads its Waiting, as waiters.
// It is for the primitives that have no metric of their own here (a
// Barrier, a Condition, a Lock, an RWLock).
//
// AddWaiter returns an error wrapping ErrDuplicateName if a waiter was added
// under name already. It panics if w is nil or name is empty.
func (c *Collector) AddWaiter(name string, w Waiter) error {
	c.mustBeMade()
	checkName("AddWaiter", name)
	checkSource("AddWaiter", w)
	return c.add("waiter", name, &waiterSource{w: w, waiters: newSeries(c.d.waiters, false, name)})
}

type waiterSource struct {
	w       Waiter
	waiters series
}

func (s *waiterSource) size() int { return 1 }

func (s *waiterSource) collect(out []sample) []sample {
	return append(out, s.waiters.at(float64(s.w.Waiting())))
}
