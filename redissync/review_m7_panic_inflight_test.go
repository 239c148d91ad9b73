package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// panicOnFailure is a client hook (the user's code) that panics, once
// armed, when a command fails without an answer from Redis: a bug of a
// tracing hook on its error path, say.
type panicOnFailure struct{ armed atomic.Bool }

func (h *panicOnFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *panicOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		var answered redis.Error
		if err != nil && !errors.As(err, &answered) && h.armed.CompareAndSwap(true, false) {
			panic("hook: " + err.Error())
		}
		return err
	}
}

func (h *panicOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Regression: with a client that ends its round trips at the ctx's deadline
// (ContextTimeoutEnabled), an attempt the client gave up on unanswered may
// still reach Redis, within the client's ReadTimeout (roundTrip): evalOwn
// and answer take back what it leaves only after that. But when a client
// hook panics on that failure, evalThen's takeBackPanicked, and Acquire's
// takeBackOnPanic after it, take back at once: both releases run before
// the attempt lands, and the permit it is granted then is held by nobody
// for a whole Lease (a lock: every process shut out). Right: after a panic
// in a round trip of such a client, the attempt is taken back once more
// when its bytes can no longer be on their way.
func TestReviewM7_HookPanicOnUnansweredAttemptTakenBackLate(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var slow atomic.Bool
			c := inFlightClient(t, b.addr, &slow, lockAcquire, lockTake)
			h := &panicOnFailure{}
			c.AddHook(h)
			cfg := b.config(c, "m7panicinflight", 1, time.Minute)
			cfg.Timeout = time.Second
			s := mustNew(t, cfg)
			ctx := context.Background()
			warm(t, s)

			slow.Store(true)
			h.armed.Store(true)
			actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			func() {
				defer func() {
					if r := recover(); r == nil {
						t.Error("Acquire returned; want the hook's panic")
					}
				}()
				p, err := s.Acquire(actx)
				if p != nil {
					_ = p.Release(ctx)
				}
				t.Logf("Acquire = %v", err)
			}()
			cancel()
			slow.Store(false)
			h.armed.Store(false)
			// The attempt lands 300 ms after it was sent.
			time.Sleep(400 * time.Millisecond)
			awaitEmpty(t, s, s.roundTrip+20*time.Second, "after an Acquire whose hook panicked on its unanswered attempt (not taken back)")
		})
	}
}
