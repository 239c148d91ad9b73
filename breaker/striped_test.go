package breaker

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStripedCount(t *testing.T) {
	var c stripedCount
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 1000 {
				c.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 16000, c.Load(), "every add counts once")
	require.EqualValues(t, 16000, c.Take())
	require.EqualValues(t, 0, c.Load())
	c.Add(-2)
	require.EqualValues(t, -2, c.Load())
}

func TestStripeInRange(t *testing.T) {
	seen := make(map[int]bool)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			i := stripe()
			require.GreaterOrEqual(t, i, 0)
			require.Less(t, i, stripes)
			mu.Lock()
			seen[i] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	// Goroutines' stacks are spread over the stripes, not piled on one.
	require.Greater(t, len(seen), 1)
}
