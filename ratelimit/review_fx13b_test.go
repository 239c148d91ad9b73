package ratelimit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// blockingLimiter's WaitN waits until gate is closed.
type blockingLimiter struct {
	gate    chan struct{}
	entered chan struct{}
}

func (l *blockingLimiter) AllowN(int) bool { return true }
func (l *blockingLimiter) WaitN(context.Context, int) error {
	l.entered <- struct{}{}
	<-l.gate
	return nil
}

// TestReviewFx13b_KeyedBackUnderMaxKeysOnceWaitersLeave pins a defect: a
// Keyed spares the keys with goroutines in their WaitN (or in a
// TakeContext for Middleware), and its doc says the cap may then be passed
// "by as many keys as there are goroutines waiting". Once those goroutines
// had left, the keys they had made stayed over the cap: each new key
// evicted one other, however far over the cap the shard was, so the excess
// lasted until the keys were idle for the TTL (10 minutes by default), with
// nobody waiting. With MaxKeys 1 and three keys made while the others
// waited, a fourth key left three. Right: a new key brings its shard back
// to the cap, evicting as many keys not in use as it takes (of those it
// looks at).
func TestReviewFx13b_KeyedBackUnderMaxKeysOnceWaitersLeave(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan struct{})
	k := ratelimit.NewKeyed(func(string) ratelimit.Limiter {
		return &blockingLimiter{gate: gate, entered: entered}
	}, ratelimit.KeyedConfig{MaxKeys: 1})
	done := make(chan error)
	for i := range 3 {
		go func() { done <- k.WaitN(context.Background(), fmt.Sprint("w", i), 1) }()
		<-entered // in its WaitN: in use, spared
	}
	if n := k.Len(); n != 3 {
		t.Fatalf("Len = %d with three keys waited on, want 3", n)
	}
	close(gate)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	k.Get("new")
	if n := k.Len(); n != 1 {
		t.Errorf("Len = %d after a new key with nobody waiting, want 1 (MaxKeys)", n)
	}
}
