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

// slowConn holds up the writes of the acquire script while armed: the
// script reaches Redis, and runs, after its caller stopped waiting.
type slowConn struct {
	net.Conn
	armed *atomic.Bool
}

func (c slowConn) Write(b []byte) (int, error) {
	if c.armed.Load() && (bytes.Contains(b, []byte(setAcquire.Hash())) || bytes.Contains(b, []byte(lockAcquire.Hash()))) {
		time.Sleep(300 * time.Millisecond)
	}
	return c.Conn.Write(b)
}

// TestAbandonedAttemptLandingLateLeavesNothing: an Acquire whose ctx ends
// while its attempt is still on its way to Redis takes back what that
// attempt leaves, even when the attempt runs after the Acquire gave up and
// took back its place: no permit is left held, no place in line.
func TestAbandonedAttemptLandingLateLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var armed atomic.Bool
			c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
				ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return slowConn{conn, &armed}, nil
				}})
			t.Cleanup(func() { _ = c.Close() })
			cfg := b.config(c, "inflight", 1, time.Minute)
			cfg.Timeout = time.Second
			s := mustNew(t, cfg)
			ctx := context.Background()
			// The scripts loaded, so that the attempt runs by its hash.
			q, err := s.Acquire(ctx)
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
			// The attempt lands 300ms after it was sent; what it left must
			// be taken back by then, or soon after.
			time.Sleep(time.Second)
			held, queued := counts(t, s)
			if held != 0 || queued != 0 {
				t.Errorf("after an Acquire given up: %d held, %d queued", held, queued)
			}
		})
	}
}
