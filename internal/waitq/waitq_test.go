package waitq

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// owner is the smallest primitive on a Queue: a gate that Open lets one waiter
// through.
type owner struct {
	q Queue[int]
}

func (o *owner) push(v int) *Waiter[int] {
	o.q.Lock()
	defer o.q.Unlock()
	return o.q.Push(v)
}

// open grants the oldest waiter v+its own value.
func (o *owner) open(v int) {
	o.q.Lock()
	w := o.q.Front()
	o.q.Grant(w, w.Val+v)
	o.q.Unlock()
}

func (o *owner) len() int {
	o.q.Lock()
	defer o.q.Unlock()
	return o.q.Len()
}

func TestQueueOrder(t *testing.T) {
	var q Queue[int]
	a, b := q.Push(1), q.Push(2)
	require.Equal(t, 2, q.Len())
	require.Same(t, a, q.Front())
	require.Same(t, b, q.Next(a))
	require.Nil(t, q.Next(b))
	require.True(t, a.Queued())
}

// TestTwoLists: two lists under one Mutex; grants on either are woken by its
// Unlock.
func TestTwoLists(t *testing.T) {
	var q Queue[int]
	var other List[int]
	q.Lock()
	a := q.Push(1)
	b := other.Push(2)
	q.Grant(a, 10)
	other.Grant(&q.Mutex, b, 20)
	q.Unlock()
	va, ok := q.Wait(nil, a)
	require.True(t, ok)
	vb, ok := other.Wait(nil, b)
	require.True(t, ok)
	require.Equal(t, []int{10, 20}, []int{va, vb})
}

func TestGrantWait(t *testing.T) {
	var o owner
	w := o.push(1)
	o.open(10)
	require.False(t, w.Queued())
	require.Zero(t, len(w.wake.ready), "a grant to a waiter yet to block sent on its channel")
	v, ok := o.q.Wait(nil, w)
	require.True(t, ok)
	require.Equal(t, 11, v)
	require.Equal(t, 0, o.len())
}

// waitEnded waits for w with a ctx that has ended, which must report so.
func waitEnded(t *testing.T, o *owner, w *Waiter[int]) {
	t.Helper()
	_, ok := o.q.Wait(testutil.Cancelled().Done(), w)
	require.False(t, ok, "Wait with an ended ctx reported a grant")
}

func TestCancel(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		var o owner
		a, b := o.push(1), o.push(2)
		waitEnded(t, &o, b)
		o.q.Lock()
		_, granted, front := o.q.Cancel(b)
		require.False(t, granted)
		require.False(t, front, "b was behind a")
		_, granted, front = o.q.Cancel(a)
		require.False(t, granted)
		require.True(t, front)
		require.Equal(t, 0, o.q.Len())
		o.q.Unlock()
	})
	t.Run("granted as ctx ended", func(t *testing.T) {
		var o owner
		w := o.push(1)
		waitEnded(t, &o, w)
		o.open(5) // the grant lands after Wait gave up, before Cancel
		o.q.Lock()
		v, granted, _ := o.q.Cancel(w)
		o.q.Unlock()
		require.True(t, granted, "Cancel lost a grant")
		require.Equal(t, 6, v)
		require.Zero(t, len(w.wake.ready), "the grant's send was not consumed")
	})
}

// TestNodeReuse: while the queue is busy, nodes go round; once it is quiet, they
// are dropped.
func TestNodeReuse(t *testing.T) {
	var o owner
	first := o.push(1)
	second := o.push(2)
	o.open(0)
	_, ok := o.q.Wait(nil, first)
	require.True(t, ok)

	// second is still queued: the queue is busy, so first's node is reused.
	third := o.push(3)
	require.Same(t, first, third, "a finished node was not reused")

	for _, w := range []*Waiter[int]{second, third} {
		o.open(0)
		_, ok := o.q.Wait(nil, w)
		require.True(t, ok)
	}
	// Quiet now: nobody queued, every grant finished. A new node is made.
	fresh := o.push(4)
	require.NotSame(t, first, fresh)
	require.NotSame(t, second, fresh)
}

