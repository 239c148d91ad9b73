package group_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHammerGroup runs groups of random tasks (successes, failures, panics,
// calls of runtime.Goexit, waits on ctx, tasks that start tasks) from several goroutines at once, with
// random limits and a parent ctx that may end at any time, and checks what
// must hold whatever the schedule:
//   - a task ran exactly when its Go returned nil or its TryGo true;
//   - never more than Limit tasks at once, and none running after Wait;
//   - Wait panics exactly when a task panicked, with one of the values;
//   - otherwise Wait returns one of the errors (fail-fast) or all of them
//     (CollectAll), nil exactly when no task failed;
//   - with Limit 1 and fail-fast or CancelOnError, no task starts after
//     one has failed;
//   - the group's ctx has ended when Wait returns.
func TestHammerGroup(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range testutil.HammerRounds(1000) {
		if t.Failed() {
			break
		}
		hammerRound(t, round, rand.New(rand.NewPCG(r.Uint64(), r.Uint64())))
	}
}

type hammerState struct {
	opts                    group.Options
	accepted, started, done atomic.Int32
	running, most           atomic.Int32
	failedSeen              atomic.Bool // a task has failed or panicked
	startedAfterFailure     atomic.Int32
	mu                      sync.Mutex
	errs                    map[error]bool // returned by tasks
	nErrs                   int
	panics                  map[any]bool
}

func hammerRound(t *testing.T, round int, r *rand.Rand) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch r.IntN(3) {
	case 1:
		stop := time.AfterFunc(time.Duration(r.IntN(300))*time.Microsecond, cancel)
		defer stop.Stop()
	case 2:
		cancel()
	}
	h := &hammerState{
		opts:   group.Options{Limit: r.IntN(5), CollectAll: r.IntN(2) == 0, CancelOnError: r.IntN(2) == 0},
		errs:   make(map[error]bool),
		panics: make(map[any]bool),
	}
	g, gctx := group.New(parent, h.opts)

	var callers sync.WaitGroup
	for c := range 1 + r.IntN(3) {
		seed := r.Uint64()
		callers.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			for i := range r.IntN(12) {
				h.submit(g, r, fmt.Sprintf("r%d c%d t%d", round, c, i), 1)
			}
		})
	}
	callers.Wait()

	var waitErr error
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		waitErr = g.Wait()
	}()

	if a, s := h.accepted.Load(), h.started.Load(); a != s {
		t.Errorf("%v: %d tasks accepted, %d started", h.opts, a, s)
	}
	if s, d := h.started.Load(), h.done.Load(); s != d {
		t.Errorf("%v: %d tasks started, %d ended by Wait's return", h.opts, s, d)
	}
	if lim := h.opts.Limit; lim > 0 && h.most.Load() > int32(lim) {
		t.Errorf("%v: %d tasks at once", h.opts, h.most.Load())
	}
	if gctx.Err() == nil {
		t.Errorf("%v: the group's ctx is live after Wait", h.opts)
	}
	if h.opts.Limit == 1 && (!h.opts.CollectAll || h.opts.CancelOnError) && h.startedAfterFailure.Load() > 0 {
		t.Errorf("%v: %d tasks started after a failure", h.opts, h.startedAfterFailure.Load())
	}
	if len(h.panics) > 0 {
		p, ok := panicked.(*group.PanicError)
		if !ok || !h.panics[p.Value] {
			t.Errorf("%v: Wait panicked with %v, want one of %v", h.opts, panicked, h.panics)
		}
		return
	}
	if panicked != nil {
		t.Fatalf("%v: Wait panicked with %v, and no task did", h.opts, panicked)
	}
	switch {
	case h.nErrs == 0:
		if waitErr != nil {
			t.Errorf("%v: Wait = %v, and no task failed", h.opts, waitErr)
		}
	case h.opts.CollectAll:
		joined, ok := waitErr.(interface{ Unwrap() []error })
		if !ok || len(joined.Unwrap()) != h.nErrs {
			t.Errorf("%v: Wait = %v, want %d errors joined", h.opts, waitErr, h.nErrs)
		}
	default:
		if !h.errs[waitErr] {
			t.Errorf("%v: Wait = %v, not an error a task returned", h.opts, waitErr)
		}
	}
}

// submit starts one random task by Go or TryGo; depth bounds the tasks that
// tasks start.
func (h *hammerState) submit(g *group.Group, r *rand.Rand, name string, depth int) {
	kind := r.IntN(10)
	delay := time.Duration(r.IntN(100)) * time.Microsecond
	seed := r.Uint64()
	task := func(ctx context.Context) error {
		if h.failedSeen.Load() {
			h.startedAfterFailure.Add(1)
		}
		h.started.Add(1)
		n := h.running.Add(1)
		for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
		}
		defer h.done.Add(1)
		defer h.running.Add(-1)
		var err error
		switch kind {
		case 0: // fails
			err = errors.New(name)
		case 1: // panics
			h.mu.Lock()
			h.panics[name] = true
			h.mu.Unlock()
			h.failedSeen.Store(true)
			panic(name)
		case 2, 3: // waits a little, or until ctx ends
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(delay):
			}
		case 4: // starts another task: by TryGo under a limit, where tasks waiting in Go for each other's slots would wait forever
			if depth > 0 {
				h.submit(g, rand.New(rand.NewPCG(seed, 1)), name+" sub", depth-1)
			}
		case 9: // ends its goroutine: a failure with ErrGoexit
			h.mu.Lock()
			h.errs[group.ErrGoexit] = true
			h.nErrs++
			h.mu.Unlock()
			h.failedSeen.Store(true)
			runtime.Goexit()
		default:
			runtime.Gosched()
		}
		if err != nil {
			h.mu.Lock()
			h.errs[err] = true
			h.nErrs++
			h.mu.Unlock()
			h.failedSeen.Store(true)
		}
		return err
	}
	if r.IntN(4) == 0 || (h.opts.Limit > 0 && depth == 0) {
		if g.TryGo(task) {
			h.accepted.Add(1)
		}
		return
	}
	if g.Go(task) == nil {
		h.accepted.Add(1)
	}
}
