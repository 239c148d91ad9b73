// Command tour walks through the ctxsync primitives in a few seconds, printing
// a short story of each: what it guarantees, and what happened.
//
//	go run ./examples/tour
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

func main() { run(os.Stdout) }

// run prints the tour to w. Its timings come from the clock alone (sleeps and
// deadlines), so inside a synctest bubble the output is exact.
func run(w io.Writer) {
	fmt.Fprintln(w, "ctxsync: synchronization primitives that honour context.Context")
	for _, ch := range chapters {
		fmt.Fprintf(w, "\n== %s: %s\n", ch.title, ch.promise)
		ch.play(newTimeline(w, 10*time.Millisecond))
	}
	fmt.Fprintln(w, "\nEvery wait above took a ctx, served its waiters first in, first out, and")
	fmt.Fprintln(w, "could be abandoned without losing a permit. The examples/ folder has more.")
}

type chapter struct {
	title, promise string
	play           func(tl *timeline)
}

var chapters = []chapter{
	{"Lock", "mutual exclusion whose waiters can give up", lockChapter},
	{"Semaphore", "at most n at once, in arrival order", semaphoreChapter},
	{"Weighted", "a shared budget for requests of different sizes", weightedChapter},
	{"RWLock", "many readers or one writer, neither starved", rwlockChapter},
	{"Event", "a signal many goroutines wait for", eventChapter},
	{"Condition", "wait, with a deadline, for shared state to change", conditionChapter},
	{"Barrier", "a group that moves on together", barrierChapter},
	{"Queue", "hand work over, with backpressure and Join", queueChapter},
	{"PriorityQueue", "urgent work first", priorityChapter},
	{"ratelimit.TokenBucket", "a burst, then a steady rate", rateChapter},
	{"breaker.Breaker", "stop calling what keeps failing", breakerChapter},
	{"pool.Pool", "lend expensive resources, make them on demand", poolChapter},
	{"group.Group", "goroutines that succeed or fail together", groupChapter},
}

// bg is the context of every wait in the tour. It never ends, and for a
// wait on it only misuse can fail (a closed queue, say), so the tour drops
// those errors to stay short. Code that waits on a ctx that can end (a
// request's, a deadline's) must check each error: on failure nothing was
// taken, so there is nothing to release. The other examples show how.
var bg = context.Background()

func lockChapter(tl *timeline) {
	var mu ctxsync.Lock
	_ = mu.Lock(bg)
	tl.Printf("alice takes the lock and works for 300ms")
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		tl.Printf("bob waits, but only for 100ms")
		if err := mu.Lock(ctx); err != nil {
			tl.Printf("bob gives up: %v (the lock is untouched)", err)
			return
		}
		mu.Unlock()
	})
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		tl.Printf("carol waits as long as it takes")
		_ = mu.Lock(bg)
		tl.Printf("carol gets the lock the moment alice lets go")
		mu.Unlock()
	})
	time.Sleep(290 * time.Millisecond)
	tl.Printf("alice unlocks")
	mu.Unlock()
	wg.Wait()
}

func semaphoreChapter(tl *timeline) {
	sem := ctxsync.NewSemaphore(2)
	var wg sync.WaitGroup
	for i, name := range []string{"job-1", "job-2", "job-3", "job-4"} {
		wg.Go(func() {
			_ = sem.Acquire(bg)
			tl.Printf("%s starts (%d of 2 permits in use)", name, 2-sem.Available())
			time.Sleep(time.Duration(100*(i+1)) * time.Millisecond)
			tl.Printf("%s done", name)
			sem.Release()
		})
		time.Sleep(10 * time.Millisecond) // they arrive in order
	}
	wg.Wait()
	tl.Printf("never more than two ran at once, and job-3 went before job-4")
}