// TestNodeNotReusedBeforeFinished: a granted node whose goroutine has not yet
// received its grant is never handed to another waiter.
func TestNodeNotReusedBeforeFinished(t *testing.T) {
	var o owner
	a := o.push(1)
	b := o.push(2)
	o.open(0) // a granted, not yet received
	c := o.push(3)
	require.NotSame(t, a, c)
	_, ok := o.q.Wait(nil, a)
	require.True(t, ok)
	o.open(0)
	o.open(0)
	for _, w := range []*Waiter[int]{b, c} {
		_, ok := o.q.Wait(nil, w)
		require.True(t, ok)
	}
}

// TestWaitHold: a node whose grant WaitHold returned stays in use until
// Release: it is not reused, and keeps the queue from counting as quiet, so
// that the next push reuses a node that was released instead of making one.
func TestWaitHold(t *testing.T) {
	var o owner
	a := o.push(1)
	b := o.push(2)
	o.open(0)
	o.open(0)
	v, ok := o.q.WaitHold(nil, a)
	require.True(t, ok)
	require.Equal(t, 1, v)
	_, ok = o.q.Wait(nil, b) // b is finished; a is held
	require.True(t, ok)
	c := o.push(3)
	require.Same(t, b, c, "the queue went quiet though a was held, or reused a")
	o.q.Release(a)
	d := o.push(4)
	require.Same(t, a, d, "a released node was not reused")
	for range 2 {
		o.open(0)
	}
	for _, w := range []*Waiter[int]{c, d} {
		_, ok := o.q.Wait(nil, w)
		require.True(t, ok)
	}
}

// TestSteadyStateAllocs: under steady contention a wait allocates nothing.
func TestSteadyStateAllocs(t *testing.T) {
	var o owner
	keep := o.push(0) // keeps the queue busy
	allocs := testing.AllocsPerRun(1000, func() {
		w := o.push(1)
		o.q.Lock()
		o.q.Grant(w, 1)
		o.q.Unlock()
		o.q.Wait(nil, w)
	})
	require.Zero(t, allocs)
	o.open(0)
	o.q.Wait(nil, keep)
}

// contend makes three goroutines queue on o, then lets them through one by
// one, so that nodes are made, reused and finished.
func contend(t *testing.T, o *owner, settle func()) {
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			w := o.push(i)
			if _, ok := o.q.Wait(nil, w); !ok {
				t.Error("wait failed")
			}
		})
	}
	settle()
	for range 3 {
		o.open(0)
	}
	wg.Wait()
}

// TestAcrossBubbles pins why nodes are not pooled globally: one Queue used in a
// synctest bubble, then outside any, then in another bubble. A node made in a
// bubble and reused outside it is a fatal error ("select on synctest channel
// from outside bubble"); one made outside and reused inside is not durably
// blocking, so synctest.Wait would never return.
func TestAcrossBubbles(t *testing.T) {
	var o owner
	inBubble := func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			contend(t, &o, synctest.Wait)
		})
	}
	inBubble(t)
	contend(t, &o, func() {
		for o.len() < 3 {
			runtime.Gosched()
		}
	})
	inBubble(t)
}

// TestAloneWaiter: the first waiter of an empty list polls for its grant
// before it parks; those behind it do not. Either way the grant arrives, and
// a waiter alone whose ctx ends is told so.
func TestAloneWaiter(t *testing.T) {
	var o owner
	a, b := o.push(1), o.push(2)
	require.True(t, a.alone)
	require.False(t, b.alone, "b queued behind a")
	o.open(0)
	o.open(0)
	for _, w := range []*Waiter[int]{a, b} {
		_, ok := o.q.Wait(nil, w)
		require.True(t, ok)
	}

	// A grant that lands while the alone waiter yields, or after it parks.
	for i := range 200 {
		w := o.push(i)
		go o.open(1)
		v, ok := o.q.Wait(nil, w)
		require.True(t, ok)
		require.Equal(t, i+1, v)
	}

	// An alone waiter whose ctx has ended still reports it, after its yields.
	w := o.push(0)
	waitEnded(t, &o, w)
	o.q.Lock()
	_, granted, _ := o.q.Cancel(w)
	o.q.Unlock()
	require.False(t, granted)
}

