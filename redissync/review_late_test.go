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
				time.Sleep(500 * time.Millisecond) // it lands 300ms late
				if held, queued := counts(t, s); held != 0 || queued != 0 {
					t.Errorf("after an Acquire given up: %d held, %d queued", held, queued)
				}
			})
		}
	}
}
