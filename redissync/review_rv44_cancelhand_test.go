package redissync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestKeyedCancelAsHandedOver: a Keyed waiter's ctx is cancelled just as
// the holder's Release hands it the key: the holder of the same Keyed (told
// by the Release's reply) or of another process's (told by a message).
// Whatever its Acquire returns, a permit is the key's only holder, and
// otherwise nothing is left held or queued once the give-backs have landed;
// neither Keyed keeps the key. Bounds are generous: a Timeout of 5 s and a
// lease of a minute, so that a permit left behind is not hidden by its
// lease ending.
func TestKeyedCancelAsHandedOver(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			cfg := Config{Client: b.client(t), Name: fmt.Sprintf("kcancel%v", local), N: 1, Lease: time.Minute,
				Timeout: 5 * time.Second, Poll: time.Hour}
			w := mustKeyed(t, cfg)
			h := w
			if !local {
				cfg.Client = b.client(t)
				h = mustKeyed(t, cfg)
			}
			probe := h.newSemaphore(h.name, "k")
			got := 0
			for round := range 40 {
				p, err := h.Acquire(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				wctx, cancel := context.WithCancel(ctx)
				res := make(chan acquired, 1)
				go func() {
					q, err := w.Acquire(wctx, "k")
					res <- acquired{q, err}
				}()
				waitQueued(t, probe, 1)
				if !local {
					// Subscribed, and woken once by the subscription.
					waitChannel(t, w)
				}
				// A message takes longer than a reply to come.
				spread := 400 * time.Microsecond
				if !local {
					spread = 3 * time.Millisecond
				}
				go func() {
					time.Sleep(rand.N(spread))
					cancel()
				}()
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
				a := <-res
				cancel()
				switch {
				case a.err == nil:
					got++
					if q, err := h.TryAcquire(ctx, "k"); q != nil || !errors.Is(err, ErrWouldWait) {
						t.Fatalf("round %d: TryAcquire while the waiter holds: %v, %v", round, q, err)
					}
					if err := a.p.Release(ctx); err != nil {
						t.Fatal(err)
					}
				case !errors.Is(a.err, context.Canceled):
					t.Fatalf("round %d: the waiter: %v", round, a.err)
				}
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
					held, queued := counts(t, probe)
					if held == 0 && queued == 0 && w.Len() == 0 && h.Len() == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round %d: 30 s after: %d held, %d queued, Len %d, %d", round, held, queued, w.Len(), h.Len())
					}
				}
			}
			t.Logf("the waiter got the key in %d of 40 rounds", got)
		})
	}
}

// waitChannel waits until k's channel is subscribed, and a little more (see
// waitSubscribed).
func waitChannel(t *testing.T, k *Keyed) {
	t.Helper()
	c := k.cfg.Client
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		n, err := c.PubSubNumSub(context.Background(), k.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[k.channel] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("k's channel not subscribed in a minute")
		}
	}
	time.Sleep(20 * time.Millisecond)
}