func weightedChapter(tl *timeline) {
	budget := ctxsync.NewWeighted(100)
	_ = budget.Acquire(bg, 70)
	tl.Printf("a 70MB decode is running; 30MB free")
	var wg sync.WaitGroup
	wg.Go(func() {
		tl.Printf("an 80MB request queues")
		_ = budget.Acquire(bg, 80)
		tl.Printf("the 80MB request runs")
		time.Sleep(100 * time.Millisecond)
		tl.Printf("the 80MB request is done")
		budget.Release(80)
	})
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		tl.Printf("a 25MB request would fit in the 30MB free, but waits its turn")
		_ = budget.Acquire(bg, 25)
		tl.Printf("the 25MB request runs")
		budget.Release(25)
	})
	time.Sleep(190 * time.Millisecond)
	tl.Printf("the decode finishes")
	budget.Release(70)
	wg.Wait()
	tl.Printf("the large request was not starved by the small one")
}

func rwlockChapter(tl *timeline) {
	var rw ctxsync.RWLock
	var wg sync.WaitGroup
	_ = rw.RLock(bg)
	tl.Printf("reader 1 reads for 200ms")
	wg.Go(func() {
		time.Sleep(50 * time.Millisecond)
		tl.Printf("the writer arrives and waits for the reader")
		_ = rw.Lock(bg)
		tl.Printf("the writer writes")
		time.Sleep(50 * time.Millisecond)
		rw.Unlock()
	})
	wg.Go(func() {
		time.Sleep(100 * time.Millisecond)
		tl.Printf("reader 2 arrives: a writer waits, so it waits too")
		_ = rw.RLock(bg)
		tl.Printf("reader 2 reads, after the writer")
		rw.RUnlock()
	})
	time.Sleep(200 * time.Millisecond)
	tl.Printf("reader 1 is done")
	rw.RUnlock()
	wg.Wait()
}

func eventChapter(tl *timeline) {
	var ready ctxsync.Event
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			time.Sleep(time.Duration(10*i) * time.Millisecond)
			tl.Printf("server %d waits for the configuration", i)
			_ = ready.Wait(bg)
		})
	}
	time.Sleep(150 * time.Millisecond)
	tl.Printf("the configuration is loaded: one Set wakes all three")
	ready.Set()
	wg.Wait()
	tl.Printf("and a Wait that comes later returns at once: %v", ready.Wait(bg))
}

func conditionChapter(tl *timeline) {
	c := ctxsync.NewCondition(nil)
	stock := 0 // guarded by c
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		_ = c.Lock(bg)
		defer c.Unlock()
		tl.Printf("an impatient buyer waits 100ms for stock")
		err := c.WaitFor(ctx, func() bool { return stock > 0 })
		tl.Printf("the impatient buyer leaves: %v (and still holds the lock, as promised)", err)
	})
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		_ = c.Lock(bg)
		defer c.Unlock()
		tl.Printf("a patient buyer waits for stock")
		_ = c.WaitFor(bg, func() bool { return stock > 0 })
		stock--
		tl.Printf("the patient buyer buys one; %d left", stock)
	})
	time.Sleep(190 * time.Millisecond)
	_ = c.Lock(bg)
	stock = 3
	tl.Printf("a delivery of 3 arrives")
	c.NotifyAll()
	c.Unlock()
	wg.Wait()
}

func barrierChapter(tl *timeline) {
	lap := 1
	b := ctxsync.NewBarrier(3, func() error {
		tl.Printf("-- everyone finished lap %d: the next one starts together --", lap)
		lap++
		return nil
	})
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			for range 2 {
				time.Sleep(time.Duration(40*i) * time.Millisecond)
				tl.Printf("runner %d finishes the lap", i)
				_, _ = b.Wait(bg)
			}
		})
	}
	wg.Wait()
}

func queueChapter(tl *timeline) {
	q := ctxsync.NewQueue[int](2)
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(10 * time.Millisecond) // the worker comes a little late
		for job := range q.All(bg) {
			time.Sleep(60 * time.Millisecond)
			tl.Printf("the worker finishes job %d", job)
			q.TaskDone()
		}
	})
	for job := 1; job <= 4; job++ {
		if q.Len() == 2 {
			tl.Printf("the queue holds 2, its capacity: job %d waits to go in", job)
		}
		_ = q.Put(bg, job)
		tl.Printf("job %d is queued", job)
	}
	tl.Printf("Join waits for every job to be done, not just taken")
	_ = q.Join(bg)
	tl.Printf("Join returns")
	q.Close()
	wg.Wait()
}

