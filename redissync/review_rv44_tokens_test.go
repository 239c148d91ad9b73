package redissync

import (
	"context"
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
