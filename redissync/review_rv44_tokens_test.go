package redissync

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestKeyedTokensAcrossFlushAll: a key's token counter lost between two
// grants (a FLUSHALL, as an expiry would, here within the same millisecond
// of the server's clock as the grant before, as a fast Redis nearby allows)
// must not give the next grant a token already given: the counter is made
// again from the clock, which must tell the two apart.
func TestKeyedTokensAcrossFlushAll(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	c := b.client(t)
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			k, err := NewKeyed(Config{Client: c, Name: fmt.Sprintf("flush%d", n), N: n, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var last int64
			for i := range 300 {
				p, err := k.TryAcquire(ctx, "a")
				if err != nil {
					t.Fatal(err)
				}
				if p.Token() <= last {
					t.Fatalf("round %d: token %d after %d, the counter lost between", i, p.Token(), last)
				}
				last = p.Token()
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if err := c.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestKeyedTokensAcrossRealExpiry: with the shortest Lease (10 ms) a key's
// counter lives 1.02 s from its making, whatever its use; a key granted now
// and then over 2.5 s sees it expire and be made again from the clock, and
// its tokens still increase. The Timeout of so short a Lease (2.5 ms) a
// loaded machine may miss: such a call is tried again.
func TestKeyedTokensAcrossRealExpiry(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	c := b.client(t)
	k, err := NewKeyed(Config{Client: c, Name: "realexp", N: 1, Lease: minLease})
	if err != nil {
		t.Fatal(err)
	}
	seq := k.newSemaphore(k.name, "a").keys[3]
	var last int64
	remade := 0
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		p, err := k.TryAcquire(ctx, "a")
		if err != nil {
			if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrWouldWait) {
				continue // a Timeout missed, or a permit left to its lease
			}
			t.Fatal(err)
		}
		if p.Token() <= last {
			t.Fatalf("token %d after %d", p.Token(), last)
		}
		// Made again from the clock: a jump of about a million a second,
		// where the counter adds one a grant.
		if last > 0 && p.Token()-last > 100_000 {
			remade++
		}
		last = p.Token()
		if err := p.Release(ctx); err != nil && !errors.Is(err, ErrLost) && !errors.Is(err, ErrUnavailable) {
			t.Fatal(err)
		}
	}
	if remade < 1 {
		t.Errorf("the counter was not made again in 2.5 s; want it to expire (%s)", seq)
	}
	if k.Len() != 0 {
		t.Errorf("Len %d", k.Len())
	}
}
