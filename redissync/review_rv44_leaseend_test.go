package redissync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKeyedReleaseRacesLeaseEnd: permits of a Keyed whose renewals are
// stopped (as a paused holder's would be) are released around the end of
// their lease, while a waiter of another process waits for the key. Each
// Release says nil or ErrLost (or, its Timeout missed on a loaded machine,
// ErrUnavailable), nothing else; the Keyed keeps no key; the
// waiter is granted the key each round with a token above the last; and
// nothing is left held or queued.
func TestKeyedReleaseRacesLeaseEnd(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			name := fmt.Sprintf("leaseend%d", n)
			const lease = 30 * time.Millisecond
			k, err := NewKeyed(Config{Client: b.client(t), Name: name, N: n, Lease: lease, Poll: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			other, err := NewKeyed(Config{Client: b.client(t), Name: name, N: n, Lease: time.Minute, Timeout: 5 * time.Second, Poll: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var last int64
			var lost atomic.Int32
			for round := range 30 {
				ps := make([]*Permit, n)
				for i := range ps {
					// The Timeout of so short a Lease (7.5 ms) a loaded
					// machine may miss: a call may fail with
					// ErrUnavailable, and leave its permit to its lease.
					for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
						p, err := k.TryAcquire(ctx, "k")
						if err == nil {
							p.s.noRenew.Store(true)
							ps[i] = p
							break
						}
						if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrWouldWait) || time.Now().After(deadline) {
							t.Fatalf("round %d: TryAcquire: %v", round, err)
						}
					}
				}
				got := make(chan acquired, 1)
				go func() {
					actx, cancel := context.WithTimeout(ctx, 20*time.Second)
					defer cancel()
					q, err := other.Acquire(actx, "k")
					got <- acquired{q, err}
				}()
				time.Sleep(lease - 5*time.Millisecond + time.Duration(rand.N(10_000))*time.Microsecond)
				var wg sync.WaitGroup
				for _, p := range ps {
					wg.Add(1)
					go func() {
						defer wg.Done()
						switch err := p.Release(ctx); {
						case err == nil:
						case errors.Is(err, ErrLost):
							lost.Add(1)
						case errors.Is(err, ErrUnavailable):
							// Left to its lease, which is ending.
						default:
							t.Errorf("round %d: Release: %v", round, err)
						}
					}()
				}
				wg.Wait()
				a := <-got
				if a.err != nil {
					t.Fatalf("round %d: the waiter: %v", round, a.err)
				}
				if a.p.Token() <= last {
					t.Errorf("round %d: token %d after %d", round, a.p.Token(), last)
				}
				last = a.p.Token()
				if err := a.p.Release(ctx); err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					if p.Token() >= a.p.Token() {
						t.Errorf("round %d: the waiter's token %d not above a holder's before it, %d", round, a.p.Token(), p.Token())
					}
				}
				if k.Len()+other.Len() != 0 {
					t.Fatalf("round %d: Len %d, %d after every Release", round, k.Len(), other.Len())
				}
				last = max(last, a.p.Token())
			}
			t.Logf("%d of %d Releases found the lease ended", lost.Load(), 30*n)
			if held, queued := counts(t, k.newSemaphore(k.name, "k")); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}
