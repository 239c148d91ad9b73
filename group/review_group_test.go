package group_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewWaitIdenticalFromManyGoroutines: Waits called at once from
// several goroutines, and again later, all return the identical error value
// (or panic with the identical *PanicError), fail-fast or CollectAll.
func TestReviewWaitIdenticalFromManyGoroutines(t *testing.T) {
	for _, kind := range []string{"failfast", "collectall", "panic"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, _ := group.New(context.Background(), group.Options{CollectAll: kind == "collectall"})
				release := make(chan struct{})
				for i := range 5 {
					g.Go(func(ctx context.Context) error {
						<-release
						if kind == "panic" && i == 2 {
							panic("boom")
						}
						if i%2 == 0 {
							return errors.New("fail")
						}
						return nil
					})
				}
				type outcome struct {
					err error
					p   any
				}
				wait := func() (o outcome) {
					defer func() { o.p = recover() }()
					o.err = g.Wait()
					return o
				}
				got := make(chan outcome, 8)
				for range 8 {
					go func() { got <- wait() }()
				}
				synctest.Wait()
				close(release)
				first := <-got
				for range 7 {
					if o := <-got; o != first {
						t.Errorf("%s: Wait returned %#v, and elsewhere %#v", kind, o, first)
					}
				}
				if o := wait(); o != first {
					t.Errorf("%s: a later Wait returned %#v, the first %#v", kind, o, first)
				}
				if first.err == nil && first.p == nil {
					t.Errorf("%s: Wait returned nil", kind)
				}
			})
		})
	}
}

// TestReviewTasksWaitingForLaterTasksOnReusedGoroutines: tasks each wait
// for the next one given to start, mixed with quick tasks so that goroutines
// of the group are reused for waiting tasks. No task may wait for a goroutine
// held by a task that waits: in a bubble, a deadlock would be reported.
func TestReviewTasksWaitingForLaterTasksOnReusedGoroutines(t *testing.T) {
	for _, procs := range []int{1, 0} {
		synctest.Test(t, func(t *testing.T) {
			if procs == 1 {
				testutil.OneProcessor(t)
			}
			g, _ := group.New(context.Background(), group.Options{})
			const n = 60
			started := make([]chan struct{}, n+1)
			for i := range started {
				started[i] = make(chan struct{})
			}
			var quick atomic.Int32
			for i := range n {
				g.Go(func(context.Context) error {
					close(started[i])
					<-started[i+1] // the next waiting task has started
					return nil
				})
				for range i % 4 {
					g.Go(func(context.Context) error { quick.Add(1); return nil })
				}
				if i%7 == 0 {
					synctest.Wait() // let goroutines finish quick tasks and look for more
				}
			}
			g.Go(func(context.Context) error { close(started[n]); return nil })
			if err := g.Wait(); err != nil {
				t.Errorf("Wait = %v", err)
			}
		})
	}
}

// TestReviewChainOfGoFromTasksWithConcurrentWaits: each task gives the next
// and returns; four Waits started before the chain ends all return nil once
// the whole chain has run.
func TestReviewChainOfGoFromTasksWithConcurrentWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := group.New(context.Background(), group.Options{})
		const n = 500
		var ran atomic.Int32
		var step func(i int) func(context.Context) error
		step = func(i int) func(context.Context) error {
			return func(context.Context) error {
				ran.Add(1)
				if i+1 < n {
					if err := g.Go(step(i + 1)); err != nil {
						return err
					}
				}
				return nil
			}
		}
		if err := g.Go(step(0)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if err := g.Wait(); err != nil {
					t.Errorf("Wait = %v", err)
				}
				if r := ran.Load(); r != n {
					t.Errorf("Wait returned with %d of %d tasks run", r, n)
				}
			})
		}
		wg.Wait()
	})
}

