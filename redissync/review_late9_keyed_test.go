package redissync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errLateReplyPanic is what a panicAfterHook panics with.
var errLateReplyPanic = errors.New("a client hook panics after the late round trip")

// panicAfterHook, once armed, marks the next command as it starts, and
// panics once that command is over: a hook of the user's that throws the
// reply of a round trip away (put before a gateHook, it panics in the
// round trip that the gate held, whenever that ends).
type panicAfterHook struct{ armed atomic.Bool }

func (h *panicAfterHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *panicAfterHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		mine := h.armed.CompareAndSwap(true, false)
		err := next(ctx, cmd)
		if mine {
			panic(errLateReplyPanic)
		}
		return err
	}
}

func (h *panicAfterHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Release of a Keyed whose ctx ends while its script is on its way lets
// go of the key (Permit.unkey): if nobody else here holds or waits for it,
// the Keyed forgets its Semaphore, and the next Acquire of the key here
// waits on a new one. The script, landing after that waiter joined Redis's
// line, hands the waiter the permit, and names it in its reply, not by
// pub/sub: the waiter has the Keyed's tag, the releaser's. When that reply
// is lost (a client honouring deadlines dropped the round trip, or a hook
// panicked in the round trip that came late), the late wake-up
// (lateWake, lateRelease) woke only the waiters of the Release's own
// Semaphore, which has none: the waiter on the key's new Semaphore slept
// until its Poll, or the end of a lease (here a minute), while the permit
// was held for it. (A reply that comes is read right: handOut wakes the
// waiters of the Keyed's other Semaphores.) Every waiter of the key in the
// process must be woken to ask again.
//
// The order the case needs is forced, not timed: the waiter comes once the
// Release's script is held by the gate and the Release has given up, and
// once the round trip held has given up its place in the pipe (at once
// with ctxTimeouts, at the pipe's hold without): its attempt then goes
// alone, with a whole Timeout. Every other round trip has room (a
// roomyHookClient, roomyTimeout): a loaded machine held one up past the
// strict client's second, or a Timeout of 2 s, here.
func TestReviewLate9KeyedLateWakeReachesTheKeysNewSemaphore(t *testing.T) {
	for _, b := range backends(t) {
		for _, tc := range []struct {
			name        string
			ctxTimeouts bool // else the hook panics in the late round trip
		}{
			{"ctxTimeouts", true},
			{"hookPanicsLate", false},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				c := b.roomyHookClient(t, tc.ctxTimeouts)
				// Outside every hook (see waitAskedAgain); what it
				// counts is set before the busy waiter asks.
				again := &againCounter{}
				c.AddHook(again)
				ph := &panicAfterHook{}
				if !tc.ctxTimeouts {
					c.AddHook(ph) // outside the gate: it sees the late end
				}
				h := newGateHook(tc.ctxTimeouts)
				c.AddHook(h)
				cfg := b.config(c, "late9keyed-"+tc.name, 2, time.Minute)
				cfg.Poll = time.Hour
				cfg.Timeout = roomyTimeout
				k, err := NewKeyed(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ocfg := b.config(b.roomyClient(t), cfg.Name, 2, time.Minute)
				ocfg.Timeout = roomyTimeout
				other, err := NewKeyed(ocfg) // another process's
				if err != nil {
					t.Fatal(err)
				}
				// Redis knows the keyed scripts: no NOSCRIPT round trip.
				w, err := k.Acquire(ctx, "warm")
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Release(ctx); err != nil {
					t.Fatal(err)
				}

				// A waiter of another key keeps k's channel subscribed:
				// no subscription of the key's new waiter, whose
				// confirmation would wake it, comes later.
				busy := []*Permit{}
				for range 2 {
					p, err := other.Acquire(ctx, "busy")
					if err != nil {
						t.Fatal(err)
					}
					busy = append(busy, p)
				}
				// The busy key's Semaphore of other has the busy
				// waiter's line and scripts.
				bs := other.newSemaphore(other.name, "busy")
				again.sha, again.key = bs.acquireCall.head[1].(string), bs.keys[1]
				bctx, bcancel := context.WithCancel(ctx)
				busyDone := make(chan error, 1)
				go func() {
					_, err := k.Acquire(bctx, "busy")
					busyDone <- err
				}()
				stopBusy := sync.OnceFunc(func() {
					bcancel()
					if err := <-busyDone; err != nil && !errors.Is(err, context.Canceled) {
						t.Error(err)
					}
				})
				defer stopBusy()
				waitAskedAgain(t, again)

				p1, err := k.Acquire(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				p2, err := other.Acquire(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				ph.armed.Store(true) // the release's round trip, held next
				open := h.arm()
				defer open()
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				released := make(chan error, 1)
				go func() { released <- p1.Release(rctx) }()
				select {
				case <-h.held: // the Release's script, held by the gate
				case err := <-released:
					t.Fatalf("Release = %v before its script was held", err)
				case <-time.After(time.Minute):
					t.Fatal("the Release's script was not held within a minute")
				}
				cancel()
				if err := <-released; !errors.Is(err, context.Canceled) {
					t.Fatalf("Release = %v; want its ctx's end", err)
				}
				if n := k.Len(); n != 1 {
					t.Fatalf("Keyed.Len() = %d after the Release; want 1 (the busy key): the key forgotten", n)
				}
				// The round trip held gives up its place: the waiter's
				// attempt goes alone, not queued behind it with only
				// what is left of its Timeout once the place is free.
				awaitPipeFree(t, &k.pipe)
				got := make(chan error, 1)
				var q *Permit
				go func() {
					// At once once told (with ctxTimeouts, within a
					// roundTrip); a minute (a lease's end) if not.
					wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
					var err error
					q, err = k.Acquire(wctx, "k")
					got <- err
				}()
				// The waiter's attempt reaches Redis, and joins the line,
				// before the script lands.
				var s2 *Semaphore
				for s2 == nil {
					k.mu.Lock()
					if e := k.keys["k"]; e != nil {
						s2 = e.s
					}
					k.mu.Unlock()
					time.Sleep(time.Millisecond)
				}
				line := other.newSemaphore(other.name, "k") // for counts, on other's client
				for _, queued := counts(t, line); queued != 1; _, queued = counts(t, line) {
					select {
					case err := <-got:
						t.Skipf("the waiter's Acquire = %v before the release ran: the case was not reached", err)
					default:
					}
					time.Sleep(time.Millisecond)
				}
				open()
				if err := <-got; err != nil {
					t.Fatalf("the waiter's Acquire = %v after the late release script handed it a permit; want it woken to ask again", err)
				}
				if s2 == p1.s {
					t.Fatal("the waiter waited on the released Permit's Semaphore: the case was not reached")
				}
				stopBusy() // before busy's permits go: it would be handed one
				for _, p := range append([]*Permit{q, p2}, busy...) {
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
				awaitKeyedIdle(t, k, "after the test")
			})
		}
	}
}

// awaitPipeFree waits until no round trip of p is under way and no script
// queued, and fails t if that has not come within a minute: a round trip
// held by a gate gives up its place at the pipe's hold at the latest.
func awaitPipeFree(t testing.TB, p *pipe) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		u, q := p.underway, len(p.queue)
		p.mu.Unlock()
		if u == 0 && q == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d round trips under way, %d scripts queued, a minute on", u, q)
		}
	}
}
