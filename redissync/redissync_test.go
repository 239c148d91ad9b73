package redissync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// awaitEmpty waits until nobody holds a permit of s nor waits in its line,
// and fails t, saying what and the counts, if that has not come within
// within: what a call that gave up left is taken back in the background.
func awaitEmpty(t testing.TB, s *Semaphore, within time.Duration, what string) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		held, queued := counts(t, s)
		if held == 0 && queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v %s: %d held, %d queued", within, what, held, queued)
		}
	}
}

// counts returns the permits held and the waiters in line, as Redis has them.
func counts(t testing.TB, s *Semaphore) (held, queued int64) {
	t.Helper()
	ctx := context.Background()
	var err error
	if s.lock {
		held, err = s.client.Exists(ctx, s.keys[0]).Result()
	} else {
		held, err = s.client.ZCard(ctx, s.keys[0]).Result()
	}
	if err != nil {
		t.Fatal(err)
	}
	queued, err = s.client.ZCard(ctx, s.keys[1]).Result()
	if err != nil {
		t.Fatal(err)
	}
	return held, queued
}

func mustNew(t testing.TB, cfg Config) *Semaphore {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAcquireTryAcquireRelease(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			l := mustNew(t, b.roomyConfig(t, "basic", 1))
			p, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p.Token() != 1 {
				t.Errorf("first token %d, want 1", p.Token())
			}
			if q, err := l.TryAcquire(ctx); q != nil || !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire while held: a permit %v, %v; want none, ErrWouldWait", q != nil, err)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if p.Context().Err() == nil {
				t.Error("the Context of a released Permit is not done")
			}
			select {
			case <-p.Lost():
				t.Error("Release closed Lost")
			default:
			}
			q, err := l.TryAcquire(ctx)
			if err != nil || q == nil {
				t.Fatalf("TryAcquire once free: %v, %v", q, err)
			}
			if q.Token() != 2 {
				t.Errorf("second token %d, want 2", q.Token())
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if held, queued := counts(t, l); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

func TestSemaphorePermitsAcrossClients(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			var sems []*Semaphore
			for range 3 {
				sems = append(sems, mustNew(t, b.roomyConfig(t, "sem", 2)))
			}
			var got []*Permit
			last := int64(0)
			for i := range 2 {
				p, err := sems[i].Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if p.Token() <= last {
					t.Errorf("token %d after %d", p.Token(), last)
				}
				last = p.Token()
				got = append(got, p)
			}
			if p, err := sems[2].TryAcquire(ctx); p != nil || !errors.Is(err, ErrWouldWait) {
				t.Fatalf("a third permit of 2: %v, %v; want none, ErrWouldWait", p, err)
			}
			if err := got[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			p, err := sems[2].Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p.Token() <= last {
				t.Errorf("token %d after %d", p.Token(), last)
			}
			for _, p := range []*Permit{got[1], p} {
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestDoneCtxFailsFirst(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := mustNew(t, b.roomyConfig(t, "done", 1))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if p, err := l.Acquire(ctx); p != nil || !errors.Is(err, context.Canceled) {
				t.Errorf("Acquire with a done ctx: %v, %v", p, err)
			}
			if p, err := l.TryAcquire(ctx); p != nil || !errors.Is(err, context.Canceled) {
				t.Errorf("TryAcquire with a done ctx: %v, %v", p, err)
			}
			if held, queued := counts(t, l); held != 0 || queued != 0 {
				t.Errorf("after a done ctx: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestCancelWhileWaitingLeavesNothing: a waiter whose ctx ends leaves no
// place in line and no permit.
func TestCancelWhileWaitingLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := mustNew(t, b.roomyConfig(t, "cancel", 1))
			holder, err := l.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			p, err := l.Acquire(ctx)
			if p != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire while held: %v, %v", p, err)
			}
			// Its place is given back in the background when its round
			// trip outlived the ctx, as a loaded machine may make it.
			held, queued := counts(t, l)
			for deadline := time.Now().Add(30 * time.Second); queued != 0 && time.Now().Before(deadline); held, queued = counts(t, l) {
				time.Sleep(time.Millisecond)
			}
			if held != 1 || queued != 0 {
				t.Errorf("after the waiter left: %d held, %d queued; want 1, 0", held, queued)
			}
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if held, queued := counts(t, l); held != 0 || queued != 0 {
				t.Errorf("after Release: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestFIFOAcrossClients: waiters of several clients are served in the order
// they joined the line, within the stated tolerance: a waiter is never served
// before one at least N places ahead of it (exactly in order for a lock).
// The order served is that of the fencing tokens, which Redis hands out in
// the order it grants.
func TestFIFOAcrossClients(t *testing.T) {
	for _, b := range backends(t) {
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				ctx := context.Background()
				name := fmt.Sprintf("fifo%d", n)
				var sems []*Semaphore
				for range 3 {
					sems = append(sems, mustNew(t, b.roomyConfig(t, name, n)))
				}
				var holders []*Permit
				for range n {
					p, err := sems[0].Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					holders = append(holders, p)
				}
				const waiters = 9
				tokens := make([]int64, waiters)
				var wg sync.WaitGroup
				for i := range waiters {
					wg.Add(1)
					go func() {
						defer wg.Done()
						p, err := sems[i%3].Acquire(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						tokens[i] = p.Token()
						time.Sleep(time.Millisecond)
						if err := p.Release(ctx); err != nil {
							t.Error(err)
						}
					}()
					// The next joins once this one is in line.
					for {
						if _, queued := counts(t, sems[0]); queued == int64(i+1) {
							break
						}
						time.Sleep(time.Millisecond)
					}
				}
				for _, p := range holders {
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
				wg.Wait()
				for j := range waiters {
					for i := 0; i <= j-n; i++ {
						if tokens[i] > tokens[j] {
							t.Errorf("place %d served before place %d: tokens %v", j, i, tokens)
						}
					}
				}
			})
		}
	}
}

// TestRenewalKeepsTheLease: a holder keeps its permit for many leases.
//
// It runs in a testing/synctest bubble: the holder's clock, its renewals'
// timers and their Timeouts are the bubble's, and the bubble's time stands
// still while a round trip is on the network (a goroutine reading a socket
// is not durably blocked). So a loaded machine can make no renewal late, nor
// time one out: without them, the permit would be lost at the first Lease
// of the bubble's time. The lease in Redis, on the real clock, is long
// enough never to end during the test.
func TestRenewalKeepsTheLease(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.client(t) // made outside the bubble: its connections outlive it
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				const lease = time.Minute
				l := mustNew(t, b.config(c, "renew", 1, lease))
				p, err := l.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * lease) // 15 renewals
				select {
				case <-p.Lost():
					t.Fatal("lease lost while renewed")
				default:
				}
				if p.Context().Err() != nil {
					t.Fatalf("the Context of a renewed permit ended: %v", context.Cause(p.Context()))
				}
				if q, err := l.TryAcquire(ctx); q != nil || !errors.Is(err, ErrWouldWait) {
					t.Fatalf("TryAcquire while held: a permit %v, %v; want none, ErrWouldWait", q != nil, err)
				}
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestCrashedHolderFreesAfterLease: a holder that stops renewing (a crash)
// loses its permit at the end of the lease, and a waiter gets it.
//
// Whether the holder's timer has signalled Lost when the waiter returns is
// a race a loaded machine may decide either way; what must hold is that the
// holder stopped believing in its lease (until) before the server granted
// the waiter's (its lease's start, on the server's clock, which is this
// machine's). A lease of a second leaves a Timeout (a quarter of it) no
// slowed round trip runs out of.
func TestCrashedHolderFreesAfterLease(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			const lease = time.Second
			crashed := mustNew(t, b.config(b.client(t), "crash", 1, lease))
			crashed.noRenew.Store(true)
			other := mustNew(t, b.config(b.client(t), "crash", 1, lease))
			p, err := crashed.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			q, err := other.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			end, ok := holderEnd(t, other, q.id)
			if !ok {
				t.Fatal("the waiter's permit is not in Redis")
			}
			p.mu.Lock()
			until := p.until
			p.mu.Unlock()
			if granted := end.Add(-lease); granted.Before(until) {
				t.Errorf("the waiter was granted the permit %v before its holder's lease could no longer be proven", until.Sub(granted))
			}
			select {
			case <-p.Lost():
			case <-time.After(time.Minute):
				t.Fatal("the holder never saw Lost")
			}
			if !errors.Is(context.Cause(p.Context()), ErrLost) {
				t.Errorf("cause %v, want ErrLost", context.Cause(p.Context()))
			}
			if q.Token() <= p.Token() {
				t.Errorf("token %d after %d", q.Token(), p.Token())
			}
			if err := p.Release(ctx); !errors.Is(err, ErrLost) {
				t.Errorf("Release of a lost permit: %v, want ErrLost", err)
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLostWhenTheLeaseIsGone: a lease deleted behind the holder's back is
// seen at the next renewal.
func TestLostWhenTheLeaseIsGone(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			// A roomy Lease, its next renewal brought forward to now: a
			// Lease of 900 ms gave its round trips 225 ms, which a loaded
			// machine missed now and then (the Acquire failed), and its
			// loss could have come at its end, not from the renewal.
			l := mustNew(t, b.roomyConfig(t, "gone", 1))
			p, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.client.Del(ctx, l.keys[0]).Err(); err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			p.next = time.Now()
			p.t.Reset(0)
			p.mu.Unlock()
			select {
			case <-p.Lost():
			case <-time.After(20 * time.Second): // a bound on a failure, not a timing
				t.Fatal("Lost not closed")
			}
			<-p.Context().Done()
			if err := p.Release(ctx); !errors.Is(err, ErrLost) {
				t.Errorf("Release: %v, want ErrLost", err)
			}
		})
	}
}
