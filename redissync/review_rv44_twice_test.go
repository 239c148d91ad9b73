package redissync

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestKeyedReleaseTwice: a Keyed Permit released twice panics naming the
// package, and its second Release ends no other use of the key: a permit
// of the same key held by the same Keyed keeps it kept, and is given back
// as usual.
func TestKeyedReleaseTwice(t *testing.T) {
	b := backends(t)[0]
	ctx := context.Background()
	k, err := NewKeyed(b.config(b.client(t), "twice", 2, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	p, err := k.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	q, err := k.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r, _ := recover().(string); !strings.HasPrefix(r, "redissync: ") {
				t.Errorf("a second Release: panic %q, want one naming the package", r)
			}
		}()
		_ = p.Release(ctx)
	}()
	if k.Len() != 1 {
		t.Fatalf("Len %d after a second Release, with q held; want 1", k.Len())
	}
	if r, err := k.TryAcquire(ctx, "k"); err != nil {
		t.Fatalf("TryAcquire of the permit p gave back: %v", err)
	} else if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if k.Len() != 0 {
		t.Fatalf("Len %d after every Release", k.Len())
	}
}
