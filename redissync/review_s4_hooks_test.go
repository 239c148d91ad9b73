package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errHookPanic is what panickingHook panics with.
var errHookPanic = errors.New("a client hook panics")

// panickingHook is a client hook of the user's that, once armed, panics
// once, after the command or pipeline it wraps has run on Redis; and that can
// hold the next command at a gate, so that the scripts sent meanwhile
// queue in the pipe and go in a pipeline.
type panickingHook struct {
	cmdPanics, pipePanics atomic.Bool
	gate                  atomic.Pointer[chan struct{}] // the next command waits for it to close
	atGate                chan struct{}                 // told when a command waits at the gate
}

func (h *panickingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *panickingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g := h.gate.Swap(nil); g != nil {
			h.atGate <- struct{}{}
			<-*g
		}
		err := next(ctx, cmd)
		if h.cmdPanics.CompareAndSwap(true, false) {
			panic(errHookPanic)
		}
		return err
	}
}

func (h *panickingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if h.pipePanics.CompareAndSwap(true, false) {
			panic(errHookPanic)
		}
		return err
	}
}

func hookedClient(t *testing.T, b backend, ctxTimeouts bool) (*redis.Client, *panickingHook) {
	c := b.strictClient(t, ctxTimeouts)
	h := &panickingHook{atGate: make(chan struct{}, 1)}
	c.AddHook(h)
	return c, h
}

// acquireRecovering runs acquire and returns what it panicked with.
func acquireRecovering(acquire func() (*Permit, error)) (p *Permit, panicked any, err error) {
	defer func() { panicked = recover() }()
	p, err = acquire()
	return p, nil, err
}

// Regression: a client hook (the user's code) that panics after the
// acquire script ran, in a call's own round trip, reaches the caller of
// Acquire, as it should, but the permit the script granted stays in Redis
// for the whole Lease: nobody holds it, and every process waits for it
// (here a TryAcquire finds the lock taken). The rule is that user code that
// panics reaches its caller with nothing kept: the attempt's permit (or
// place in line) must be given back, as for an attempt whose caller gave up.
func TestReviewS4_HookPanicKeepsPermitOwnRoundTrip(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c, h := hookedClient(t, b, true)
			s, err := NewLock(b.config(c, "hookpanic", 1, 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			warm(t, s) // else the hook panics at the NOSCRIPT, before the script runs
			h.cmdPanics.Store(true)
			p, r, err := acquireRecovering(func() (*Permit, error) { return s.Acquire(ctx) })
			h.cmdPanics.Store(false)
			if r != errHookPanic {
				t.Fatalf("Acquire = %v, %v, panicking with %v; want the hook's panic", p, err, r)
			}
			p, err = s.TryAcquire(ctx)
			if err != nil {
				t.Fatalf("TryAcquire after an Acquire that the hook's panic ended = %v; want the permit, which nobody holds", err)
			}
			_ = p.Release(ctx)
		})
	}
}

// Regression: as TestReviewS4_HookPanicKeepsPermitOwnRoundTrip, for a
// script that went in a pipeline (a Keyed's scripts, sent while another
// key's round trip was under way): pipe.run recovers the hook's panic and
// raises it again in each waiting caller, but the permit each one's script
// was granted stays in Redis for the Lease.
func TestReviewS4_HookPanicKeepsPermitPipeline(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c, h := hookedClient(t, b, true)
			k, err := NewKeyedLock(b.config(c, "hookpipe", 1, 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			warm(t, k.newSemaphore("warm", "")) // a pipeline of NOSCRIPTs would be sent again

			gate := make(chan struct{})
			h.gate.Store(&gate)
			type result struct {
				p   *Permit
				err error
				r   any
			}
			resA, resB := make(chan result, 1), make(chan result, 1)
			go func() {
				p, r, err := acquireRecovering(func() (*Permit, error) { return k.Acquire(ctx, "a") })
				resA <- result{p, err, r}
			}()
			<-h.atGate // a's round trip is under way, held
			go func() {
				p, r, err := acquireRecovering(func() (*Permit, error) { return k.Acquire(ctx, "b") })
				resB <- result{p, err, r}
			}()
			for queued := 0; queued == 0; time.Sleep(time.Millisecond) {
				k.pipe.mu.Lock()
				queued = len(k.pipe.queue)
				k.pipe.mu.Unlock()
			}
			h.pipePanics.Store(true)
			close(gate)
			a, rb := <-resA, <-resB
			h.pipePanics.Store(false)
			if a.err != nil || a.r != nil {
				t.Fatalf("Acquire(a) = %v, panicking with %v", a.err, a.r)
			}
			defer a.p.Release(ctx)
			if rb.r != errHookPanic {
				t.Fatalf("Acquire(b) = %v, %v, panicking with %v; want the hook's panic", rb.p, rb.err, rb.r)
			}
			p, err := k.TryAcquire(ctx, "b")
			if err != nil {
				t.Fatalf("TryAcquire(b) after an Acquire that the hook's panic ended = %v; want the permit, which nobody holds", err)
			}
			_ = p.Release(ctx)
		})
	}
}

// warm has Redis learn s's scripts, with an Acquire and a Release.
func warm(t *testing.T, s *Semaphore) {
	t.Helper()
	p, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
