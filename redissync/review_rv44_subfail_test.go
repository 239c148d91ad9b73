package redissync

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// failSubscribeConn is a connection whose write of a SUBSCRIBE fails, and
// breaks the connection, while *arm is set (once: it clears it), or,
// whatever arm says, while *only names a channel the SUBSCRIBE holds: as a
// write to a subscription's connection that Redis dropped (CLIENT KILL, a
// restart) fails once the peer's reset has come back.
type failSubscribeConn struct {
	net.Conn
	arm  *atomic.Bool
	only *atomic.Value // a string; "" for none
}

func (c *failSubscribeConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("\r\nsubscribe\r\n")) {
		ch, _ := c.only.Load().(string)
		if (ch != "" && bytes.Contains(b, []byte(ch))) || c.arm.CompareAndSwap(true, false) {
			_ = c.Conn.Close()
			return 0, errors.New("test: connection reset by peer")
		}
	}
	return c.Conn.Write(b)
}

// failingSubscribeClient returns a client of b whose subscription's
// SUBSCRIBE fails as failSubscribeConn says.
func failingSubscribeClient(t *testing.T, b backend, arm *atomic.Bool, only *atomic.Value) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &failSubscribeConn{Conn: conn, arm: arm, only: only}, nil
		}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSubscribeWriteFailsChannelResubscribed: the SUBSCRIBE of a
// Semaphore's first waiter fails on a broken connection. go-redis then
// reconnects at once, inside the Subscribe, and subscribes again the
// channels it had before: not the one whose SUBSCRIBE failed, which it
// records only afterwards. The hub must not take that channel for
// subscribed: else its waiters, with a Poll of an hour, hear of no
// hand-over until another reconnection, and wait out their ctx while the
// permit is held for them.
func TestSubscribeWriteFailsChannelResubscribed(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	for _, keyed := range []bool{false, true} {
		name := "Semaphore"
		if keyed {
			name = "Keyed"
		}
		t.Run(name, func(t *testing.T) {
			var arm atomic.Bool
			var only atomic.Value
			c := failingSubscribeClient(t, b, &arm, &only)
			cfg := Config{Client: b.client(t), Name: "subfail" + name, N: 1, Lease: time.Minute, Poll: time.Hour}
			var holder, waiter func(context.Context) (*Permit, error)
			var ch string // the waiter's channel
			if keyed {
				kh, kw := mustKeyed(t, cfg), mustKeyed(t, Config{Client: c, Name: cfg.Name, Lease: cfg.Lease, Poll: cfg.Poll})
				holder = func(ctx context.Context) (*Permit, error) { return kh.Acquire(ctx, "k") }
				waiter = func(ctx context.Context) (*Permit, error) { return kw.Acquire(ctx, "k") }
				ch = kw.channel
			} else {
				h, w := mustNew(t, cfg), mustNew(t, Config{Client: c, Name: cfg.Name, N: 1, Lease: cfg.Lease, Poll: cfg.Poll})
				holder, waiter = h.Acquire, w.Acquire
				ch = w.channel
			}
			p, err := holder(ctx)
			if err != nil {
				t.Fatal(err)
			}
			arm.Store(true)
			got := make(chan acquired, 1)
			go func() {
				actx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				q, err := waiter(actx)
				got <- acquired{q, err}
			}()
			// The SUBSCRIBE was sent, and failed.
			for deadline := time.Now().Add(10 * time.Second); arm.Load(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no SUBSCRIBE sent in 10 s")
				}
			}
			subscribed := false
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				n, err := c.PubSubNumSub(ctx, ch).Result()
				if err != nil {
					t.Fatal(err)
				}
				if n[ch] == 1 {
					subscribed = true
					break
				}
			}
			if !subscribed {
				t.Errorf("the waiter's channel is not subscribed 10 s after its SUBSCRIBE failed")
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			a := <-got
			if a.err != nil {
				t.Fatalf("the waiter's Acquire = %v after the holder released (the SUBSCRIBE failed once)", a.err)
			}
			if err := a.p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSubscribeFailsUntilLeftNotKept: the SUBSCRIBE of a Semaphore's
// channel fails again and again until its waiter gives up and the channel
// is swept, while another Semaphore of the client keeps the subscription
// open. go-redis remembers the channel of each failed SUBSCRIBE: the hub
// must unsubscribe it as it leaves, or go-redis subscribes it again at its
// next reconnection, for nobody, for as long as the subscription lasts.
func TestSubscribeFailsUntilLeftNotKept(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	var arm atomic.Bool
	var only atomic.Value
	c := failingSubscribeClient(t, b, &arm, &only)
	admin := b.client(t)
	mk := func(name string, client redis.UniversalClient) *Semaphore {
		return mustNew(t, Config{Client: client, Name: name, N: 1, Lease: time.Minute, Poll: time.Hour})
	}
	ha, hb := mk("left-a", admin), mk("left-b", admin)
	wa, wb := mk("left-a", c), mk("left-b", c)
	pa, err := ha.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := hb.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A waiter of a keeps the subscription open throughout.
	gotA := goAcquire(wa, 30*time.Second)
	waitSubscribed(t, wa)
	only.Store(wb.channel)
	// b's waiter gives up while its SUBSCRIBE keeps failing.
	bctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if q, err := wb.Acquire(bctx); q != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b's waiter: %v, %v; want context.DeadlineExceeded", q, err)
	}
	// Its channel swept, and the hub's changes sent.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		hubsMu.Lock()
		h := hubs[hubKey(wa)]
		done := h != nil && h.chans[wb.channel] == nil && !h.syncing
		hubsMu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b's channel not swept in 10 s")
		}
	}
	only.Store("")
	// A reconnection: go-redis subscribes what it remembers.
	if err := admin.Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n, err := admin.PubSubNumSub(ctx, wa.channel, wb.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[wa.channel] == 1 {
			if n[wb.channel] != 0 {
				t.Errorf("b's channel subscribed again after its waiter left (its SUBSCRIBEs failed)")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's channel not subscribed again in 10 s")
		}
	}
	for _, p := range []*Permit{pa, pb} {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a := <-gotA
	if a.err != nil {
		t.Fatalf("a's waiter: %v", a.err)
	}
	if err := a.p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
