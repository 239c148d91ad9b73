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
	"github.com/redis/go-redis/v9"
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
//     program; and the sweep itself waited for a timer of the bubble: see
//     TestHubEndsAfterBubbleLeft).
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
	held := holdEach(t, ctx, ha, hb, hc)
	// a's waiter makes the hub, outside the bubble, and keeps it.
	gotA := goAcquire(wa, time.Minute)
	waitSubscribed(t, wa)

	// b waits in a bubble, its SUBSCRIBE failing throughout.
	only.Store(wb.channel)
	waitOutInBubble(t, ctx, wb)
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
	// The hub ends with its last waiter, outside the bubble.
	key := hubKey(wa)
	hubsMu.Lock()
	h := hubs[key]
	hubsMu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		hubsMu.Lock()
		ended := hubs[key] == nil
		hubsMu.Unlock()
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the hub not ended 10 s after its last waiter left")
			if h != nil {
				h.sweep() // as a timer outside the bubble would
			}
			break
		}
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

// TestHubEndsAfterBubbleLeft: a Semaphore of a client whose subscription
// was made outside a testing/synctest bubble waits in one and leaves there:
// the sweep of its channel is then due on a timer of the bubble, which
// never fires once the bubble is over. The client's last waiter leaving
// outside must still end the hub (its goroutine and pub/sub connection),
// which waited for that timer for the life of the process.
//
// b's SUBSCRIBE fails throughout the bubble: a confirmation of it (or a
// message) would wake b's waiter from the hub's goroutine, outside the
// bubble, which the runtime refuses with a fatal error (see the package's
// doc on bubbles).
func TestHubEndsAfterBubbleLeft(t *testing.T) {
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	b := backend{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}
	ctx := context.Background()
	var arm atomic.Bool
	var only atomic.Value
	only.Store("")
	c, admin := failingSubscribeClient(t, b, &arm, &only), b.client(t)
	cfg := func(name string, cl *redis.Client) Config {
		cfg := b.config(cl, name, 1, time.Minute)
		cfg.Poll = time.Hour
		return cfg
	}
	ha, wa := mustNew(t, cfg("hb-a", admin)), mustNew(t, cfg("hb-a", c))
	hb, wb := mustNew(t, cfg("hb-b", admin)), mustNew(t, cfg("hb-b", c))
	held := holdEach(t, ctx, ha, hb)
	gotA := goAcquire(wa, time.Minute)
	waitSubscribed(t, wa)
	only.Store(wb.channel)
	waitOutInBubble(t, ctx, wb)
	only.Store("")
	key := hubKey(wa)
	hubsMu.Lock()
	h := hubs[key]
	hubsMu.Unlock()
	for _, p := range held {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if a := <-gotA; a.err != nil {
		t.Fatal(a.err)
	} else if err := a.p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		hubsMu.Lock()
		ended := hubs[key] == nil
		hubsMu.Unlock()
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the hub not ended 10 s after its last waiter left (one left in a bubble before)")
			if h != nil {
				h.sweep() // as the bubble's timer would have
			}
			break
		}
	}
}

// TestWaitInBubbleOnOutsideSubscription pins what the package's doc says
// of a waiter in a testing/synctest bubble whose client's subscription was
// made outside it: the confirmation of its channel, sent to it from the
// subscription's goroutine, is refused by the runtime, and the program
// ends. It runs in a child process, to see the program end.
func TestWaitInBubbleOnOutsideSubscription(t *testing.T) {
	if os.Getenv("REDISSYNC_TEST_RV16B_WAIT_BUBBLE") == "1" {
		m := miniredis.RunT(t)
		m.ClockTTL(true)
		b := backend{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}
		ctx := context.Background()
		c, admin := b.client(t), b.client(t)
		cfg := b.config(admin, "wib", 1, time.Minute)
		cfg.Poll = time.Hour
		p, err := mustNew(t, cfg).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Release(ctx) }()
		o := b.config(c, "wib-out", 1, time.Minute)
		ho, err := mustNew(t, Config{Client: admin, Name: o.Name, N: 1, Lease: time.Minute, Prefix: o.Prefix}).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ho.Release(ctx) }()
		wo := mustNew(t, o)
		gotO := goAcquire(wo, 30*time.Second)
		waitSubscribed(t, wo)
		cfg.Client = c
		w := mustNew(t, cfg)
		// Made outside the bubble, so that waiting for it keeps the
		// bubble's clock still: the waiter's ctx does not end first.
		release := make(chan struct{})
		time.AfterFunc(10*time.Second, func() { close(release) })
		synctest.Test(t, func(t *testing.T) {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = w.Acquire(wctx)
			}()
			<-release
			cancel()
			<-done
		})
		_ = ho.Release(ctx)
		<-gotO
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWaitInBubbleOnOutsideSubscription$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REDISSYNC_TEST_RV16B_WAIT_BUBBLE=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "fatal error: send on synctest channel from outside bubble") {
		lines := strings.Split(string(out), "\n")
		t.Fatalf("child: %v; want the fatal error the doc speaks of\n%s", err, strings.Join(lines[:min(len(lines), 20)], "\n"))
	}
}

// holdEach takes a permit of each Semaphore, in turn.
func holdEach(t *testing.T, ctx context.Context, ss ...*Semaphore) []*Permit {
	t.Helper()
	held := make([]*Permit, 0, len(ss))
	for _, s := range ss {
		p, err := s.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	return held
}

// waitOutInBubble has a waiter of s wait, in a synctest bubble, for a second
// of the bubble's time, and fails t unless it ends with its ctx, unserved.
func waitOutInBubble(t *testing.T, ctx context.Context, s *Semaphore) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		bctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if q, err := s.Acquire(bctx); q != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the waiter in the bubble: %v, %v; want context.DeadlineExceeded", q != nil, err)
		}
	})
}