// TestReviewGoexitInSeq: an iterator that calls runtime.Goexit ends the
// caller's goroutine, but only once every item pulled has gone to f and f has
// returned; no goroutine is left behind.
func TestReviewGoexitInSeq(t *testing.T) {
	for _, limit := range []int{0, 1, 2} {
		synctest.Test(t, func(t *testing.T) {
			var seen, running atomic.Int32
			seq := func(yield func(int) bool) {
				for i := range 3 {
					if !yield(i) {
						return
					}
				}
				runtime.Goexit()
			}
			returned := false
			exited := make(chan struct{})
			go func() {
				defer close(exited)
				group.ForEach(context.Background(), seq, limit, func(ctx context.Context, _ int) error {
					seen.Add(1)
					running.Add(1)
					defer running.Add(-1)
					select { // the last items are cut short by the Goexit
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
					return nil
				})
				returned = true
			}()
			<-exited
			if returned {
				t.Errorf("limit %d: ForEach returned after its seq called Goexit", limit)
			}
			if seen.Load() != 3 || running.Load() != 0 {
				t.Errorf("limit %d: f saw %d items (want 3), %d still running", limit, seen.Load(), running.Load())
			}
		})
	}
}

// TestReviewSeqYieldsAfterCtxEnded: the seq itself ends ctx and then yields
// an item: ForEach took the slot before it pulled, so f gets the item, with
// its ctx done; ForEach returns ctx.Err().
func TestReviewSeqYieldsAfterCtxEnded(t *testing.T) {
	for _, limit := range []int{0, 1, 3} {
		ctx, cancel := context.WithCancel(context.Background())
		seq := func(yield func(int) bool) {
			if !yield(0) {
				return
			}
			cancel()
			if !yield(1) {
				return
			}
			t.Errorf("limit %d: ForEach pulled an item after ctx ended", limit)
		}
		var mu sync.Mutex
		got := map[int]bool{}
		err := group.ForEach(ctx, seq, limit, func(fctx context.Context, x int) error {
			mu.Lock()
			got[x] = true
			mu.Unlock()
			return nil
		})
		if err != context.Canceled {
			t.Errorf("limit %d: ForEach = %v, want context.Canceled", limit, err)
		}
		if !got[0] || !got[1] {
			t.Errorf("limit %d: f saw %v, want items 0 and 1", limit, got)
		}
		cancel()
	}
}

// TestReviewForEachQueueShutdownRandom: ForEach over a Queue's All, with f
// marking each job done, while a producer puts, and ctx ends at a random
// moment of virtual time; then CloseNow and Join. Every job put is handled by
// f or handed back, Unfinished is 0 and Join returns.
func TestReviewForEachQueueShutdownRandom(t *testing.T) {
	for seed := range uint64(40) {
		for _, limit := range []int{0, 1, 3} {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, uint64(limit)))
				q := ctxsync.NewQueue[int](int(seed % 4))
				var put atomic.Int32
				produced := make(chan struct{})
				delays := make([]time.Duration, 50)
				for i := range delays {
					delays[i] = time.Duration(r.IntN(5)) * time.Millisecond
				}
				go func() {
					defer close(produced)
					for i, d := range delays {
						if q.Put(context.Background(), i) != nil {
							return
						}
						put.Add(1)
						time.Sleep(d)
					}
				}()
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(60))*time.Millisecond)
				defer cancel()
				work := make([]time.Duration, 50)
				for i := range work {
					work[i] = time.Duration(r.IntN(8)) * time.Millisecond
				}
				var handled atomic.Int32
				fail := r.IntN(3) == 0
				boom := errors.New("boom")
				err := group.ForEach(ctx, q.All(ctx), limit, func(ctx context.Context, job int) error {
					defer q.TaskDone()
					handled.Add(1)
					time.Sleep(work[job])
					if fail && job == 20 {
						return boom
					}
					return nil
				})
				if err != nil && err != context.DeadlineExceeded && err != boom {
					t.Errorf("ForEach = %v", err)
				}
				back := q.CloseNow()
				<-produced
				if int(handled.Load())+len(back) != int(put.Load()) {
					t.Errorf("seed %d limit %d: %d handled + %d handed back != %d put", seed, limit, handled.Load(), len(back), put.Load())
				}
				if u := q.Unfinished(); u != 0 {
					t.Errorf("Unfinished = %d", u)
				}
				if err := q.Join(context.Background()); err != nil {
					t.Errorf("Join = %v", err)
				}
			})
		}
	}
}

