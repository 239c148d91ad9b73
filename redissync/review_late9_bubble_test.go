package redissync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// dropHook, once armed, gives up the next command at its ctx's deadline, as
// a client that honours deadlines does, without a word to the network: the
// command's bytes are kept, for the test to land (land) when it likes. It
// starts no goroutine, so that a command given up in a synctest bubble
// leaves nothing running in it.
type dropHook struct {
	armed atomic.Bool
	after atomic.Int32 // commands answered since a command was dropped
	lateBytes
}

// lateBytes keeps a command a hook dropped, for the test to land later.
type lateBytes struct {
	mu      sync.Mutex
	pending func() // lands the dropped command; guarded by mu
}

// keep keeps f, which lands the command dropped last.
func (l *lateBytes) keep(f func()) {
	l.mu.Lock()
	l.pending = f
	l.mu.Unlock()
}

func (h *dropHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *dropHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.armed.CompareAndSwap(true, false) {
			err := next(ctx, cmd)
			h.after.Add(1)
			return err
		}
		late := redis.NewCmd(context.Background(), cmd.Args()...)
		h.keep(func() { _ = next(context.Background(), late) })
		h.after.Store(0)
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

func (h *dropHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// land sends the command dropped last, which runs in Redis.
func (l *lateBytes) land() {
	l.mu.Lock()
	f := l.pending
	l.pending = nil
	l.mu.Unlock()
	if f != nil {
		f()
	}
}

// The package's doc says that Release works in a synctest bubble on a
// Semaphore made outside it. A Release whose round trip a client honouring
// deadlines dropped unanswered wakes the waiters at once, and once more a
// roundTrip later (lateWake), for the bytes that may land meanwhile and
// hand a permit to a waiter that asked again before them. That second
// wake-up is a time.AfterFunc made by the Releaser: made in a bubble, it is
// the bubble's timer, and a bubble's time stops when its main goroutine
// returns, so it never fires. A waiter outside the bubble, whose new
// attempt reached Redis before the script, then slept until its Poll, or
// the end of a lease (here a minute), while the permit was held for it. The
// late wake-up must reach it wherever the Release was called from (or the
// doc must say that this use is refused).
func TestReviewLate9LateWakeOfAReleaseInABubble(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := b.strictClient(t, true)
			cfg := b.config(c, "late9bubble", 2, time.Minute)
			cfg.Poll = time.Hour
			cfg.Timeout = 2 * time.Second
			s := mustNew(t, cfg)
			again := countAgain(c, s) // around h: see waitAskedAgain
			h := &dropHook{}
			c.AddHook(h)
			warm(t, s)
			held := acquireN(t, s, 2)
			p1, p2 := held[0], held[1]
			// At once once told; a minute (a lease's end) if not.
			got := goAcquire(s, 20*time.Second)
			waitQueued(t, s, 1)
			waitAskedAgain(t, again)

			h.armed.Store(true)
			synctest.Test(t, func(t *testing.T) {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				if err := p1.Release(rctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Release = %v; want its ctx's end", err)
				}
			})
			// Woken by the failed Release, the waiter asks again, and its
			// attempt is answered before the script lands.
			landThenServed(t, &h.after, got, h.land, "release script")
			if err := p2.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
