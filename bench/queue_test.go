package bench

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// fifo is a queue of ints as the benchmarks drive it.
type fifo interface {
	put(ctx context.Context, v int)
	get(ctx context.Context) int
}

type ctxsyncQueue struct{ q *ctxsync.Queue[int] }

func (q ctxsyncQueue) put(ctx context.Context, v int) { must(q.q.Put(ctx, v)) }
func (q ctxsyncQueue) get(ctx context.Context) int {
	v, err := q.q.Get(ctx)
	must(err)
	return v
}

type chanQueue chan int

func (q chanQueue) put(_ context.Context, v int) { q <- v }
func (q chanQueue) get(context.Context) int      { return <-q }

type chanSelectQueue chan int

func (q chanSelectQueue) put(ctx context.Context, v int) {
	select {
	case q <- v:
	case <-ctx.Done():
		panic(ctx.Err())
	}
}

func (q chanSelectQueue) get(ctx context.Context) int {
	select {
	case v := <-q:
		return v
	case <-ctx.Done():
		panic(ctx.Err())
	}
}

// BenchmarkQueue: Put then Get, one goroutine; and 4 producers handing items
// to 4 consumers through a queue of 64. One op is one item through.
func BenchmarkQueue(b *testing.B) {
	impls := []struct {
		name string
		new  func() fifo
	}{
		{"ctxsync", func() fifo { return ctxsyncQueue{ctxsync.NewQueue[int](64)} }},
		{"chan", func() fifo { return make(chanQueue, 64) }},
		{"chan-select", func() fifo { return make(chanSelectQueue, 64) }},
	}
	for _, impl := range impls {
		b.Run("goroutines=1/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			q := impl.new()
			ctx := benchCtx(b)
			for i := 0; b.Loop(); i++ {
				q.put(ctx, i)
				sinkInt = q.get(ctx)
			}
		})
	}
	for _, impl := range impls {
		b.Run("producers=4/consumers=4/impl="+impl.name, func(b *testing.B) {
			producersConsumers(b, impl.new(), 4, 4)
		})
	}
}

// producersConsumers moves b.N items from p producers to c consumers.
func producersConsumers(b *testing.B, q fifo, p, c int) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range p {
		ctx := benchCtx(b)
		n := b.N/p + boolInt(i < b.N%p)
		wg.Go(func() {
			for j := range n {
				q.put(ctx, j)
			}
		})
	}
	for i := range c {
		ctx := benchCtx(b)
		n := b.N/c + boolInt(i < b.N%c)
		wg.Go(func() {
			for range n {
				q.get(ctx)
			}
		})
	}
	wg.Wait()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// prioQueue is a priority queue of ints as the benchmarks drive it.
type prioQueue interface {
	put(ctx context.Context, prio, v int)
	get(ctx context.Context) int
}

type ctxsyncPQ struct{ q *ctxsync.PriorityQueue[int] }

func (q ctxsyncPQ) put(ctx context.Context, prio, v int) { must(q.q.Put(ctx, prio, v)) }
func (q ctxsyncPQ) get(ctx context.Context) int {
	v, err := q.q.Get(ctx)
	must(err)
	return v
}

// heapPQ is what a user writes without ctxsync: container/heap behind a mutex,
// with a sync.Cond for consumers to wait on, and one for producers when it is
// bounded. It cannot honour a ctx.
type heapPQ struct {
	mu       sync.Mutex
	nonEmpty sync.Cond
	nonFull  sync.Cond
	capacity int // 0: unbounded
	h        intHeap
	seq      int
}

type heapItem struct{ prio, seq, v int }
type intHeap []heapItem

func (h intHeap) Len() int { return len(h) }
func (h intHeap) Less(i, j int) bool {
	return h[i].prio < h[j].prio || (h[i].prio == h[j].prio && h[i].seq < h[j].seq)
}
func (h intHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)   { *h = append(*h, x.(heapItem)) }
func (h *intHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func newHeapPQ(capacity int) *heapPQ {
	q := &heapPQ{capacity: capacity}
	q.nonEmpty.L = &q.mu
	q.nonFull.L = &q.mu
	return q
}

func (q *heapPQ) put(_ context.Context, prio, v int) {
	q.mu.Lock()
	for q.capacity > 0 && len(q.h) >= q.capacity {
		q.nonFull.Wait()
	}
	q.seq++
	heap.Push(&q.h, heapItem{prio, q.seq, v})
	q.nonEmpty.Signal()
	q.mu.Unlock()
}

func (q *heapPQ) get(context.Context) int {
	q.mu.Lock()
	for len(q.h) == 0 {
		q.nonEmpty.Wait()
	}
	it := heap.Pop(&q.h).(heapItem)
	if q.capacity > 0 {
		q.nonFull.Signal()
	}
	q.mu.Unlock()
	return it.v
}

// BenchmarkPriorityQueue: Put then Get with random priorities on an unbounded
// queue holding 1000 items; and 4 producers handing items to 4 consumers
// through a queue of 64. (Unbounded, the second would measure how far the
// producers run ahead: the heap would grow with b.N.)
func BenchmarkPriorityQueue(b *testing.B) {
	impls := []struct {
		name string
		new  func(capacity int) prioQueue
	}{
		{"ctxsync", func(capacity int) prioQueue { return ctxsyncPQ{ctxsync.NewPriorityQueue[int](capacity)} }},
		{"container-heap+cond", func(capacity int) prioQueue { return newHeapPQ(capacity) }},
	}
	for _, impl := range impls {
		b.Run("items=1000/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			q := impl.new(0)
			ctx := benchCtx(b)
			r := rand.New(rand.NewPCG(1, 2))
			for i := range 1000 {
				q.put(ctx, r.IntN(100), i)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q.put(ctx, r.IntN(100), i)
				sinkInt = q.get(ctx)
			}
		})
	}
	for _, impl := range impls {
		b.Run("producers=4/consumers=4/impl="+impl.name, func(b *testing.B) {
			producersConsumers(b, prioFIFO{impl.new(64)}, 4, 4)
		})
	}
}

// prioFIFO drives a priority queue through the fifo interface, with priorities
// spread by the value.
type prioFIFO struct{ q prioQueue }

func (p prioFIFO) put(ctx context.Context, v int) { p.q.put(ctx, v%16, v) }
func (p prioFIFO) get(ctx context.Context) int    { return p.q.get(ctx) }