// TestReviewGoexitInWorkerOfMap: an f that calls runtime.Goexit in a
// goroutine of Map other than the caller's fails Map with ErrGoexit, and
// MapAll with ErrGoexit at that item's index alone.
func TestReviewGoexitInWorkerOfMap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		second := make(chan struct{})
		f := func(ctx context.Context, x int) (int, error) {
			if x == 0 {
				<-second // item 1 runs in another goroutine
				return 10, nil
			}
			close(second)
			runtime.Goexit()
			return 0, nil
		}
		_, err := group.Map(context.Background(), []int{0, 1}, 2, f)
		if err != group.ErrGoexit {
			t.Errorf("Map = %v, want ErrGoexit", err)
		}
		second = make(chan struct{})
		res, errs := group.MapAll(context.Background(), []int{0, 1, 2}, 2, func(ctx context.Context, x int) (int, error) {
			if x == 2 {
				return 30, nil
			}
			return f(ctx, x)
		})
		if len(errs) != 3 || errs[0] != nil || errs[1] != group.ErrGoexit || errs[2] != nil {
			t.Errorf("MapAll errs = %v, want [nil ErrGoexit nil]", errs)
		}
		if res[0] != 10 || res[2] != 30 {
			t.Errorf("MapAll results = %v", res)
		}
	})
}

// TestReviewAfterPanicTryGoAndGoRefused: once a task has panicked, TryGo and
// Go refuse, Wait panics with the same *PanicError each time, and Go after
// that Wait panics as misuse.
func TestReviewAfterPanicTryGoAndGoRefused(t *testing.T) {
	for _, limit := range []int{0, 1, 2} {
		g, ctx := group.New(context.Background(), group.Options{Limit: limit})
		g.Go(func(context.Context) error { panic("p") })
		<-ctx.Done()
		if g.TryGo(func(context.Context) error { t.Error("ran after panic"); return nil }) {
			t.Errorf("limit %d: TryGo after a panic = true", limit)
		}
		if err := g.Go(func(context.Context) error { t.Error("ran after panic"); return nil }); err == nil {
			t.Errorf("limit %d: Go after a panic = nil", limit)
		}
		p1 := mustPanic(t, "Wait", func() { g.Wait() })
		p2 := mustPanic(t, "Wait", func() { g.Wait() })
		if p1 != p2 {
			t.Errorf("limit %d: Waits panicked with %v and %v", limit, p1, p2)
		}
		mustPanic(t, "Go after Wait", func() { g.Go(func(context.Context) error { return nil }) })
		mustPanic(t, "TryGo after Wait", func() { g.TryGo(func(context.Context) error { return nil }) })
	}
}

// TestReviewMadeOutsideDoneAskedInside: a Group made outside a bubble whose
// tasks ask for ctx.Done() inside it, fail there and are waited for there.
func TestReviewMadeOutsideDoneAskedInside(t *testing.T) {
	g, gctx := group.New(context.Background(), group.Options{Limit: 2})
	boom := errors.New("boom")
	synctest.Test(t, func(t *testing.T) {
		for i := range 4 {
			g.Go(func(ctx context.Context) error {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(i+1) * time.Second):
					if i == 1 {
						return boom
					}
					return nil
				}
			})
		}
		if err := g.Wait(); err != boom {
			t.Errorf("Wait = %v, want boom", err)
		}
		if context.Cause(gctx) != boom {
			t.Errorf("cause = %v", context.Cause(gctx))
		}
	})
}
