package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// latePipeHook holds the next command at a gate, as panickingHook does, and
// once armed stands for a pipeline whose client gave up at a read timeout
// while its bytes were on their way: the pipeline fails at once, and its
// commands reach Redis (run for real) a moment later.
type latePipeHook struct {
	gate   atomic.Pointer[chan struct{}]
	atGate chan struct{}
	late   atomic.Bool
	ran    chan struct{} // closed once the late pipeline has run
}

func (h *latePipeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *latePipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g := h.gate.Swap(nil); g != nil {
			h.atGate <- struct{}{}
			<-*g
		}
		return next(ctx, cmd)
	}
}

func (h *latePipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.late.CompareAndSwap(true, false) {
			return next(ctx, cmds)
		}
		// Copies of the commands, so that the late run writes none of the
		// replies the caller reads.
		copies := make([]redis.Cmder, len(cmds))
		for i, c := range cmds {
			copies[i] = redis.NewCmd(context.Background(), c.Args()...)
		}
		go func() {
			defer close(h.ran)
			time.Sleep(100 * time.Millisecond)
			_ = next(context.Background(), copies)
		}()
		err := errors.New("latePipeHook: i/o timeout")
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
}

// Regression: with a client that honours deadlines, a script whose round
// trip failed without an answer from Redis (a read timeout) may still reach
// Redis: evalThen takes back what an attempt of its own round trip may so
// leave after the client's ReadTimeout (roundTrip), as the Timeout's doc
// says. A script that went in a pipeline, whose caller was still waiting
// when the pipeline failed, has nothing taken back: pipe's wait does so only
// for a caller whose ctx ended first. Here the attempt's Acquire returns
// ErrUnavailable and gives back its place at once; the script lands a moment
// later and takes the lock for an id that nobody has, and every process
// waits for the whole Lease. Right: an attempt sent in a pipeline that
// failed unanswered is taken back after roundTrip, as one sent alone.
func TestReviewS4_LatePipelinedAttemptNotTakenBack(t *testing.T) {
	b := ownRedis(t)
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second, ReadTimeout: 100 * time.Millisecond,
		WriteTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	h := &latePipeHook{atGate: make(chan struct{}, 1), ran: make(chan struct{})}
	c.AddHook(h)
	cfg := b.config(c, "latepipe", 1, 30*time.Second)
	cfg.Timeout = 150 * time.Millisecond
	k, err := NewKeyedLock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	warm(t, k.newSemaphore("warm", ""))

	gate := make(chan struct{})
	h.gate.Store(&gate)
	resA := make(chan error, 1)
	go func() {
		p, err := k.Acquire(ctx, "a")
		if err == nil {
			err = p.Release(ctx)
		}
		resA <- err
	}()
	<-h.atGate // a's round trip is under way, held
	resB := make(chan error, 1)
	go func() {
		p, err := k.Acquire(ctx, "b")
		if err == nil {
			_ = p.Release(ctx)
		}
		resB <- err
	}()
	for queued := 0; queued == 0; time.Sleep(time.Millisecond) {
		k.pipe.mu.Lock()
		queued = len(k.pipe.queue)
		k.pipe.mu.Unlock()
	}
	h.late.Store(true)
	close(gate)
	if err := <-resA; err != nil {
		t.Fatalf("Acquire(a), Release: %v", err)
	}
	if err := <-resB; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire(b) = %v; want ErrUnavailable, its pipeline having failed", err)
	}
	<-h.ran // the attempt has landed

	// Another process, on a client of its own.
	other := b.client(t)
	ko, err := NewKeyedLock(b.config(other, "latepipe", 1, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// roundTrip is 150ms; a take-back that comes at all comes long before
	// ten seconds, and the Lease is 30.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := ko.TryAcquire(ctx, "b")
		if err == nil {
			_ = p.Release(ctx)
			return
		}
		if !errors.Is(err, ErrWouldWait) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("key b stays taken by the attempt that landed after its pipeline failed: nothing took it back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
