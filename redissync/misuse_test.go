package redissync

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestNewRefusesBadConfig(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ok := Config{Client: c, Name: "x", N: 1, Lease: time.Second}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"nil client", func(c *Config) { c.Client = nil }, "Client is required"},
		{"empty name", func(c *Config) { c.Name = "" }, "Name is required"},
		// A brace would empty or move the keys' hash tag, {Name}: Redis
		// Cluster would put a Name's keys in different slots.
		{"name }", func(c *Config) { c.Name = "}" }, "holds a brace"},
		{"name }jobs", func(c *Config) { c.Name = "}jobs" }, "holds a brace"},
		{"name {jobs}", func(c *Config) { c.Name = "{jobs}" }, "holds a brace"},
		{"prefix {}", func(c *Config) { c.Prefix = "app{}:" }, "holds a brace"},
		{"prefix {", func(c *Config) { c.Prefix = "app{" }, "holds a brace"},
		{"n 0", func(c *Config) { c.N = 0 }, "N is 0"},
		{"n -1", func(c *Config) { c.N = -1 }, "N is -1"},
		{"n min int", func(c *Config) { c.N = math.MinInt }, "must be at least 1"},
		{"lease 0", func(c *Config) { c.Lease = 0 }, "Lease is 0s"},
		{"lease -1", func(c *Config) { c.Lease = -1 }, "must be above 0"},
		{"lease min int64", func(c *Config) { c.Lease = math.MinInt64 }, "must be above 0"},
		{"lease 1ns", func(c *Config) { c.Lease = 1 }, "must be from"},
		{"lease max", func(c *Config) { c.Lease = math.MaxInt64 }, "must be from"},
		{"timeout negative", func(c *Config) { c.Timeout = -1 }, "Timeout is negative"},
		{"timeout a third of the lease", func(c *Config) { c.Timeout = c.Lease / 3 }, "below a third"},
		{"timeout max", func(c *Config) { c.Timeout = math.MaxInt64 }, "below a third"},
		{"poll negative", func(c *Config) { c.Poll = -1 }, "Poll is"},
		{"poll max", func(c *Config) { c.Poll = math.MaxInt64 }, "Poll is"},
		{"poll 1ns", func(c *Config) { c.Poll = 1 }, "Poll is"},
		{"poll 9ms", func(c *Config) { c.Poll = 9 * time.Millisecond }, "Poll is"},
	} {
		cfg := ok
		tc.edit(&cfg)
		s, err := New(cfg)
		if s != nil || err == nil || !strings.HasPrefix(err.Error(), "redissync: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, %v; want an error with %q", tc.name, s, err, tc.want)
		}
	}
	for _, n := range []int{-1, 2} {
		cfg := ok
		cfg.N = n
		if s, err := NewLock(cfg); s != nil || err == nil || !strings.HasPrefix(err.Error(), "redissync: ") {
			t.Errorf("NewLock with N = %d: %v, %v", n, s, err)
		}
	}
	cfg := ok
	cfg.N = 0
	if l, err := NewLock(cfg); err != nil || l.N() != 1 {
		t.Errorf("NewLock with N = 0: %v, %v", l, err)
	}
	// Extremes that are allowed.
	for _, lease := range []time.Duration{minLease, maxLease} {
		cfg := ok
		cfg.Lease = lease
		cfg.Poll = maxPoll
		if _, err := New(cfg); err != nil {
			t.Errorf("Lease %v: %v", lease, err)
		}
	}
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		s, _ := r.(string)
		if !strings.HasPrefix(s, "redissync: ") || !strings.Contains(s, want) {
			t.Errorf("panic %v; want one with %q", r, want)
		}
	}()
	f()
}

func TestZeroValuesPanic(t *testing.T) {
	ctx := context.Background()
	var s Semaphore
	mustPanic(t, "use New", func() { _, _ = s.Acquire(ctx) })
	mustPanic(t, "use New", func() { _, _ = s.TryAcquire(ctx) })
	mustPanic(t, "use New", func() { s.N() })
	var nilSem *Semaphore
	mustPanic(t, "use New", func() { _, _ = nilSem.Acquire(ctx) })
	var nilPermit *Permit // as Acquire and TryAcquire return with an error
	mustPanic(t, "use Semaphore.Acquire", func() { _ = nilPermit.Release(ctx) })
	var p Permit
	mustPanic(t, "use Semaphore.Acquire", func() { _ = p.Release(ctx) })
	mustPanic(t, "use Semaphore.Acquire", func() { p.Token() })
	mustPanic(t, "use Semaphore.Acquire", func() { p.Lost() })
	mustPanic(t, "use Semaphore.Acquire", func() { p.Context() })
}

func TestReleaseTwicePanics(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	l := mustNew(t, Config{Client: c, Name: "twice", Lease: time.Second, N: 1})
	ctx := context.Background()
	p, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustPanic(t, "already released", func() { _ = p.Release(ctx) })
}

// TestRedisErrorIsUnavailable: a Redis that answers with an error (the keys
// hold another type) gives ErrUnavailable, no panic.
func TestRedisErrorIsUnavailable(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ { // both layouts of the holders
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				c := b.client(t)
				l := mustNew(t, b.config(c, fmt.Sprintf("wrongtype%d", n), n, time.Second))
				ctx := context.Background()
				// The line, a sorted set in both layouts, made a string.
				if err := c.Set(ctx, l.keys[1], "not a sorted set", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					// And the lock held, else its fast way takes it
					// without a look at the line.
					if err := c.Set(ctx, l.keys[0], "another", 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if p, err := l.Acquire(ctx); p != nil || !isUnavailable(err) {
					t.Errorf("Acquire: %v, %v; want ErrUnavailable", p, err)
				}
				if p, err := l.TryAcquire(ctx); p != nil || !isUnavailable(err) {
					t.Errorf("TryAcquire: %v, %v; want ErrUnavailable", p, err)
				}
			})
		}
	}
}
