package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestAllowNAtStaleGivesNoMore: a stale AllowNAt on a full bucket took its
// tokens "at" the stale time, since when the bucket had refilled, so an
// AllowN at the clock's time found it full again: a bucket of burst 5 gave
// out 4 + 5 tokens at one instant. (TestHammerTokenBucket caught it now and
// then, as more than burst + rate × elapsed given out.)
func TestAllowNAtStaleGivesNoMore(t *testing.T) {
	for _, stale := range []time.Duration{time.Millisecond, time.Second, 3 * time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			b := NewTokenBucket(1000, 5)
			if !b.AllowNAt(4, time.Now().Add(-stale)) {
				t.Fatalf("stale by %v: AllowNAt(4) of a full bucket refused", stale)
			}
			if b.AllowN(5) {
				t.Fatalf("stale by %v: AllowN(5) allowed after AllowNAt(4) at the same instant: 9 tokens of a burst of 5", stale)
			}
			if !b.AllowN(1) {
				t.Fatalf("stale by %v: the fifth token is gone", stale)
			}
		})
	}
}
