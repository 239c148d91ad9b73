package ctxsyncotel_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

func TestObservePrimitives(t *testing.T) {
	r, mp := newProvider(t)
	ctx := context.Background()

	sem := ctxsync.NewSemaphore(3)
	bounded := ctxsync.NewBoundedSemaphore(2)
	w := ctxsync.NewWeighted(10)
	q := ctxsync.NewQueue[int](0)
	pq := ctxsync.NewPriorityQueue[string](1)
	var regs []interface{ Unregister() error }
	for _, obs := range []func() (interface{ Unregister() error }, error){
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveSemaphore("sem", sem, mp) },
		func() (interface{ Unregister() error }, error) {
			return ctxsyncotel.ObserveSemaphore("bounded", bounded, mp)
		},
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveWeighted("w", w, mp) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveQueue("q", q, mp) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveQueue("pq", pq, mp) },
	} {
		reg, err := obs()
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}

	if err := sem.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Acquire(ctx, 4); err != nil {
		t.Fatal(err)
	}
	w.Resize(12)
	for i := range 3 {
		if err := q.Put(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pq.Put(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	// A producer held back by the full priority queue.
	pctx, pcancel := context.WithCancel(ctx)
	pdone := make(chan error)
	go func() { pdone <- pq.Put(pctx, 2, "b") }()
	for pq.Putters() == 0 {
		runtime.Gosched()
	}
	// A waiter on the bounded semaphore, emptied first.
	bounded.TryAcquire()
	bounded.TryAcquire()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- bounded.Acquire(wctx) }()
	for bounded.Waiting() == 0 {
		runtime.Gosched() // no timing is assumed: the waiter queues soon
	}
	c := collect(t, r)
	cancel()
	<-done
	pcancel()
	<-pdone
	for _, w := range []struct {
		of, side string
		want     int64
	}{{"q", "get", 0}, {"q", "put", 0}, {"pq", "get", 0}, {"pq", "put", 1}} {
		if got := c.point(t, "ctxsync.queue.waiting", attrString("ctxsync.queue.name", w.of), attrString("ctxsync.queue.side", w.side)); got != w.want {
			t.Errorf("ctxsync.queue.waiting{%s,%s} = %d, want %d", w.of, w.side, got, w.want)
		}
	}

	c.checkKinds(t, map[string]struct {
		kind kind
		unit string
	}{
		"ctxsync.semaphore.available": {upDown, "{permit}"},
		"ctxsync.semaphore.waiting":   {upDown, "{waiter}"},
		"ctxsync.weighted.capacity":   {upDown, "{unit}"},
		"ctxsync.weighted.available":  {upDown, "{unit}"},
		"ctxsync.weighted.waiting":    {upDown, "{waiter}"},
		"ctxsync.queue.length":        {upDown, "{item}"},
		"ctxsync.queue.unfinished":    {upDown, "{item}"},
		"ctxsync.queue.capacity":      {upDown, "{item}"},
		"ctxsync.queue.waiting":       {upDown, "{waiter}"},
	})
	for _, w := range []struct {
		name, key, of string
		want          int64
	}{
		{"ctxsync.semaphore.available", "ctxsync.semaphore.name", "sem", 2},
		{"ctxsync.semaphore.waiting", "ctxsync.semaphore.name", "sem", 0},
		{"ctxsync.semaphore.available", "ctxsync.semaphore.name", "bounded", 0},
		{"ctxsync.semaphore.waiting", "ctxsync.semaphore.name", "bounded", 1},
		{"ctxsync.weighted.capacity", "ctxsync.weighted.name", "w", 12},
		{"ctxsync.weighted.available", "ctxsync.weighted.name", "w", 8},
		{"ctxsync.weighted.waiting", "ctxsync.weighted.name", "w", 0},
		{"ctxsync.queue.length", "ctxsync.queue.name", "q", 2},
		{"ctxsync.queue.unfinished", "ctxsync.queue.name", "q", 3},
		{"ctxsync.queue.length", "ctxsync.queue.name", "pq", 1},
		{"ctxsync.queue.unfinished", "ctxsync.queue.name", "pq", 1},
		{"ctxsync.queue.capacity", "ctxsync.queue.name", "q", 0},
		{"ctxsync.queue.capacity", "ctxsync.queue.name", "pq", 1},
	} {
		if got := c.point(t, w.name, attrString(w.key, w.of)); got != w.want {
			t.Errorf("%s{%s} = %d, want %d", w.name, w.of, got, w.want)
		}
	}
	for _, reg := range regs {
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	c = collect(t, r)
	if n := c.points("ctxsync.semaphore.available") + c.points("ctxsync.weighted.capacity") + c.points("ctxsync.queue.length"); n != 0 {
		t.Errorf("after Unregister: %d points, want 0", n)
	}
}

// TestObserveLock: a Lock held with a goroutine waiting for it, and an
// RWLock, which has no Locked method, and so no ctxsync.lock.held.
func TestObserveLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		l := ctxsync.NewLock()
		rw := ctxsync.NewRWLock()
		for name, src := range map[string]ctxsyncotel.LockSource{"l": l, "rw": rw} {
			reg, err := ctxsyncotel.ObserveLock(name, src, mp)
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Unregister()
		}
		c := collect(t, r)
		if got := c.point(t, "ctxsync.lock.held", attrString("ctxsync.lock.name", "l")); got != 0 {
			t.Errorf("held{l} = %d, want 0", got)
		}
		if err := l.Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := rw.RLock(context.Background()); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if l.Lock(context.Background()) == nil {
				l.Unlock()
			}
			if rw.Lock(context.Background()) == nil {
				rw.Unlock()
			}
		}()
		synctest.Wait()
		c = collect(t, r)
		c.checkKinds(t, map[string]struct {
			kind kind
			unit string
		}{
			"ctxsync.lock.waiting": {upDown, "{waiter}"},
			"ctxsync.lock.held":    {gauge, "1"},
		})
		if got := c.point(t, "ctxsync.lock.held", attrString("ctxsync.lock.name", "l")); got != 1 {
			t.Errorf("held{l} = %d, want 1", got)
		}
		if got := c.point(t, "ctxsync.lock.waiting", attrString("ctxsync.lock.name", "l")); got != 1 {
			t.Errorf("waiting{l} = %d, want 1", got)
		}
		if n := c.points("ctxsync.lock.held"); n != 1 {
			t.Errorf("ctxsync.lock.held: %d points, want 1 (the RWLock has none)", n)
		}
		l.Unlock()
		synctest.Wait()
		c = collect(t, r)
		if got := c.point(t, "ctxsync.lock.waiting", attrString("ctxsync.lock.name", "rw")); got != 1 {
			t.Errorf("waiting{rw} = %d, want 1", got)
		}
		rw.RUnlock()
		<-done
	})
}
