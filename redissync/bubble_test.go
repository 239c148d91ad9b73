package redissync

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestAcrossBubbles: a Semaphore made outside a testing/synctest bubble
// works inside one, and one made inside keeps working after the bubble,
// contended too. (A contended Acquire inside a bubble waits on the network,
// which the bubble does not count as blocked: the package's doc says to
// keep those out of bubbles.)
func TestAcrossBubbles(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			outside := mustNew(t, b.config(b.client(t), "bubbles", 1, time.Minute))
			c := b.client(t) // closed when the test ends, not the bubble
			var inside *Semaphore
			synctest.Test(t, func(t *testing.T) {
				inside = mustNew(t, b.config(c, "bubbles", 1, time.Minute))
				for _, s := range []*Semaphore{outside, inside} {
					p, err := s.Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if q, err := s.TryAcquire(ctx); q != nil || !errors.Is(err, ErrWouldWait) {
						t.Fatalf("TryAcquire of a held lock: %v, %v; want none, ErrWouldWait", q != nil, err)
					}
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
					q, err := s.TryAcquire(ctx)
					if err != nil || q == nil {
						t.Fatalf("TryAcquire of a free lock: %v, %v", q != nil, err)
					}
					if err := q.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
			})
			for _, s := range []*Semaphore{outside, inside} {
				p, err := s.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				other := outside
				if s == outside {
					other = inside
				}
				got := make(chan *Permit)
				go func() {
					q, err := other.Acquire(ctx)
					if err != nil {
						t.Error(err)
					}
					got <- q
				}()
				waitQueued(t, s, 1)
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if q := <-got; q != nil {
					if err := q.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if held, queued := counts(t, outside); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}
