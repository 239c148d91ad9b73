// Command graceful-shutdown runs a small service, workers in a group.Group
// taking jobs from a ctxsync.Queue, until SIGINT (Ctrl-C) or SIGTERM asks it
// to stop; the demo also stops itself after a second, as if asked:
//
//	go run ./examples/graceful-shutdown
//
// The shutdown loses no job and takes a bounded time. The intake stops, so no
// new job is accepted. The workers take no new job, and finish the one in
// hand. Queue.CloseNow hands back the jobs still queued, to be saved for the
// next run. Join waits for the jobs in hand until a deadline on the whole
// shutdown; a job still running then is cut short, and saved too. The
// group's Wait returns once every worker has returned.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
)

func main() {
	// The first SIGINT or SIGTERM (what kill and container runtimes send)
	// ends ctx, which begins the shutdown. A second one then ends the
	// program at once, as it would without NotifyContext: stop restores
	// the default behaviour.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	run(ctx, os.Stdout)
}

// The demo's timings: how long it runs before it stops itself, and how long
// the whole shutdown may take.
const (
	demoLength      = time.Second
	shutdownTimeout = 300 * time.Millisecond
)

var errDemoOver = errors.New("the demo's second is over")

// run runs the service until ctx ends or the demo's time is up, then shuts
// it down. Its timings come from the clock alone (sleeps and deadlines), so
// in a testing/synctest bubble its output is exact.
func run(ctx context.Context, w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	ctx, cancel := context.WithTimeoutCause(ctx, demoLength, errDemoOver)
	defer cancel()

	svc := Start(tl, 3, 4)
	tl.Printf("the service runs: 3 workers, room for 4 jobs in the queue")

	// The intake: a job comes every 60ms, until ctx ends. The workers fall
	// behind, so jobs pile up in the queue (were it full, Submit would wait
	// for room).
	for n := 1; ctx.Err() == nil; n++ {
		j := job{name: fmt.Sprintf("job-%d", n), cost: time.Duration(100+50*(n%4)) * time.Millisecond}
		if n == 9 {
			j.cost = 2 * time.Second // a slow report
		}
		if err := svc.Submit(ctx, j); err != nil {
			tl.Printf("intake: %s not accepted: %v", j.name, err)
			break
		}
		select {
		case <-time.After(60 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	tl.Printf("shutdown begins (%v): the intake is closed", context.Cause(ctx))

	// A fresh ctx for the shutdown: the service's own has ended.
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	r := svc.Shutdown(sctx)
	tl.Printf("stopped: %d jobs finished: %s", len(r.Finished), list(r.Finished))
	tl.Printf("saved for the next run: never started: %s; cut short: %s", list(r.HandedBack), list(r.CutShort))
}

// list lists names for a line of the story.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// A job is a piece of work, which takes cost to do.
type job struct {
	name string
	cost time.Duration
}

// A Service runs jobs on a fixed set of workers, which take them from a
// queue, until Shutdown. Use Start.
type Service struct {
	tl      *timeline
	jobs    *ctxsync.Queue[job]
	workers *group.Group

	// Shutdown ends these one after the other: take first, so that the
	// workers take no new job, and work only if the jobs in hand outlast
	// the deadline.
	stopTaking context.CancelFunc
	stopWork   context.CancelFunc

	mu       sync.Mutex
	finished []string // guarded by mu
	cutShort []string // guarded by mu
}

// Start starts a Service with n workers and room for capacity queued jobs.
func Start(tl *timeline, n, capacity int) *Service {
	work, stopWork := context.WithCancel(context.Background())
	s := &Service{tl: tl, jobs: ctxsync.NewQueue[job](capacity), stopWork: stopWork}
	// The workers never fail (a failed job is the job's business), so the
	// group's ctx ends only with stopWork. Jobs run with it.
	var gctx context.Context
	s.workers, gctx = group.New(work, group.Options{})
	take, stopTaking := context.WithCancel(gctx)
	s.stopTaking = stopTaking
	for i := 1; i <= n; i++ {
		_ = s.workers.Go(func(ctx context.Context) error {
			// Start a little apart, so that the idle workers wait for
			// jobs in the order of their numbers.
			time.Sleep(time.Duration(i) * time.Millisecond)
			// Until take ends; the job in hand is finished first.
			for j := range s.jobs.All(take) {
				s.do(ctx, i, j)
				s.jobs.TaskDone()
			}
			return nil
		})
	}
	return s
}

// do does j on worker i, unless ctx ends first.
func (s *Service) do(ctx context.Context, i int, j job) {
	s.tl.Printf("worker %d starts %s", i, j.name)
	select {
	case <-time.After(j.cost):
		s.tl.Printf("worker %d finished %s", i, j.name)
		s.mu.Lock()
		s.finished = append(s.finished, j.name)
		s.mu.Unlock()
	case <-ctx.Done():
		s.tl.Printf("worker %d cuts %s short", i, j.name)
		s.mu.Lock()
		s.cutShort = append(s.cutShort, j.name)
		s.mu.Unlock()
	}
}

// Submit queues j, waiting for room until ctx ends. After Shutdown it
// returns ctxsync.ErrClosed.
func (s *Service) Submit(ctx context.Context, j job) error {
	if err := s.jobs.Put(ctx, j); err != nil {
		return err
	}
	s.tl.Printf("intake: %s queued", j.name)
	return nil
}

// A Report tells how a shutdown went: every job accepted is in one of its
// lists.
type Report struct {
	Finished   []string // done, since the start
	HandedBack []string // still queued at the shutdown: never started
	CutShort   []string // started, and stopped at the deadline
}

// Shutdown stops the service gracefully: the workers finish the jobs in hand
// and take no more, and the jobs still queued are handed back. If ctx ends
// first, the jobs in hand are cut short. Shutdown returns once every worker
// has returned.
func (s *Service) Shutdown(ctx context.Context) Report {
	s.stopTaking()
	// The workers' Gets fail now, even with jobs queued, so none can take
	// a job after this: CloseNow hands back every job not yet taken, and
	// the Submits still waiting fail with ErrClosed. There is no need to
	// wait for the workers before, which would leave that wait unbounded.
	var r Report
	for _, j := range s.jobs.CloseNow() {
		r.HandedBack = append(r.HandedBack, j.name)
	}
	s.tl.Printf("shutdown: the workers take no new job; handed back: %s", list(r.HandedBack))

	// The jobs handed back count as done: Join waits for those in hand.
	if err := s.jobs.Join(ctx); err != nil {
		s.tl.Printf("shutdown: %v, %d still in hand: cut short", err, s.jobs.Unfinished())
		s.stopWork()
	} else {
		s.tl.Printf("shutdown: every job in hand is finished")
	}
	_ = s.workers.Wait() // the workers return no error
	s.stopWork()

	s.mu.Lock()
	defer s.mu.Unlock()
	r.Finished, r.CutShort = s.finished, s.cutShort
	return r
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
