package redissync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestAbandonedAttemptLandingLateContextTimeouts: as
// TestAbandonedAttemptLandingLateLeavesNothing, with a client that ends its
// round trips at the ctx's deadline (ContextTimeoutEnabled): an attempt that
// reaches Redis after its Acquire gave up must not leave a permit held for a
// whole Lease, which for a lock would shut out every process.
func TestAbandonedAttemptLandingLateContextTimeouts(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				var armed atomic.Bool
				c := inFlightClient(t, b.addr, &armed, setAcquire, lockAcquire)
				cfg := b.config(c, fmt.Sprintf("inflightctx%d", n), n, time.Minute)
				cfg.Timeout = time.Second
				s := mustNew(t, cfg)
				ctx := context.Background()
				q, err := s.Acquire(ctx) // the scripts loaded: the attempt runs by its hash
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
				armed.Store(true)
				actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				p, err := s.Acquire(actx)
				cancel()
				armed.Store(false)
				if !errors.Is(err, context.DeadlineExceeded) {
					if p != nil {
						_ = p.Release(ctx)
					}
					t.Fatalf("Acquire: %v, %v; want its ctx's error", p, err)
				}
				// It lands 300ms late; what it leaves is taken back within
				// the client's ReadTimeout (2s), not held for the Lease.
				time.Sleep(400 * time.Millisecond)
				deadline := time.Now().Add(s.roundTrip + time.Second)
				for {
					held, queued := counts(t, s)
					if held == 0 && queued == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%v after an Acquire given up: %d held, %d queued", s.roundTrip+time.Second, held, queued)
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
}
