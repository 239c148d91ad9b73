package ctxsync_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync"
)

// Three workers drain a queue; the producer waits with Join until every job
// has been processed, not merely taken.
func ExampleQueue() {
	ctx := context.Background()
	jobs := ctxsync.NewQueue[int](10)
	var total atomic.Int64

	for range 3 {
		go func() {
			for job := range jobs.All(ctx) {
				total.Add(int64(job))
				jobs.TaskDone()
			}
		}()
	}
	for i := 1; i <= 100; i++ {
		if err := jobs.Put(ctx, i); err != nil {
			return
		}
	}
	_ = jobs.Join(ctx) // every job is done
	fmt.Println("sum of jobs:", total.Load())
	jobs.Close() // the workers' loops end
	// Output: sum of jobs: 5050
}

// A graceful shutdown: the workers stop when their ctx ends, each finishing
// the job in hand; CloseNow then hands back the jobs still queued, to be saved
// for later, and Join returns, since every job is done or handed back.
func ExampleQueue_CloseNow() {
	jobs := ctxsync.NewQueue[string](0)
	for _, job := range []string{"a", "b", "c", "d", "e"} {
		_ = jobs.Put(context.Background(), job)
	}

	ctx, stop := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	var started sync.WaitGroup // for a fixed output: each worker holds a job
	var finished atomic.Int64
	for range 2 {
		started.Add(1)
		workers.Go(func() {
			for range jobs.All(ctx) {
				started.Done()
				<-ctx.Done() // a long job, finished as the shutdown comes
				finished.Add(1)
				jobs.TaskDone()
			}
		})
	}
	started.Wait()

	stop() // the shutdown signal: All takes no more jobs
	workers.Wait()
	fmt.Println("finished:", finished.Load())
	fmt.Println("handed back:", jobs.CloseNow())
	fmt.Println("join:", jobs.Join(context.Background()))
	fmt.Println("put:", jobs.Put(context.Background(), "f"))
	// Output:
	// finished: 2
	// handed back: [c d e]
	// join: <nil>
	// put: ctxsync: closed
}

// A bounded Queue pushes back: TryPut fails when it is full, and Put waits.
func ExampleNewQueue() {
	q := ctxsync.NewQueue[string](2)
	fmt.Println(q.TryPut("a"), q.TryPut("b"), q.TryPut("c"))
	v, _ := q.TryGet()
	fmt.Println(v, q.Len())
	// Output:
	// true true false
	// a 1
}

// Close lets consumers drain what is left; then Get reports ErrClosed and
// ranging over All ends.
func ExampleQueue_All() {
	q := ctxsync.NewQueue[string](0)
	ctx := context.Background()
	_ = q.Put(ctx, "x")
	_ = q.Put(ctx, "y")
	q.Close()
	fmt.Println(q.Put(ctx, "z"))
	for v := range q.All(ctx) {
		fmt.Println(v)
	}
	// Output:
	// ctxsync: closed
	// x
	// y
}

// A PriorityQueue dispatches urgent work first, and work of equal urgency in
// the order it came.
func ExamplePriorityQueue() {
	q := ctxsync.NewPriorityQueue[string](0)
	ctx := context.Background()
	_ = q.Put(ctx, 2, "resize thumbnail")
	_ = q.Put(ctx, 0, "page the on-call")
	_ = q.Put(ctx, 1, "send receipt")
	_ = q.Put(ctx, 2, "update search index")
	q.Close()

	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			task, err := q.Get(ctx)
			if err != nil { // ErrClosed once drained
				return
			}
			fmt.Println(task)
		}
	})
	wg.Wait()
	// Output:
	// page the on-call
	// send receipt
	// resize thumbnail
	// update search index
}

func ExampleNewPriorityQueue() {
	q := ctxsync.NewPriorityQueue[int](1)
	fmt.Println(q.TryPut(5, 50), q.TryPut(1, 10))
	v, _ := q.TryGet()
	fmt.Println(v)
	// Output:
	// true false
	// 50
}

// Len, Cap, Getters and Putters are the gauges to graph: a queue whose
// putters wait is holding its producers back.
func ExampleQueue_Putters() {
	q := ctxsync.NewQueue[string](1)
	_ = q.Put(context.Background(), "first")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = q.Put(context.Background(), "second") // waits for room
	}()
	for q.Putters() == 0 {
		runtime.Gosched()
	}
	fmt.Println("len", q.Len(), "of", q.Cap(), "- producers waiting:", q.Putters())
	_, _ = q.Get(context.Background())
	<-done
	fmt.Println("producers waiting:", q.Putters(), "consumers waiting:", q.Getters())
	// Output:
	// len 1 of 1 - producers waiting: 1
	// producers waiting: 0 consumers waiting: 0
}
