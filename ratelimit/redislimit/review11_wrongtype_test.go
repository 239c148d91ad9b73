package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: a key of the Limiter's that holds a value of another type
// than a string (a hash, a list, a set: another program's, or a Prefix
// shared by mistake) failed the script with WRONGTYPE at every call, for
// good: under FailOpen, the default, the key was never limited again, and
// under FailClosed never allowed, each call counted as a failure of Redis
// (which was up). The script makes sane what it did not write, as
// TestStateCorrupt pins for strings that are not numbers: a value of
// another type is a full bucket, as they are, and the grant's SET replaces
// it. The same holds for the keys of Config.Limits.
func TestReview11WrongTypeIsAFullBucket(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		ctx := context.Background()
		for _, limits := range [][]Limit{nil, {{Rate: 1e-3, Burst: 3}}} {
			prefix := b.prefix + "wrongtype:"
			if limits != nil {
				prefix = b.prefix + "wrongtype-limits:"
			}
			l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Prefix: prefix, Limits: limits, Policy: FailClosed})
			for i, key := range l.keys("h") {
				switch i % 3 {
				case 0:
					require.NoError(t, c.HSet(ctx, key, "f", "v").Err())
				case 1:
					require.NoError(t, c.RPush(ctx, key, "x").Err())
				default:
					require.NoError(t, c.SAdd(ctx, key, "x").Err())
				}
				require.NoError(t, c.Expire(ctx, key, time.Minute).Err())
			}
			for i := range 2 {
				d, err := l.TakeContext(ctx, "h", 1)
				require.NoError(t, err, "event %d, Limits %v", i+1, limits)
				require.True(t, d.Allowed, "event %d, Limits %v", i+1, limits)
			}
			d, err := l.TakeContext(ctx, "h", 1)
			require.NoError(t, err)
			require.False(t, d.Allowed, "past the burst")
			require.Zero(t, l.Failures())
		}
	})
}
