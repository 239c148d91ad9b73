package pool

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestCancelledAcquireNotHandedResource pins the rule that a waiter whose ctx
// has ended is never granted anything: an Acquire waiting for a full pool
// whose ctx is cancelled, and only then given a released resource, fails, and
// the resource goes back to the pool.
func TestCancelledAcquireNotHandedResource(t *testing.T) {
	for round := range testutil.HammerRounds(1000) {
		p := mustNew(t, Config[int]{
			New:     func(context.Context) (int, error) { return 1, nil },
			MaxSize: 1,
		})
		held, err := p.Acquire(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		freed := make(chan struct{})
		go func() {
			defer close(freed)
			for range round % 3 {
				runtime.Gosched()
			}
			cancel()
			held.Release()
		}()
		r, err := p.Acquire(ctx)
		<-freed
		require.Equal(t, context.Canceled, err, "round %d: handed a resource released after its ctx ended", round)
		require.Nil(t, r)
		r, ok := p.TryAcquire()
		require.True(t, ok, "round %d: the resource is idle again", round)
		r.Release()
		require.NoError(t, p.Close(context.Background()))
	}
}
