package redissync

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisStopped: with Redis stopped (SIGSTOP), Acquire and TryAcquire fail
// with ErrUnavailable, a waiter gives up at its next attempt, a holder sees
// Lost, and nothing hangs; once Redis is back, the permit can be had again.
//
// The Lease (3 s) and the Timeout (500 ms) leave a loaded machine room: with
// 600 ms and 100 ms, renewals late by a Timeout could lose the lease before
// the stop (the waiter was then granted it, not refused), and a first
// Acquire could miss its Timeout.
func TestRedisStopped(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		name := "ContextTimeoutEnabled=false"
		if ctxTimeouts {
			name = "ContextTimeoutEnabled=true"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each on a Redis of its own, waiting out leases
			b := ownRedis(t)
			newClient := func() *redis.Client {
				c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
					ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1,
					ContextTimeoutEnabled: ctxTimeouts})
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			cfg := Config{Name: "stop", N: 1, Lease: 3 * time.Second, Timeout: 500 * time.Millisecond,
				Poll: 100 * time.Millisecond}
			cfg.Client = newClient()
			holding := mustNew(t, cfg)
			cfg.Client = newClient()
			other := mustNew(t, cfg)
			ctx := context.Background()
			p, err := holding.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			waiter := make(chan error, 1)
			go func() {
				q, err := other.Acquire(ctx)
				if q != nil {
					_ = q.Release(ctx)
				}
				waiter <- err
			}()
			for _, queued := counts(t, holding); queued == 0; _, queued = counts(t, holding) {
				time.Sleep(time.Millisecond)
			}

			b.proc.pause()
			resumed := false
			defer func() {
				if !resumed {
					b.proc.resume()
				}
			}()
			within := func(what string, c <-chan error) error {
				t.Helper()
				select {
				case err := <-c:
					return err
				case <-time.After(10 * time.Second):
					t.Fatalf("%s hangs with Redis stopped", what)
					return nil
				}
			}
			if err := within("a waiter", waiter); !errors.Is(err, ErrUnavailable) {
				t.Errorf("waiter: %v, want ErrUnavailable", err)
			}
			if err := within("Acquire", run(func() error { _, err := other.Acquire(ctx); return err })); !errors.Is(err, ErrUnavailable) {
				t.Errorf("Acquire: %v, want ErrUnavailable", err)
			}
			if err := within("TryAcquire", run(func() error { _, err := other.TryAcquire(ctx); return err })); !errors.Is(err, ErrUnavailable) {
				t.Errorf("TryAcquire: %v, want ErrUnavailable", err)
			}
			within("Lost", run(func() error { <-p.Lost(); return nil }))
			if !errors.Is(context.Cause(p.Context()), ErrLost) {
				t.Errorf("cause %v, want ErrLost", context.Cause(p.Context()))
			}
			if err := within("Release", run(func() error { return p.Release(ctx) })); !errors.Is(err, ErrUnavailable) {
				t.Errorf("Release: %v, want ErrUnavailable", err)
			}

			b.proc.resume()
			resumed = true
			// Back: the lease of the holder has ended on the server's clock.
			var q *Permit
			for q == nil {
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				q, err = other.Acquire(actx)
				cancel()
				if err != nil && !errors.Is(err, ErrUnavailable) {
					t.Fatal(err)
				}
			}
			if q.Token() <= p.Token() {
				t.Errorf("token %d after %d", q.Token(), p.Token())
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// run runs f in a goroutine and returns its result's channel.
func run(f func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- f() }()
	return c
}
