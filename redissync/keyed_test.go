package redissync

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func mustKeyed(t testing.TB, cfg Config) *Keyed {
	t.Helper()
	k, err := NewKeyedLock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeyedLockPerKey: each key is a lock of its own; a key is kept in the
// process only while held; tokens grow per key.
func TestKeyedLockPerKey(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			k := mustKeyed(t, b.config(b.client(t), "acct", 0, time.Minute))
			other := mustKeyed(t, b.config(b.client(t), "acct", 0, time.Minute))
			if k.N() != 1 || k.Len() != 0 {
				t.Fatalf("N %d, Len %d", k.N(), k.Len())
			}
			a, err := k.Acquire(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if p, err := other.TryAcquire(ctx, "a"); p != nil || !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire of a held key: %v, %v", p, err)
			}
			if other.Len() != 0 {
				t.Errorf("Len %d after a TryAcquire that failed", other.Len())
			}
			bp, err := other.TryAcquire(ctx, "b")
			if err != nil {
				t.Fatal(err)
			}
			if k.Len() != 1 || other.Len() != 1 {
				t.Errorf("Len %d, %d; want 1, 1", k.Len(), other.Len())
			}
			for _, key := range []string{"", "{", "}", "x}y{z", strings.Repeat("k", 1000)} {
				p, err := other.TryAcquire(ctx, key)
				if err != nil {
					t.Fatalf("key %q: %v", key, err)
				}
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			first := a.Token()
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := bp.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if k.Len() != 0 || other.Len() != 0 {
				t.Errorf("Len %d, %d after Release; want 0", k.Len(), other.Len())
			}
			a2, err := other.Acquire(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if a2.Token() <= first {
				t.Errorf("token %d after %d", a2.Token(), first)
			}
			if err := a2.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestKeyedTokensAfterExpiry: a key's token counter expires with its other
// keys; the next token counts from the server's clock, above the last.
func TestKeyedTokensAfterExpiry(t *testing.T) {
	for _, b := range backends(t) {
		for _, n := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				ctx := context.Background()
				c := b.client(t)
				cfg := b.config(c, "exp", n, time.Minute)
				k, err := NewKeyed(cfg)
				if err != nil {
					t.Fatal(err)
				}
				var last int64
				for i := range 4 {
					p, err := k.Acquire(ctx, "a")
					if err != nil {
						t.Fatal(err)
					}
					if p.Token() <= last || p.Token() > maxToken {
						t.Fatalf("round %d: token %d after %d", i, p.Token(), last)
					}
					last = p.Token()
					seq := p.s.keys[3]
					ttl, err := c.PTTL(ctx, seq).Result()
					if err != nil || ttl <= 0 || ttl > 2*time.Minute+time.Second {
						t.Errorf("the counter's time to live: %v, %v", ttl, err)
					}
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
					if i%2 == 1 {
						c.Del(ctx, seq) // as when it expires
					}
				}
				now, err := c.Time(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				// Counted from the clock of the round before, plus one.
				if clock := now.UnixMilli() * 1024; last > clock+1024 || last < clock-60_000*1024 {
					t.Errorf("token %d; the clock's count is %d", last, clock)
				}
			})
		}
	}
}

// TestKeyedBadConfig: a Config New refuses, NewKeyed refuses, with an
// error; so does NewKeyedLock of N other than 0 and 1.
func TestKeyedBadConfig(t *testing.T) {
	c := backends(t)[0].client(t)
	good := Config{Client: c, Name: "x", Lease: time.Second}
	for _, cfg := range []Config{
		{}, {Client: c, Lease: time.Second}, {Client: c, Name: "x"},
		{Client: c, Name: "x", Lease: math.MaxInt64}, {Client: c, Name: "x", Lease: time.Second, N: -1},
		{Client: c, Name: "x{", Lease: time.Second}, {Client: c, Name: "x", Lease: time.Second, Poll: math.MaxInt64},
		{Client: c, Name: "x", Lease: time.Second, Timeout: math.MaxInt64}, {Client: c, Name: "x", Lease: time.Second, Timeout: -1},
	} {
		if k, err := NewKeyed(cfg); k != nil || err == nil || !strings.HasPrefix(err.Error(), "redissync: ") {
			t.Errorf("NewKeyed(%+v): %v, %v", cfg, k, err)
		}
	}
	for _, n := range []int{-1, 2, math.MaxInt} {
		cfg := good
		cfg.N = n
		if k, err := NewKeyedLock(cfg); k != nil || err == nil {
			t.Errorf("NewKeyedLock with N = %d: %v, %v", n, k, err)
		}
	}
	for _, n := range []int{0, 1} {
		cfg := good
		cfg.N = n
		if k, err := NewKeyedLock(cfg); err != nil || k.N() != 1 {
			t.Errorf("NewKeyedLock with N = %d: %v", n, err)
		}
	}
	cfg := good
	cfg.N = math.MaxInt
	if k, err := NewKeyed(cfg); err != nil || k.N() != math.MaxInt {
		t.Errorf("NewKeyed with N = MaxInt: %v", err)
	}
}

// TestKeyedMisuse: the zero and nil Keyed, and a nil ctx, panic naming the
// package.
func TestKeyedMisuse(t *testing.T) {
	wantPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			if s, ok := r.(string); !ok || !strings.HasPrefix(s, "redissync: ") {
				t.Errorf("%s: panic %v, want one naming the package", what, r)
			}
		}()
		f()
	}
	ctx := context.Background()
	var zero Keyed
	var nilK *Keyed
	wantPanic("zero Acquire", func() { _, _ = zero.Acquire(ctx, "a") })
	wantPanic("zero TryAcquire", func() { _, _ = zero.TryAcquire(ctx, "a") })
	wantPanic("zero Len", func() { zero.Len() })
	wantPanic("nil N", func() { nilK.N() })
	k := mustKeyed(t, backends(t)[0].config(backends(t)[0].client(t), "m", 1, time.Second))
	//lint:ignore SA1012 the nil Context is the point
	wantPanic("nil ctx", func() { _, _ = k.Acquire(nil, "a") }) //nolint:staticcheck
	if k.Len() != 0 {
		t.Errorf("Len %d after a panic", k.Len())
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if p, err := k.Acquire(done, "a"); p != nil || err != context.Canceled {
		t.Errorf("Acquire with a done ctx: %v, %v", p, err)
	}
	if p, err := k.TryAcquire(done, "a"); p != nil || err != context.Canceled {
		t.Errorf("TryAcquire with a done ctx: %v, %v", p, err)
	}
	if k.Len() != 0 {
		t.Errorf("Len %d after failures", k.Len())
	}
}

// TestKeyedLostUnkeys: a key whose lease is lost is no longer kept for its
// Permit; its Release says ErrLost, and the key can be had again.
func TestKeyedLostUnkeys(t *testing.T) {
	b := backends(t)[0]
	ctx := context.Background()
	// The loss is told by Redis: the permit is taken away there, and the
	// first renewal brought forward to now finds it gone. A lease of a
	// second, lost at its end, needed a Timeout under a third of it (250
	// ms), which the round trips of a loaded machine missed: its Acquires
	// failed with ErrUnavailable. On a roomy Lease and Timeout nothing here
	// waits for a time.
	k := mustKeyed(t, b.roomyConfig(t, "lost", 1))
	p, err := k.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	dropHolder(t, p.s, p.id)
	p.mu.Lock()
	p.next = time.Now()
	p.t.Reset(0)
	p.mu.Unlock()
	select {
	case <-p.Lost():
	case <-time.After(20 * time.Second): // a bound on a failure, not a timing
		t.Fatal("the permit taken away in Redis was not lost at its renewal")
	}
	if k.Len() != 0 {
		t.Errorf("Len %d after the loss", k.Len())
	}
	q, err := k.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(p.Release(ctx), ErrLost) {
		t.Error("Release of a lost permit: not ErrLost")
	}
	if k.Len() != 1 {
		t.Errorf("Len %d; want 1 (q)", k.Len())
	}
	if err := q.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if k.Len() != 0 {
		t.Errorf("Len %d", k.Len())
	}
}

// TestKeyedBubbles: a Keyed made outside a synctest bubble works inside
// one for calls that need not wait, and one made inside works after it.
func TestKeyedBubbles(t *testing.T) {
	b := backends(t)[0]
	ctx := context.Background()
	c := b.client(t)
	outside := mustKeyed(t, b.config(c, "bubble", 1, time.Minute))
	var inside *Keyed
	synctest.Test(t, func(t *testing.T) {
		p, err := outside.TryAcquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		inside = mustKeyed(t, b.config(c, "bubble", 1, time.Minute))
		p, err = inside.Acquire(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	p, err := inside.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if inside.Len()+outside.Len() != 0 {
		t.Error("keys kept")
	}
}
