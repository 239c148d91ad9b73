package redislimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAcrossBubbles: a Limiter made outside a synctest bubble works inside
// one, pipelines included, and one made inside keeps working after it.
func TestAcrossBubbles(t *testing.T) {
	b := backends(t)[0]
	c := b.client(t)
	ctx := context.Background()
	outside := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 100, Prefix: "outside:", MaxRoundTrips: 1})
	_, err := outside.TakeContext(ctx, "warm", 1) // the connection, made outside
	require.NoError(t, err)
	var inside *Limiter
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				d, err := outside.TakeContext(ctx, "k", 1)
				assert.NoError(t, err)
				assert.True(t, d.Allowed)
			})
		}
		wg.Wait()
		require.NoError(t, outside.Reset(ctx, "k"))
		var err error
		inside, err = New(Config{Client: c, Rate: 1e-3, Burst: 100, Prefix: "inside:", MaxRoundTrips: 1, Timeout: time.Minute})
		require.NoError(t, err)
		d, err := inside.TakeContext(ctx, "k", 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			d, err := inside.TakeContext(ctx, "k", 1)
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
		})
	}
	wg.Wait()
	d, err := inside.TakeContext(ctx, "k", 1)
	require.NoError(t, err)
	require.Equal(t, 90, d.Remaining)
}
