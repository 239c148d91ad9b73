package redissync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCancelWhileTakeInFlight: a ctx cancelled (not timed out) while the
// lock's fast take is on its way to Redis. A client with
// ContextTimeoutEnabled ends a round trip at a deadline, not at a
// cancellation: the call sees it when the round trip is over (within the
// Timeout), and must then give back the permit the take granted and return
// context.Canceled, leaving nothing in Redis.
func TestCancelWhileTakeInFlight(t *testing.T) {
	for _, b := range backends(t) {
		for _, try := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/TryAcquire=%v", b.name, try), func(t *testing.T) {
				var armed atomic.Bool
				c := inFlightClientRT(t, b.addr, 500*time.Millisecond, &armed, lockTake)
				cfg := b.config(c, fmt.Sprintf("canceltake%v", try), 1, time.Minute)
				cfg.Timeout = 400 * time.Millisecond
				s := mustNew(t, cfg)
				ctx := context.Background()
				q, err := s.Acquire(ctx) // the scripts loaded
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
				armed.Store(true)
				actx, cancel := context.WithCancel(ctx)
				time.AfterFunc(30*time.Millisecond, cancel)
				start := time.Now()
				var p *Permit
				if try {
					p, err = s.TryAcquire(actx)
				} else {
					p, err = s.Acquire(actx)
				}
				took := time.Since(start)
				armed.Store(false)
				cancel()
				if p != nil {
					defer func() { _ = p.Release(ctx) }()
				}
				if took > 5*time.Second {
					t.Errorf("returned %v after the call began; its round trips are bounded by the Timeout, %v", took, cfg.Timeout)
				}
				if p != nil {
					t.Errorf("ctx cancelled while the take was in flight: a Permit (token %d), error %v; want context.Canceled", p.Token(), err)
				} else if !errors.Is(err, context.Canceled) {
					t.Errorf("ctx cancelled while the take was in flight: %v; want context.Canceled", err)
				}
				if held, queued := counts(t, s); held != 0 || queued != 0 {
					t.Errorf("after the cancelled call: %d held, %d queued", held, queued)
				}
			})
		}
	}
}

// tokenRig is a Name whose fencing tokens are driven near 2^53: s and o are
// two processes' Semaphores of it.
type tokenRig struct {
	t      *testing.T
	s, o   *Semaphore
	sa, oa *againCounter // the asks again of s's and o's waiters
}

// newTokenRig returns a tokenRig of n permits, whose waiters poll every
// poll (0: roomyConfig's). No lease ends in its tests: its Semaphores are
// roomy, as the round trips of a loaded machine missed the default Timeout.
func newTokenRig(t *testing.T, b backend, name string, n int, poll time.Duration) *tokenRig {
	cfg := b.roomyConfig(t, name, n)
	if poll > 0 {
		cfg.Poll = poll
	}
	s := mustNew(t, cfg)
	sa := countAgain(cfg.Client.(*redis.Client), s)
	cfg.Client = b.roomyClient(t)
	o := mustNew(t, cfg)
	oa := countAgain(cfg.Client.(*redis.Client), o)
	return &tokenRig{t: t, s: s, o: o, sa: sa, oa: oa}
}