// TestGrantRacesBlock: a grant that lands as its waiter marks itself blocked
// reaches it either way, by the flag or by a send, and leaves the channel
// empty for the node's next waiter.
func TestGrantRacesBlock(t *testing.T) {
	var o owner
	keep := o.push(0) // those behind it are not alone: they block at once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 2000 {
		w := o.push(i)
		go func() {
			o.q.Lock()
			o.q.Grant(w, w.Val+1)
			o.q.Unlock()
		}()
		waitCtx := ctx
		if i%2 == 0 {
			waitCtx = context.Background() // the plain receive
		}
		v, ok := o.q.Wait(waitCtx.Done(), w)
		require.True(t, ok)
		require.Equal(t, i+1, v)
		require.Zero(t, len(w.wake.ready))
	}
	require.Equal(t, 1, o.len())
	o.open(0)
	_, ok := o.q.Wait(nil, keep)
	require.True(t, ok)
}

// TestNodeReuseMany: nodes of many waiters granted at once go round the free
// ring, beyond its first size; a node whose goroutine has not received its
// grant keeps the list from being taken for quiet.
func TestNodeReuseMany(t *testing.T) {
	var o owner
	const n = 10
	ws := make([]*Waiter[int], n)
	for i := range ws {
		ws[i] = o.push(i)
	}
	for range n {
		o.open(0)
	}
	for _, w := range ws[:n-1] {
		_, ok := o.q.Wait(nil, w)
		require.True(t, ok)
	}
	// The last grant is not received yet: the list is not quiet, and the
	// finished nodes are reused, oldest first.
	again := o.push(0)
	require.Same(t, ws[0], again)
	o.open(0)
	_, ok := o.q.Wait(nil, again)
	require.True(t, ok)
	next := o.push(0)
	require.Same(t, ws[1], next, "reuse follows grant order")
	o.open(0)
	_, ok = o.q.Wait(nil, next)
	require.True(t, ok)

	// Every grant received: quiet, so a fresh node.
	_, ok = o.q.Wait(nil, ws[n-1])
	require.True(t, ok)
	fresh := o.push(0)
	for _, w := range ws {
		require.NotSame(t, w, fresh)
	}
	o.open(0)
	_, ok = o.q.Wait(nil, fresh)
	require.True(t, ok)
}

// TestFrontDropsEndedWaiters: a waiter pushed with PushDone whose ctx has ended
// is never returned by Front or Next, so never granted. Its goroutine's Cancel
// reports it neither granted nor at the front, and its node is reused.
func TestFrontDropsEndedWaiters(t *testing.T) {
	var q Queue[int]
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxC, cancelC := context.WithCancel(context.Background())
	q.Lock()
	a := q.PushDone(ctxA.Done(), 1)
	b := q.PushDone(context.Background().Done(), 2)
	c := q.PushDone(ctxC.Done(), 3)
	d := q.Push(4) // no ctx: never dropped
	q.Unlock()

	cancelA()
	cancelC()
	q.Lock()
	require.Same(t, b, q.Front(), "a's ctx ended: dropped")
	require.Same(t, d, q.Next(b), "c's ctx ended: dropped")
	require.Nil(t, q.Next(d))
	require.Equal(t, 2, q.Len())
	require.False(t, a.Queued())
	q.Grant(b, 20)
	q.Unlock()

	_, ok := q.Wait(ctxA.Done(), a)
	require.False(t, ok, "a dropped waiter is not granted")
	q.Lock()
	v, granted, front := q.Cancel(a)
	require.Zero(t, v)
	require.False(t, granted)
	require.False(t, front, "whoever dropped it served those behind")
	q.Unlock()

	v, ok = q.Wait(nil, b)
	require.True(t, ok)
	require.Equal(t, 20, v)

	q.Lock()
	_, granted, _ = q.Cancel(c)
	require.False(t, granted)
	require.Same(t, d, q.Front())
	require.Equal(t, 1, q.Len())
	e := q.Push(5) // busy list: a freed node comes back
	require.True(t, e == a || e == b || e == c, "a freed node is reused")
	q.Unlock()
}

// TestGrantBeforeCtxEndsIsKept: a waiter granted while its ctx was live keeps
// the grant, even if its ctx has ended by the time it looks.
func TestGrantBeforeCtxEndsIsKept(t *testing.T) {
	var q Queue[int]
	ctx, cancel := context.WithCancel(context.Background())
	q.Lock()
	w := q.PushDone(ctx.Done(), 1)
	q.Unlock()
	q.Lock()
	require.Same(t, w, q.Front())
	q.Grant(w, 7)
	q.Unlock()
	cancel()
	v, ok := q.Wait(ctx.Done(), w)
	require.True(t, ok)
	require.Equal(t, 7, v)
}
