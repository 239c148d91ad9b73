package redissync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// flakySubscribeConn is a connection whose writes of a SUBSCRIBE fail, and
// break it, at random while *odds (in 1000) is above 0.
type flakySubscribeConn struct {
	net.Conn
	odds   *atomic.Int64
	writes *atomic.Int64 // SUBSCRIBEs written, failed or not
}

func (c *flakySubscribeConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("\r\nsubscribe\r\n")) {
		c.writes.Add(1)
		if rand.Int64N(1000) < c.odds.Load() {
			_ = c.Conn.Close()
			return 0, errors.New("test: connection reset by peer")
		}
	}
	return c.Conn.Write(b)
}

// TestSubscribeRetryHammer: waiters of many Semaphores of one client come
// and go (leaving, coming back within the retry's first pause, giving up
// at random) while the subscription's SUBSCRIBEs fail at random, so that
// retries are due for channels being left, swept and joined again. Once
// the writes stop failing, a waiter of each Semaphore is woken by its
// release (its channel subscribed, with a Poll of an hour); once every
// waiter left, the hub ends, and sends no SUBSCRIBE after.
func TestSubscribeRetryHammer(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	var odds, writes atomic.Int64
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: 5 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &flakySubscribeConn{Conn: conn, odds: &odds, writes: &writes}, nil
		}})
	t.Cleanup(func() { _ = c.Close() })
	admin := b.roomyClient(t)
	const names = 6
	var waiters []*Semaphore
	var held []*Permit
	for i := range names {
		cfg := Config{Name: fmt.Sprintf("rh%d", i), N: 1, Lease: time.Minute, Timeout: 5 * time.Second, Poll: time.Hour}
		cfg.Client = admin
		h := mustNew(t, cfg)
		cfg.Client = c
		waiters = append(waiters, mustNew(t, cfg))
		p, err := h.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}

	// Waiters come and go while SUBSCRIBEs fail, a third of them.
	odds.Store(333)
	var wg sync.WaitGroup
	for g := range 2 * names {
		wg.Go(func() {
			w := waiters[g%names]
			for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); {
				d := time.Duration(rand.Int64N(int64(30 * time.Millisecond)))
				actx, cancel := context.WithTimeout(ctx, d)
				if p, err := w.Acquire(actx); err == nil {
					cancel()
					t.Errorf("%s: granted while held", w.channel)
					_ = p.Release(ctx)
					return
				}
				cancel()
				// Back within the retry's first pause, or not.
				time.Sleep(time.Duration(rand.Int64N(int64(15 * time.Millisecond))))
			}
		})
	}
	wg.Wait()
	odds.Store(0)

	// A waiter of each, woken by the release alone.
	var got []<-chan acquired
	for _, w := range waiters {
		got = append(got, goAcquire(w, 30*time.Second))
	}
	for _, w := range waiters {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, q := counts(t, w); q == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no waiter in line after 20 s", w.channel)
			}
		}
	}
	for i, w := range waiters {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			n, err := admin.PubSubNumSub(ctx, w.channel).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n[w.channel] == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: its channel not subscribed 20 s after the SUBSCRIBEs stopped failing", w.channel)
			}
		}
		if err := held[i].Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range got {
		a := <-g
		if a.err != nil {
			t.Errorf("%s: the waiter, its channel subscribed, not woken by the release: %v", waiters[i].channel, a.err)
			continue
		}
		if err := a.p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Every waiter gone: the hub ends, and nothing more is sent.
	key := hubKey(waiters[0])
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		hubsMu.Lock()
		h := hubs[key]
		hubsMu.Unlock()
		if h == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub not ended 20 s after its last waiter left")
		}
	}
	before := writes.Load()
	time.Sleep(200 * time.Millisecond)
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d SUBSCRIBEs written after the hub ended", n)
	}
	for _, w := range waiters {
		if held, queued := counts(t, w); held != 0 || queued != 0 {
			t.Errorf("%s: %d held, %d queued at the end", w.channel, held, queued)
		}
	}
}

// TestSubscribeRetryClientClosed: the client closed while a SUBSCRIBE's
// retry is due (its writes failing): the waiter ends with its ctx, the hub
// with its last channel, and no goroutine of the hub is left, nor a retry
// that sends.
func TestSubscribeRetryClientClosed(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	var arm atomic.Bool
	var only atomic.Value
	c := failingSubscribeClient(t, b, &arm, &only)
	admin := b.client(t)
	ignore := goleak.IgnoreCurrent()
	cfg := Config{Name: "rclosed", N: 1, Lease: time.Minute, Poll: 10 * time.Millisecond}
	cfg.Client = admin
	p, err := mustNew(t, cfg).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = c
	w := mustNew(t, cfg)
	only.Store(w.channel)
	got := goAcquire(w, 10*time.Second)
	key := hubKey(w)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		hubsMu.Lock()
		h := hubs[key]
		due := h != nil && len(h.resend) > 0
		hubsMu.Unlock()
		if due {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no SUBSCRIBE failed in 20 s")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.err == nil {
		t.Errorf("the waiter granted on a closed client")
		_ = a.p.Release(ctx)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		hubsMu.Lock()
		h := hubs[key]
		hubsMu.Unlock()
		if h == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub not ended 20 s after its last waiter left")
		}
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
}
