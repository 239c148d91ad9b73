package redissync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// hangHook stands for a connection that stops answering (a peer gone
// without a word, with no read deadline to end the wait): once armed, the
// next command waits until the test ends, whatever its ctx, and the others
// go to Redis as usual.
type hangHook struct {
	armed  atomic.Bool
	hung   chan struct{} // told when a command hangs
	unhang chan struct{} // closed as the test ends
}

func (h *hangHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hangHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.CompareAndSwap(true, false) {
			h.hung <- struct{}{}
			<-h.unhang
		}
		return next(ctx, cmd)
	}
}

func (h *hangHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Regression: a Keyed sends one round trip at a time for all its keys, and
// a round trip keeps its place until it ends (pipe). A client without
// ContextTimeoutEnabled and with ReadTimeout -1 (go-redis's "no timeout",
// which readTimeout takes for 3 seconds) never ends a round trip whose
// connection stopped answering: its caller returns at the Timeout, as the
// doc says, but every later call of every key of the Keyed queues behind
// that round trip and fails with ErrUnavailable, for good, while Redis
// answers on every other connection. Before the pipe, only the call on
// the hung connection failed. Right: a round trip that nobody waits for
// any more holds up the others for a bounded time at most (roundTrip, say),
// so that a key free in Redis can be taken again.
func TestReviewS4_HungRoundTripDisablesKeyed(t *testing.T) {
	b := backends(t)[0]
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second, ReadTimeout: -1,
		WriteTimeout: time.Second, MaxRetries: -1})
	h := &hangHook{hung: make(chan struct{}, 1), unhang: make(chan struct{})}
	c.AddHook(h)
	t.Cleanup(func() { _ = c.Close() })
	t.Cleanup(func() { close(h.unhang) })
	cfg := b.config(c, "hung", 1, 3*time.Second)
	cfg.Timeout = 100 * time.Millisecond
	k, err := NewKeyedLock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Warmed (a connection made, the scripts loaded) through a Keyed of a
	// roomy Lease and Timeout on the same client: 100 ms, needed for the
	// test's speed below, failed the warming on a loaded machine.
	roomy := cfg
	roomy.Lease, roomy.Timeout = roomyLease, roomyTimeout
	kw, err := NewKeyedLock(roomy)
	if err != nil {
		t.Fatal(err)
	}
	warm(t, kw.newSemaphore("warm", ""))

	h.armed.Store(true)
	if _, err := k.Acquire(ctx, "a"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire(a) on a hung connection = %v; want ErrUnavailable at the Timeout", err)
	}
	<-h.hung
	// Redis answers every other connection. Within roundTrip (3 seconds:
	// readTimeout's reading of -1) and a few Timeouts more, another key is
	// taken as usual.
	// (20 s: a loaded machine misses the Timeout of 100 ms now and then.)
	deadline := time.Now().Add(k.newSemaphore("x", "").roundTrip + 20*time.Second)
	for {
		p, err := k.TryAcquire(ctx, "b")
		if err == nil {
			_ = p.Release(ctx)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("TryAcquire(b), seconds after a round trip of key a hung = %v; want the permit: Redis answers", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
