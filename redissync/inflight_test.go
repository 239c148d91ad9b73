package redissync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	if c.armed.Load() && (bytes.Contains(b, []byte(setAcquire.Hash())) || bytes.Contains(b, []byte(lockAcquire.Hash())) ||
		bytes.Contains(b, []byte(lockTake.Hash()))) {
		time.Sleep(300 * time.Millisecond)
	}
	return c.Conn.Write(b)
}

// TestAbandonedAttemptLandingLateLeavesNothing: an Acquire whose ctx ends
// while its attempt is still on its way to Redis takes back what that
// attempt leaves, even when the attempt runs after the Acquire gave up and
// took back its place: no permit is left held for a whole Lease (for a lock,
// every process shut out), no place in line. Both kinds of client: one that
// waits for its ReadTimeout (the attempt's write itself is held up), and one
// that ends its round trips at the ctx's deadline (ContextTimeoutEnabled;
// the bytes already sent reach Redis after the client gave up).
func TestAbandonedAttemptLandingLateLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		for _, ctxTimeouts := range []bool{false, true} {
			for n := 1; n <= 2; n++ {
				t.Run(fmt.Sprintf("%s/ContextTimeoutEnabled=%v/N=%d", b.name, ctxTimeouts, n), func(t *testing.T) {
					var armed atomic.Bool
					var c *redis.Client
					if ctxTimeouts {
						c = inFlightClient(t, b.addr, &armed, setAcquire, lockAcquire, lockTake)
					} else {
						c = slowClient(t, b.addr, &armed)
					}
					cfg := b.config(c, fmt.Sprintf("inflight%v%d", ctxTimeouts, n), n, time.Minute)
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
					// The attempt lands 300ms after it was sent; what it
					// leaves is taken back once its round trip ends, or,
					// with ContextTimeoutEnabled, within the client's
					// ReadTimeout: not held for the Lease.
					time.Sleep(400 * time.Millisecond)
					awaitEmpty(t, s, s.roundTrip+20*time.Second, "after an Acquire given up")
				})
			}
		}
	}
}

// slowClient returns a client, waiting for its ReadTimeout, whose
// connections hold up the writes of the acquire scripts while armed.
func slowClient(t *testing.T, addr string, armed *atomic.Bool) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return slowConn{conn, armed}, nil
		}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
