package breaker

import (
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: a WindowDuration between WindowBuckets and twice as many
// nanoseconds spanned only WindowBuckets nanoseconds: each bucket's width,
// WindowDuration/WindowBuckets, was rounded down to 1ns, so a 19ns window of
// 10 buckets forgot a call after 10ns, and any WindowDuration not a multiple
// of WindowBuckets lost up to a bucket's width. Right: the window spans at
// least WindowDuration, and less than a bucket more (the width is rounded
// up, to a whole nanosecond, and the buckets are as many as it takes, at
// most WindowBuckets): a call dated at the start of a bucket still counts
// WindowDuration-1 later, and has left once the window's span has passed.
func TestWindowSpansWindowDuration(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	pairs := []struct {
		d       time.Duration
		buckets int
	}{
		{19, 10}, {11, 10}, {10, 10}, {20, 10}, {21, 10}, {9, 10}, {1, 10},
		{1, 0}, {1, 1}, {2, 1}, {3, maxWindowBuckets}, {19, 0},
		{maxWindowBuckets + 1, maxWindowBuckets}, {2*maxWindowBuckets - 1, maxWindowBuckets},
		{10*time.Second + 1, 10}, {time.Second, 7}, {time.Minute - 1, 0},
		{maxD, 1}, {maxD, 2}, {maxD, 10}, {maxD, maxWindowBuckets}, {maxD - 1, 7}, {maxD / 3, 3},
	}
	for _, p := range pairs {
		t.Run(fmt.Sprintf("d=%d/buckets=%d", p.d, p.buckets), func(t *testing.T) {
			s := Settings{FailureRateThreshold: 50, WindowDuration: p.d, WindowBuckets: p.buckets}
			require.NoError(t, s.Validate())
			n := s.normalize()
			w := newWindow(n)
			nb, width := int64(len(w.buckets)), w.bucketNs
			require.LessOrEqual(t, nb, int64(n.WindowBuckets), "more buckets than asked")
			require.Positive(t, width)
			span := new(big.Int).Mul(big.NewInt(nb), big.NewInt(width))
			d := big.NewInt(int64(p.d))
			require.True(t, span.Cmp(d) >= 0,
				"%d buckets of %dns span %v, less than WindowDuration %d", nb, width, span, p.d)
			over := new(big.Int).Sub(span, d)
			require.True(t, over.Cmp(big.NewInt(width)) < 0,
				"%d buckets of %dns span %v: a bucket or more beyond WindowDuration %d", nb, width, span, p.d)

			// A call dated at 0, the start of a bucket whatever its width.
			w.add(0, 0, true, false)
			calls, _, _ := w.totals(int64(p.d) - 1)
			require.Equal(t, 1, calls, "a call WindowDuration-1 old left the window")
			if span.IsInt64() {
				calls, _, _ = w.totals(span.Int64())
				require.Equal(t, 0, calls, "a call as old as the window's span is in it")
			}
		})
	}
}
