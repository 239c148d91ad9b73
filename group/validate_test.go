package group_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/group"
)

// TestOptionsValidate: Validate reports what New panics on, with the same
// message, and accepts what New takes.
func TestOptionsValidate(t *testing.T) {
	for _, limit := range []int{-1, math.MinInt} {
		opts := group.Options{Limit: limit}
		err := opts.Validate()
		require.EqualError(t, err, "group: New with negative Limit")
		require.PanicsWithValue(t, err.Error(), func() { group.New(context.Background(), opts) })
	}
	for _, limit := range []int{0, 1, math.MaxInt} {
		opts := group.Options{Limit: limit, CollectAll: true}
		require.NoError(t, opts.Validate())
		g, _ := group.New(context.Background(), opts)
		require.NoError(t, g.Wait())
	}
}
