// Command tour walks through the ctxsync primitives in a few seconds, printing
// a short story of each: what it guarantees, and what happened.
//
//	go run ./examples/tour
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() {
	run(os.Stdout)
}

// run prints the tour to w. Its timings come from the clock alone (sleeps and
// deadlines), so inside a synctest bubble the output is exact.
func run(w io.Writer) {
	fmt.Fprintln(w, "ctxsync: synchronization primitives that honour context.Context")
	for _, ch := range chapters {
		fmt.Fprintf(w, "\n== %s\n   %s\n", ch.title, ch.promise)
		ch.play(newStory(w))
	}
	fmt.Fprintln(w, "\nEvery blocking call above took a ctx, served its waiters first in, first out,")
	fmt.Fprintln(w, "and could be abandoned without losing a permit. See examples/ for more.")
}

type chapter struct {
	title, promise string
	play           func(s *story)
}

var chapters = []chapter{
	{"Lock", "mutual exclusion whose waiters can give up", lockChapter},
	{"Semaphore", "at most n at once, in arrival order", semaphoreChapter},
	{"Weighted", "a shared budget for requests of different sizes", weightedChapter},
}

// story prints lines stamped with the time since the chapter began.
type story struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newStory(w io.Writer) *story { return &story{w: w, start: time.Now()} }

func (s *story) say(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := time.Since(s.start).Round(10 * time.Millisecond).Milliseconds()
	fmt.Fprintf(s.w, "   [%4dms] %s\n", ms, fmt.Sprintf(format, args...))
}

func lockChapter(s *story) {
	var mu ctxsync.Lock
	ctx := context.Background()
	_ = mu.Lock(ctx)
	s.say("alice takes the lock and works for 300ms")

	var wg sync.WaitGroup
	wg.Go(func() {
		deadline, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		s.say("bob waits, but only for 100ms")
		if err := mu.Lock(deadline); err != nil {
			s.say("bob gives up: %v (the lock is untouched)", err)
			return
		}
		mu.Unlock()
	})
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		s.say("carol waits as long as it takes")
		_ = mu.Lock(ctx)
		s.say("carol gets the lock the moment alice lets go")
		mu.Unlock()
	})
	time.Sleep(290 * time.Millisecond)
	s.say("alice unlocks")
	mu.Unlock()
	wg.Wait()
}

func semaphoreChapter(s *story) {
	sem := ctxsync.NewSemaphore(2)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, name := range []string{"job-1", "job-2", "job-3", "job-4"} {
		wg.Go(func() {
			_ = sem.Acquire(ctx)
			s.say("%s starts (%d of 2 permits in use)", name, 2-sem.Available())
			time.Sleep(time.Duration(100*(i+1)) * time.Millisecond)
			s.say("%s done", name)
			sem.Release()
		})
		time.Sleep(10 * time.Millisecond) // they arrive in order
	}
	wg.Wait()
	s.say("never more than two ran at once, and job-3 went before job-4")
}

func weightedChapter(s *story) {
	budget := ctxsync.NewWeighted(100)
	ctx := context.Background()
	_ = budget.Acquire(ctx, 70)
	s.say("a 70MB decode is running; 30MB free")

	var wg sync.WaitGroup
	wg.Go(func() {
		s.say("an 80MB request queues")
		_ = budget.Acquire(ctx, 80)
		s.say("the 80MB request runs")
		time.Sleep(100 * time.Millisecond)
		s.say("the 80MB request is done")
		budget.Release(80)
	})
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		s.say("a 25MB request would fit in the 30MB free, but waits its turn")
		_ = budget.Acquire(ctx, 25)
		s.say("the 25MB request runs")
		budget.Release(25)
	})
	time.Sleep(190 * time.Millisecond)
	s.say("the decode finishes")
	budget.Release(70)
	wg.Wait()
	s.say("the large request was not starved by the small one")
}
