package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errDroppedPipePanic is what a dropPanicPipeHook panics with.
var errDroppedPipePanic = errors.New("a client hook panics after its pipeline was given up")

// dropPanicPipeHook holds the next command once gated (until the test opens
// the gate), and, once armed, gives up the next pipeline at its ctx's
// deadline, as a client that honours deadlines does, then panics (a hook of
// the user's, in its error path): the pipeline's bytes are kept, for the
// test to land when it likes.
type dropPanicPipeHook struct {
	gate  atomic.Pointer[chan struct{}]
	held  chan struct{} // told when a command is held at the gate
	armed atomic.Bool
	after atomic.Int32 // commands and pipelines answered since the drop

	lateBytes
	dropped chan struct{}
}

func (h *dropPanicPipeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *dropPanicPipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g := h.gate.Swap(nil); g != nil {
			h.held <- struct{}{}
			<-*g
		}
		err := next(ctx, cmd)
		h.after.Add(1)
		return err
	}
}

func (h *dropPanicPipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.armed.CompareAndSwap(true, false) {
			err := next(ctx, cmds)
			h.after.Add(1)
			return err
		}
		copies := make([]redis.Cmder, len(cmds))
		for i, c := range cmds {
			copies[i] = redis.NewCmd(context.Background(), c.Args()...)
		}
		h.keep(func() { _ = next(context.Background(), copies) })
		<-ctx.Done()
		h.after.Store(0)
		close(h.dropped)
		panic(errDroppedPipePanic)
	}
}

// A Release that gives up while its script is in a pipeline leaves the
// reply to a goroutine (giveUp), which wakes the waiters when it comes, and,
// if a client honouring deadlines dropped the pipeline unanswered, once more
// a roundTrip later (lateWake): its bytes may land after the waiters asked
// again, and hand one of them a permit that only the lost reply named. But a
// client hook that panics after the client dropped the pipeline hides that
// error: the goroutine saw only the panic, woke the waiters once, at once,
// and never again. The waiter, whose new attempt reached Redis before the
// bytes, slept until its Poll, or the end of a lease (here a minute), while
// the permit was held for it. A panic with such a client must count as a
// round trip that may yet land, as takeBackPanicked counts it for an
// attempt.
func TestReviewLate9PipelinedLateReleaseHookPanicWakesAgain(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := b.strictClient(t, true)
			cfg := b.config(c, "late9pipepanic", 2, time.Minute)
			cfg.Poll = time.Hour
			cfg.Timeout = 2 * time.Second
			s := mustNew(t, cfg)
			again := countAgain(c, s) // around h: see waitAskedAgain
			h := &dropPanicPipeHook{held: make(chan struct{}, 1), dropped: make(chan struct{})}
			c.AddHook(h)
			warm(t, s)
			held := acquireN(t, s, 2)
			p1, p2 := held[0], held[1]
			// At once once told; a minute (a lease's end) if not.
			got := goAcquire(s, 20*time.Second)
			waitQueued(t, s, 1)
			waitAskedAgain(t, again)

			// A TryAcquire's round trip is held; the Release queues
			// behind it, and goes in the pipeline that is dropped.
			g := make(chan struct{})
			h.gate.Store(&g)
			tried := make(chan error, 1)
			go func() {
				_, err := s.TryAcquire(ctx)
				tried <- err
			}()
			<-h.held
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			released := make(chan error, 1)
			go func() { released <- p1.Release(rctx) }()
			for {
				s.pipe.mu.Lock()
				n := len(s.pipe.queue)
				s.pipe.mu.Unlock()
				if n == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			h.armed.Store(true)
			close(g)
			if err := <-tried; !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire = %v; want ErrWouldWait", err)
			}
			if err := <-released; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Release = %v; want its ctx's end", err)
			}
			<-h.dropped
			// Woken, the waiter asks again (twice: at the Release's end
			// and at the pipeline's), and is answered before the bytes
			// land.
			for last := int32(-1); ; {
				time.Sleep(300 * time.Millisecond)
				n := h.after.Load()
				if n > 0 && n == last {
					break
				}
				last = n
				select {
				case a := <-got:
					t.Fatalf("the waiter's Acquire = %v before the release landed", a.err)
				default:
				}
			}
			h.land()
			a := <-got
			if a.err != nil {
				t.Fatalf("the waiter's Acquire = %v after the late release script handed it a permit; want it woken to ask again", a.err)
			}
			if err := a.p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p2.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
