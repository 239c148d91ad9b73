package redissync

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Regression: a pipelined attempt whose caller gave up is taken back by
// giveUp's goroutine once the pipeline ends, after roundTrip when the
// client (ContextTimeoutEnabled) gave the pipeline up unanswered, for its
// bytes may yet land. When a client hook panicked in that pipeline, the op
// carries the panic and no error, and the take-back ran at once: an attempt
// landing after it is granted a permit that nobody holds, for the Lease.
// Right: as in takeBackPanicked, such an attempt is taken back once more
// after roundTrip. (The op is made by hand here, and the attempt's late
// landing played by running it after the pipeline "ended".)
//
// The order the case needs is forced, not timed: the late attempt runs once
// the take-back at once has been answered (a releaseGate counts it), and
// the take-back after roundTrip is held by that gate until the attempt has
// been answered. The client honours deadlines, with room (a loaded machine
// held a reply past a Timeout of 200 ms, or a ReadTimeout of 1 s, here);
// the roundTrip, which would follow that room to 5 s, is set to 100 ms:
// the gate, not the timer, keeps the second take-back after the attempt.
func TestReviewM7_GiveUpAfterPipelinePanicTakesBackLate(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.roomyHookClient(t, true)
			cfg := b.config(c, "m7giveuppanic", 1, time.Minute)
			cfg.Timeout = roomyTimeout
			s := mustNew(t, cfg)
			if !s.ctxTimeouts {
				t.Fatal("the client does not honour deadlines: the case is not reached")
			}
			s.roundTrip = 100 * time.Millisecond // before any goroutine of s reads it
			g := &releaseGate{sha: s.releaseCall.head[1].(string), gate: make(chan struct{})}
			open := sync.OnceFunc(func() { close(g.gate) })
			defer open() // a take-back held when the test fails goes on
			c.AddHook(g)
			ctx := context.Background()
			warm(t, s)
			g.counting.Store(true) // the take-backs from here on

			id := s.newID()
			o := &op{done: make(chan struct{})} // sent: not in the queue
			if _, answered, _ := s.giveUp(o, id); answered {
				t.Fatal("giveUp answered an op whose pipeline has not ended")
			}
			o.panicked = "hook"
			close(o.done)
			g.awaitAnswered(t, 1) // the take-back at once is over
			r, err := s.attempt(ctx, id, s.entryArg, false)
			open() // a take-back after roundTrip, held till now, goes on
			if err != nil || !r.granted {
				t.Fatalf("the late attempt: %+v, %v; want it granted", r, err)
			}
			awaitEmpty(t, s, s.roundTrip+20*time.Second, "after the pipeline panicked (the late attempt not taken back)")
		})
	}
}

// releaseGate is a client hook that, once counting, counts the release
// scripts of one Semaphore (by hash) that Redis has answered, and holds
// every one after the first until gate is closed, then sends it without
// its caller's deadline (a late take-back's own Timeout may have passed
// meanwhile).
type releaseGate struct {
	sha      string
	gate     chan struct{}
	counting atomic.Bool
	sent     atomic.Int32
	answered atomic.Int32
}

func (g *releaseGate) mine(cmd redis.Cmder) bool {
	return g.counting.Load() && slices.Contains(cmd.Args(), any(g.sha))
}

// hold counts a release script sent, and holds it if it is not the first.
func (g *releaseGate) hold(ctx context.Context) context.Context {
	if g.sent.Add(1) == 1 {
		return ctx
	}
	<-g.gate
	return context.WithoutCancel(ctx)
}

func (g *releaseGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *releaseGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !g.mine(cmd) {
			return next(ctx, cmd)
		}
		err := next(g.hold(ctx), cmd)
		g.answered.Add(1)
		return err
	}
}

func (g *releaseGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, g.mine) {
			return next(ctx, cmds)
		}
		err := next(g.hold(ctx), cmds)
		g.answered.Add(1)
		return err
	}
}

// awaitAnswered waits until g has counted n release scripts answered, and
// fails t if that has not come within a minute, which no loaded machine
// takes to answer one script.
func (g *releaseGate) awaitAnswered(t testing.TB, n int32) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); g.answered.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d release scripts answered within a minute; want %d", g.answered.Load(), n)
		}
	}
}