func priorityChapter(tl *timeline) {
	q := ctxsync.NewPriorityQueue[string](0)
	_ = q.Put(bg, 3, "rebuild the index")
	_ = q.Put(bg, 1, "send a receipt")
	_ = q.Put(bg, 0, "page the on-call")
	_ = q.Put(bg, 1, "send a password reset")
	q.Close()
	for {
		task, err := q.Get(bg)
		if err != nil {
			// ErrClosed once closed and drained; with a ctx that can end,
			// ctx.Err(). Either way there is no task: stop.
			break
		}
		tl.Printf("next: %s", task)
		time.Sleep(20 * time.Millisecond)
	}
}

func rateChapter(tl *timeline) {
	b := ratelimit.NewTokenBucket(20, 3) // 20 per second, bursts of 3
	for i := 1; i <= 7; i++ {
		_ = b.Wait(bg)
		tl.Printf("request %d", i)
	}
	tl.Printf("3 at once from the full bucket, then one every 50ms")
}

func breakerChapter(tl *timeline) {
	start := time.Now()
	down := func(context.Context) error {
		if time.Since(start) < 300*time.Millisecond {
			return errors.New("503")
		}
		return nil
	}
	b := breaker.New(breaker.Settings{FailureThreshold: 2, OpenTimeout: 200 * time.Millisecond,
		OnStateChange: func(from, to breaker.State, _ breaker.Counts) { tl.Printf("  breaker %s -> %s", from, to) }})
	for i := 1; i <= 8; i++ {
		err := b.Execute(bg, down)
		switch {
		case errors.Is(err, breaker.ErrOpen):
			tl.Printf("call %d refused at once: the service is not even called", i)
		case err != nil:
			tl.Printf("call %d fails", i)
		default:
			tl.Printf("call %d succeeds", i)
		}
		time.Sleep(70 * time.Millisecond)
	}
}

func poolChapter(tl *timeline) {
	made := 0
	p, err := pool.New(pool.Config[int]{
		New: func(context.Context) (int, error) {
			time.Sleep(100 * time.Millisecond) // dialing is slow
			made++
			return made, nil
		},
		MaxSize: 2,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx)
	tl.Printf("a caller with 30ms to spare gives up: %v", err)
	time.Sleep(100 * time.Millisecond)
	tl.Printf("the connection it asked for was finished anyway, and waits idle: %d idle", p.Stats().Idle)
	r, _ := p.Acquire(bg)
	tl.Printf("the next caller gets connection %d at once", r.Value())
	r.Release()
	_ = p.Close(bg)
	tl.Printf("closed: %d made, %d acquires", p.Stats().Created, p.Stats().AcquireCount)
}

func groupChapter(tl *timeline) {
	g, _ := group.New(bg, group.Options{})
	for i, name := range []string{"users", "orders", "prices"} {
		_ = g.Go(func(ctx context.Context) error {
			select {
			case <-time.After(time.Duration(100*(i+1)) * time.Millisecond):
			case <-ctx.Done(): // the group's ctx: a task has failed
				tl.Printf("the %s fetch is cancelled", name)
				return ctx.Err()
			}
			if name == "orders" {
				tl.Printf("the %s fetch fails", name)
				return errors.New("orders: 503")
			}
			tl.Printf("the %s fetch is done", name)
			return nil
		})
	}
	tl.Printf("Wait returns the first error, once every task has returned: %v", g.Wait())

	waits := []time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	got, _ := group.Map(bg, waits, 0, func(ctx context.Context, d time.Duration) (string, error) {
		time.Sleep(d)
		tl.Printf("the %v download ends", d)
		return fmt.Sprintf("file-%v", d), nil
	})
	tl.Printf("Map returns the results in the items' order, not the ends': %v", got)
}

// A timeline prints the story one line per event, stamped with the time since
// it began, rounded to unit. The example's test runs it in a testing/synctest
// bubble, where time is virtual and the stamps exact. It is safe for
// concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

func newTimeline(w io.Writer, unit time.Duration) *timeline {
	return &timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
