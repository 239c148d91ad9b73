package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errLateHookPanic is what a late armedHook panics with.
var errLateHookPanic = errors.New("a client hook panics after the reply")

// Regression: a client hook that panicked in Release after the release
// script ran lost the script's reply, which names the waiters it handed the
// permit to. A release that fails with an error wakes this Semaphore's
// waiters to ask again; one that panicked woke nobody, and the take-back's
// second run of the script finds nothing to give: the waiter the permit was
// handed to slept until its Poll (here an hour) while holding it, and its
// lease could lapse meanwhile. A panic in the release script's round trip
// must wake the waiters as an error does, before it goes on.
func TestReleaseLateHookPanicWakesTheWaiter(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.strictClient(t, true)
			// The counter wraps the armed hook: a command it counts has
			// been through the armed hook, which is armed only then.
			queued := &queueCounter{}
			c.AddHook(queued)
			h := &armedHook{late: true, value: errLateHookPanic}
			c.AddHook(h)
			cfg := b.config(c, "releaselatepanic", 1, time.Minute)
			cfg.Poll = time.Hour // a waiter is woken, not polled
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			queued.key = s.keys[1]
			ctx := context.Background()
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			var q *Permit
			go func() {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // at once when woken; a lease's end (a minute) if not
				defer cancel()
				var err error
				q, err = s.Acquire(wctx)
				got <- err
			}()
			// The waiter asks twice, then sleeps until the lease's end:
			// once to take its place in line, once more when its
			// subscription is confirmed. Armed before the second has
			// returned, the hook would panic in the waiter's goroutine: a
			// wait of 50 ms for the first did not do on a loaded machine.
			for deadline := time.Now().Add(30 * time.Second); queued.n.Load() < 2; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the waiter asked %d times in 30 s; want 2", queued.n.Load())
				}
			}
			h.armed.Store(true)
			var r any
			func() {
				defer func() { r = recover() }()
				_ = p.Release(ctx)
			}()
			if r != errLateHookPanic {
				t.Fatalf("Release panicked with %v; want the hook's panic", r)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter's Acquire = %v after a Release that handed it the permit; want the permit, at once", err)
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// queueCounter is a client hook that counts the commands and pipelined
// commands naming key (a Semaphore's line: its acquire and release scripts)
// that Redis answered without error (not a NOSCRIPT, which is sent again
// as an EVAL), once every hook it wraps has returned.
type queueCounter struct {
	key string // set before the first command that names it
	n   atomic.Int32
}

func (h *queueCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *queueCounter) count(cmd redis.Cmder, err error) {
	if err != nil || cmd.Err() != nil {
		return
	}
	for _, a := range cmd.Args() {
		if a == any(h.key) {
			h.n.Add(1)
			return
		}
	}
}

func (h *queueCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(cmd, err)
		return err
	}
}

func (h *queueCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd, cmd.Err())
		}
		return err
	}
}
