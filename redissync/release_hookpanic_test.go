package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errEarlyHookPanic is what an armedHook that is not late panics with.
var errEarlyHookPanic = errors.New("a client hook panics before sending")

// armedHook is a client hook of the user's that, once armed, panics once
// with value: before the command or pipeline it wraps is sent, so that the
// script never reaches Redis; or, if late, after one that ran without error
// (not a NOSCRIPT, say), so that the script ran in Redis and its reply is
// lost with the panic.
type armedHook struct {
	armed atomic.Bool
	late  bool
	value error
}

func (h *armedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// fire panics with h's value if h is armed and err, the wrapped call's, fits
// its kind (nil for one not sent yet).
func (h *armedHook) fire(sent bool, err error) {
	if sent == h.late && err == nil && h.armed.CompareAndSwap(true, false) {
		panic(h.value)
	}
}

func (h *armedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.fire(false, nil)
		err := next(ctx, cmd)
		h.fire(true, err)
		return err
	}
}

func (h *armedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.fire(false, nil)
		err := next(ctx, cmds)
		h.fire(true, err)
		return err
	}
}

// Regression: a client hook (the user's code) that panicked in Release
// before the release script was sent reached the caller, as it should, but
// the permit stayed in Redis for its whole Lease, held by nobody, and not
// renewed: the next in line waited for the Lease to end. The Keyed kept the
// key, too, for good. User code that panics must leave nothing held: the
// permit is given back, as when the caller of an Acquire gives up, and the
// key is dropped.
func TestReleaseHookPanicGivesThePermitBack(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.strictClient(t, true)
			h := &armedHook{value: errEarlyHookPanic}
			c.AddHook(h)
			k, err := NewKeyedLock(b.config(c, "releasehookpanic", 1, time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p, err := k.Acquire(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			h.armed.Store(true)
			var r any
			func() {
				defer func() { r = recover() }()
				_ = p.Release(ctx)
			}()
			if r != errEarlyHookPanic {
				t.Fatalf("Release panicked with %v; want the hook's panic", r)
			}
			if n := k.Len(); n != 0 {
				t.Errorf("Keyed.Len() = %d after a Release that panicked; want 0: the key is kept for good", n)
			}
			q, err := k.TryAcquire(ctx, "a")
			if err != nil {
				t.Fatalf("TryAcquire after a Release that the hook's panic ended = %v; want the permit, which nobody holds", err)
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
