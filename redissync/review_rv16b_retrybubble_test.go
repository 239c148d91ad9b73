package redissync

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// TestSubscribeRetryAcrossBubble: a client's subscription (its hub) made
// outside a testing/synctest bubble, and a Semaphore of that client waiting
// in a bubble while its SUBSCRIBE fails: the retry timer is the bubble's,
// and it never fires once the bubble is over (time stops with the bubble's
// main goroutine). After the bubble, on the same subscription:
//
//   - a SUBSCRIBE of another Semaphore that fails is sent again (it was
//     not: the hub waited for the bubble's timer);
//   - the hub ends when its last channel is swept outside the bubble, with
//     no goroutine left (it stopped the bubble's timer from outside the
//     bubble, which the runtime refuses with a fatal error, ending the
//     program).
//
// It runs in a child process, to see the program end.
func TestSubscribeRetryAcrossBubble(t *testing.T) {
	if os.Getenv("REDISSYNC_TEST_RV16B_RETRY_BUBBLE") == "1" {
		retryAcrossBubble(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSubscribeRetryAcrossBubble$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "REDISSYNC_TEST_RV16B_RETRY_BUBBLE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(string(out), "\n")
		t.Fatalf("child: %v\n%s", err, strings.Join(lines[:min(len(lines), 30)], "\n"))
	}
}

func retryAcrossBubble(t *testing.T) {
	// miniredis alone: a redis-server started here would outlive a child
	// that crashes.
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	b := backend{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}
	ctx := context.Background()
	var arm atomic.Bool
	var only atomic.Value
	only.Store("")
	c := failingSubscribeClient(t, b, &arm, &only)
	admin := b.client(t)
	cfg := func(name string, on bool) Config {
		cl := admin
		if on {
			cl = c
		}
		cfg := b.config(cl, name, 1, time.Minute)
		cfg.Poll = time.Hour
		return cfg
	}
	ha, wa := mustNew(t, cfg("rb-a", false)), mustNew(t, cfg("rb-a", true))
	hb, wb := mustNew(t, cfg("rb-b", false)), mustNew(t, cfg("rb-b", true))
	hc, wc := mustNew(t, cfg("rb-c", false)), mustNew(t, cfg("rb-c", true))
	var held []*Permit
	for _, s := range []*Semaphore{ha, hb, hc} {
		p, err := s.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	// a's waiter makes the hub, outside the bubble, and keeps it.
	gotA := goAcquire(wa, time.Minute)
	waitSubscribed(t, wa)

	// b waits in a bubble, its SUBSCRIBE failing throughout.
	only.Store(wb.channel)
	synctest.Test(t, func(t *testing.T) {
		bctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if q, err := wb.Acquire(bctx); q != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("b's waiter in the bubble: %v, %v; want context.DeadlineExceeded", q != nil, err)
		}
	})
	only.Store("")
	// go-redis connects again (listen), subscribing what it remembers, b's
	// channel too: the subscription is whole again.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, err := admin.PubSubNumSub(ctx, wa.channel, wb.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[wa.channel] == 1 && n[wb.channel] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscription not made again 10 s after the bubble")
		}
	}

	// c's SUBSCRIBE fails once, outside the bubble.
	arm.Store(true)
	gotC := goAcquire(wc, 20*time.Second)
	subscribed := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n, err := admin.PubSubNumSub(ctx, wc.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !arm.Load() && n[wc.channel] == 1 {
			subscribed = true
			break
		}
	}
	if !subscribed {
		t.Errorf("c's channel not subscribed 10 s after its SUBSCRIBE failed (a retry of the ended bubble was due)")
	}
	for _, p := range held {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, got := range []<-chan acquired{gotA, gotC} {
		a := <-got
		if a.err != nil {
			t.Errorf("waiter: %v", a.err)
			continue
		}
		if err := a.p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The hub's sweep, as the idle timer runs it outside the bubble. (b's
	// leaving made that timer in the bubble, where it never fires once the
	// bubble is over: see the report of the review.)
	hubsMu.Lock()
	h := hubs[hubKey(wa)]
	hubsMu.Unlock()
	if h == nil {
		t.Fatal("the hub ended already")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		hubsMu.Lock()
		left := true
		for _, ch := range h.chans {
			left = left && ch.refs == 0
		}
		hubsMu.Unlock()
		if left {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a waiter's channel still wanted after 10 s")
		}
	}
	h.sweep()
	hubsMu.Lock()
	stopped := h.stopped
	hubsMu.Unlock()
	if !stopped {
		t.Errorf("the hub not ended by a sweep with no channel wanted")
	}
}

// TestBackoff: the pause between the retries of a hub (a SUBSCRIBE sent
// again, a reconnection) starts at 10 ms, doubles, and stops at the Poll,
// never 0 and never wrapping, whatever the Poll (Config allows 10 ms to an
// hour; the function is checked past that too).
func TestBackoff(t *testing.T) {
	for _, poll := range []time.Duration{minPoll, time.Second, maxPoll, math.MaxInt64 / 3, math.MaxInt64 - 1, math.MaxInt64} {
		pause := time.Duration(0)
		for i := range 200 {
			next := backoff(pause, poll)
			switch {
			case next <= 0 || next > poll:
				t.Fatalf("Poll %v: pause %d after %v = %v; want in (0, Poll]", poll, i, pause, next)
			case next < pause:
				t.Fatalf("Poll %v: pause %d after %v = %v; want no shorter", poll, i, pause, next)
			case i == 0 && next != min(10*time.Millisecond, poll):
				t.Fatalf("Poll %v: first pause %v; want 10 ms", poll, next)
			case next < poll && next != 2*pause && i > 0:
				t.Fatalf("Poll %v: pause %v after %v; want twice, up to the Poll", poll, next, pause)
			}
			pause = next
		}
		if pause != poll {
			t.Errorf("Poll %v: pause %v after 200 failures; want the Poll", poll, pause)
		}
	}
}
