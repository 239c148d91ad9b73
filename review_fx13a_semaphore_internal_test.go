package ctxsync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// fx13aWaiter is one Acquire run in a goroutine of the bubble.
type fx13aWaiter struct {
	cancel context.CancelFunc
	res    chan error
	gone   bool // its ctx was cancelled
}

// TestSemaphoreDroppedWaitersInterleaved plays random scripts on one
// processor, so that waiters whose ctx was cancelled do not run again until
// the script lets them: cancellations, Releases (whole, or split into the Add
// and the hand-off that a Release makes, with others in between), TryAcquire,
// Acquires (whole, or split between the Add that counts them waiting and the
// rest), before and after the waiters' own cancel paths run. A model of the free permits and the FIFO queue of live waiters says
// what TryAcquire and Available must show right after each call; at the end,
// every permit is given back and counted once.
func TestSemaphoreDroppedWaitersInterleaved(t *testing.T) {
	testutil.OneProcessor(t)
	for seed := range uint64(testutil.HammerRounds(300)) {
		for _, bounded := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed=%d/bounded=%v", seed, bounded), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fx13aSemaphoreScript(t, rand.New(rand.NewPCG(seed, 13)), bounded)
				})
			})
		}
	}
}

func fx13aSemaphoreScript(t *testing.T, r *rand.Rand, bounded bool) {
	initial := r.IntN(3)
	var s *Semaphore
	var release func()
	if bounded {
		b := NewBoundedSemaphore(initial)
		s, release = &b.s, b.Release
	} else {
		s = NewSemaphore(initial)
		release = s.Release
	}
	total := initial // permits in existence
	held := 0        // held by the script: TryAcquire, fast Acquire, waiters that got through
	free := initial  // the model's free permits
	var queue []*fx13aWaiter
	var all []*fx13aWaiter
	var pending []int64 // Releases whose Add has landed and whose hand-off has not
	loose := false      // a cancellation raced a pending hand-off: only the end is checked
	counted := 0        // Acquires whose Add has landed, counting them waiting, and which have not gone on yet
	// One script in two splits Acquires between their Add and the rest; the
	// others keep the model strict throughout.
	splits := r.IntN(2) == 0

	handOver := func() {
		for free > 0 && len(queue) > 0 {
			free--
			queue = queue[1:]
		}
	}
	// settleAll lets every goroutine run, collects those that returned, and
	// checks them and the count against the model.
	settleAll := func(what string) {
		synctest.Wait()
		live := all[:0]
		for _, w := range all {
			select {
			case err := <-w.res:
				if err == nil {
					held++
				} else {
					require.True(t, w.gone, "%s: a waiter whose ctx never ended failed: %v", what, err)
				}
			default:
				live = append(live, w)
			}
		}
		all = live
		if len(pending) == 0 && !loose {
			require.Equal(t, free, s.Available(), "%s: Available", what)
			require.Equal(t, len(queue), s.Waiting(), "%s: Waiting", what)
		}
	}

	for step := range 40 {
		what := fmt.Sprintf("step %d", step)
		op := r.IntN(8)
		if splits && r.IntN(10) == 0 {
			op = 8 + r.IntN(2)
		}
		s.q.Lock()
		owed, n := s.owed, s.q.Len()
		s.q.Unlock()
		t.Logf("step %d: op %d; free %d, queued %d, pending %d, held %d, loose %v; state %d owed %d len %d",
			step, op, free, len(queue), len(pending), held, loose, s.state.Load(), owed, n)
		switch op {
		case 0, 1: // a waiter queues
			ctx, cancel := context.WithCancel(context.Background())
			w := &fx13aWaiter{cancel: cancel, res: make(chan error, 1)}
			all = append(all, w)
			if len(pending) == 0 && (free == 0 || len(queue) > 0) {
				queue = append(queue, w)
			} else if len(pending) == 0 {
				free--
			} else {
				loose = true // who gets what depends on the hand-offs to come
			}
			go func() { w.res <- s.Acquire(ctx) }()
			settleAll(what + ": Acquire queues")
		case 2: // a waiter gives up, and does not run again yet
			if len(all) == 0 {
				continue
			}
			w := all[r.IntN(len(all))]
			if w.gone {
				continue
			}
			w.gone = true
			w.cancel()
			if len(pending) > 0 {
				loose = true
			}
			for i, q := range queue {
				if q == w {
					queue = append(queue[:i], queue[i+1:]...)
					break
				}
			}
		case 3: // a whole Release
			if held == 0 && (bounded || len(pending) > 0) {
				continue
			}
			if held > 0 {
				held--
			} else {
				total++
			}
			release()
			free++
			handOver()
			if len(pending) == 0 && !loose {
				require.Equal(t, free, s.Available(), "%s: Available right after Release", what)
			}
		case 4: // a Release's Add lands; its hand-off comes later
			if held == 0 || bounded {
				continue
			}
			held--
			if c := s.state.Add(1); c <= 0 {
				pending = append(pending, c)
			}
			free++
			handOver()
		case 5: // the oldest pending hand-off is made
			if len(pending) == 0 {
				continue
			}
			s.handOff(pending[0])
			pending = pending[1:]
		case 6: // TryAcquire
			got := s.TryAcquire()
			if len(pending) == 0 && !loose {
				require.Equal(t, free > 0 && len(queue) == 0, got, "%s: TryAcquire with %d free, %d queued", what, free, len(queue))
			}
			if got {
				held++
				if free > 0 && len(queue) == 0 {
					free--
				} else {
					loose = true // a permit in transit, taken early
				}
			}
		case 7: // everybody runs
			settleAll(what)
		case 8: // an Acquire's Add lands; the rest of it runs later
			loose = true // where it stands in the queue is up to the race
			if s.state.Add(-1) >= 0 {
				held++ // the fast path's take
			} else {
				counted++
			}
		case 9: // the rest of such an Acquire runs
			if counted == 0 {
				continue
			}
			counted--
			ctx, cancel := context.WithCancel(context.Background())
			w := &fx13aWaiter{cancel: cancel, res: make(chan error, 1)}
			all = append(all, w)
			go func() { w.res <- s.acquireSlow(ctx) }()
			settleAll(what + ": the rest of an Acquire")
		}
	}
	for _, c := range pending {
		s.handOff(c)
	}
	for range counted {
		ctx, cancel := context.WithCancel(context.Background())
		w := &fx13aWaiter{cancel: cancel, res: make(chan error, 1)}
		all = append(all, w)
		go func() { w.res <- s.acquireSlow(ctx) }()
	}
	for _, w := range all {
		w.gone = true
		w.cancel()
	}
	loose = true // the model is done: what is left is counted below
	settleAll("end")
	require.Empty(t, all)
	for range held {
		release()
	}
	require.Equal(t, total, s.Available(), "every permit given back")
	require.Zero(t, s.Waiting())
	s.q.Lock()
	require.Zero(t, s.owed)
	s.q.Unlock()
	runtime.Gosched()
}