func (r *tokenRig) setSeq(v int64) {
	r.t.Helper()
	if err := r.s.client.Set(context.Background(), r.s.keys[3], v, 0).Err(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *tokenRig) seq() int64 {
	r.t.Helper()
	v, err := r.s.client.Get(context.Background(), r.s.keys[3]).Int64()
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

type acquired struct {
	p   *Permit
	err error
}

// wait starts w.Acquire, and waits until it is in line (and, if sub, its
// subscription is made and it has asked once more, and been answered: an
// ask still under way at a hand-over claims the permit, with a token more).
func (r *tokenRig) wait(w *Semaphore, sub bool) <-chan acquired {
	r.t.Helper()
	again := r.sa
	if w == r.o {
		again = r.oa
	}
	if sub {
		// A channel left lingers (see linger): a waiter that joins it
		// then asks no more. The last waiter's is let go first.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			n, err := w.client.PubSubNumSub(context.Background(), w.channel).Result()
			if err != nil {
				r.t.Fatal(err)
			}
			if n[w.channel] == 0 {
				break
			}
			if time.Now().After(deadline) {
				r.t.Fatal("a channel left still subscribed after a minute")
			}
		}
		again.n.Store(0)
	}
	got := make(chan acquired, 1)
	go func() {
		p, err := w.Acquire(context.Background())
		got <- acquired{p, err}
	}()
	waitQueued(r.t, r.s, 1)
	if sub {
		waitAskedAgain(r.t, again)
	}
	return got
}

func (r *tokenRig) take(n int) []*Permit {
	r.t.Helper()
	var ps []*Permit
	for range n {
		p, err := r.s.Acquire(context.Background())
		if err != nil {
			r.t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func (r *tokenRig) done() {
	r.t.Helper()
	if held, queued := counts(r.t, r.s); held != 0 || queued != 0 {
		r.t.Errorf("after the run: %d held, %d queued", held, queued)
	}
}

// runTokenHandOver drives a hand-over to a waiter of w at token 2^53-1, then
// one at 2^53 (or past it): the first is the waiter's Permit, exact; the
// second fails with ErrTokensExhausted, the permit given back. first is the
// token the hand-over's waiter is expected to hold (claimed: one more than
// handed).
func runTokenHandOver(t *testing.T, r *tokenRig, n int, w *Semaphore, sub bool, extra int64) {
	ctx := context.Background()
	r.setSeq(maxToken - int64(n) - 1 - extra)
	held := r.take(n)
	got := r.wait(w, sub)
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	var a acquired
	select {
	case a = <-got:
	case <-time.After(20 * time.Second): // a bound on a failure, not a timing
		t.Fatal("the waiter was not served")
	}
	if a.err != nil {
		t.Fatalf("hand-over at 2^53-1: %v", a.err)
	}
	if a.p.Token() != maxToken || r.seq() != maxToken {
		t.Errorf("hand-over at 2^53-1: token %d, seq %d; want %d", a.p.Token(), r.seq(), int64(maxToken))
	}
	held = append(held[1:], a.p)
	got = r.wait(w, sub)
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case a = <-got:
	case <-time.After(20 * time.Second): // a bound on a failure, not a timing
		t.Fatal("the waiter was not served")
	}
	if a.p != nil || a.err != ErrTokensExhausted {
		t.Errorf("hand-over past 2^53-1: %v, %v; want ErrTokensExhausted", a.p, a.err)
		if a.p != nil {
			_ = a.p.Release(ctx)
		}
	}
	for _, p := range held[1:] {
		if err := p.Release(ctx); err != nil {
			t.Error(err)
		}
	}
	r.done()
}

// TestTokensHandedInReply: a permit handed by a Release to a waiter of the
// same Semaphore (told by the Release's reply, not pub/sub) at 2^53-1 is
// exact, and at 2^53 fails with ErrTokensExhausted, nothing left held.
// (TestTokensTo2To53 covers the take, the full acquire and a message at
// 1e15, not this path nor a hand-over at or past 2^53.)
func TestTokensHandedInReply(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				r := newTokenRig(t, b, fmt.Sprintf("tokreply%d", n), n, 0)
				runTokenHandOver(t, r, n, r.s, true, 0)
			})
		}
	}
}

// TestTokensHandedByMessage: as TestTokensHandedInReply, to a waiter of
// another process, told by pub/sub.
func TestTokensHandedByMessage(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				r := newTokenRig(t, b, fmt.Sprintf("tokmsg%d", n), n, 0)
				runTokenHandOver(t, r, n, r.o, true, 0)
			})
		}
	}
}

// TestTokensClaimedAfterMissedMessage: a waiter that never gets its
// message (its subscription is to another channel) claims the permit held
// for it on its poll, with a new token: 2^53-1 exact, then past it
// ErrTokensExhausted, nothing left held.
func TestTokensClaimedAfterMissedMessage(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				r := newTokenRig(t, b, fmt.Sprintf("tokclaim%d", n), n, 20*time.Millisecond)
				r.o.channel += ":deaf"
				runTokenHandOver(t, r, n, r.o, false, 1)
			})
		}
	}
}

// TestLockTokensFullAcquire: a lock's grants by the full acquire script
// (run while the Semaphore thinks the lock contended): its SET NX on a free
// lock, and its grant over a dead lease left in the second form. At 2^53-1
// the token is exact; past it Acquire and TryAcquire fail with
// ErrTokensExhausted and leave nothing held. (TestTokensTo2To53 reaches
// these only by the fast take.)
func TestLockTokensFullAcquire(t *testing.T) {
	for _, b := range backends(t) {
		for _, stale := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deadSecondForm=%v", b.name, stale), func(t *testing.T) {
				ctx := context.Background()
				r := newTokenRig(t, b, fmt.Sprintf("tokfull%v", stale), 1, 0)
				s := r.s
				prepare := func() {
					t.Helper()
					s.contended.Store(true)
					if stale {
						past := time.Now().Add(-time.Second).UnixMilli()
						if err := s.client.Set(ctx, s.keys[0], fmt.Sprintf("dead/1/1@%d", past), time.Minute).Err(); err != nil {
							t.Fatal(err)
						}
					}
				}
				r.setSeq(maxToken - 1)
				prepare()
				p, err := s.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if p.Token() != maxToken || r.seq() != maxToken {
					t.Errorf("token %d, seq %d; want %d", p.Token(), r.seq(), int64(maxToken))
				}
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
				for _, try := range []bool{false, true} {
					prepare()
					p, err := acquireOrTry(ctx, s, try)
					if p != nil || err != ErrTokensExhausted {
						t.Errorf("past 2^53-1 (TryAcquire %v): %v, %v; want ErrTokensExhausted", try, p, err)
					}
					if v := holderValue(t, s); v != "" {
						t.Errorf("past 2^53-1 (TryAcquire %v): the holder key is %q; want none", try, v)
					}
				}
				r.done()
			})
		}
	}
}
