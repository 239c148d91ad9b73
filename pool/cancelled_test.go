package pool

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

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

// TestCtxEndsDuringPassingCheckNotHandedResource: a caller whose ctx ends
// while its resource's health check runs, a check that passes anyway (it does
// not look at ctx), is not handed the resource: Acquire returns ctx.Err() and
// the healthy resource goes back to the pool.
func TestCtxEndsDuringPassingCheckNotHandedResource(t *testing.T) {
	var cancel context.CancelFunc
	p := mustNew(t, Config[int]{
		New: func(context.Context) (int, error) { return 1, nil },
		HealthCheck: func(context.Context, int) error {
			if cancel != nil {
				cancel() // the caller gives up while its resource is checked
			}
			return nil
		},
		HealthCheckSkip: -1,
		MaxSize:         1,
	})
	r, err := p.Acquire(context.Background())
	require.NoError(t, err)
	r.Release()
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	r, err = p.Acquire(ctx)
	require.Error(t, ctx.Err(), "ctx ended during the check")
	require.Equal(t, context.Canceled, err, "a resource handed to an Acquire whose ctx had ended")
	require.Nil(t, r)
	s := p.Stats()
	require.Equal(t, 1, s.Idle, "the checked resource is back in the pool: %+v", s)
	require.Equal(t, int64(1), s.AcquireCount, "%+v", s)
	require.Equal(t, int64(1), s.CanceledAcquires, "%+v", s)
	require.NoError(t, p.Close(context.Background()))
}

// TestCtxEndsDuringPauseCounted: an Acquire that finds the pool full pauses
// before it queues (waitq.Pause); one whose ctx ends then is counted in
// CanceledAcquires like one whose ctx ends in the queue.
func TestCtxEndsDuringPauseCounted(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { _, err := p.Acquire(ctx); errc <- err }()
		runtime.Gosched() // it runs until its pause
		cancel()
		require.Equal(t, context.Canceled, <-errc)
		s := p.Stats()
		require.Equal(t, int64(1), s.WaitCount, "%+v", s)
		require.Equal(t, int64(1), s.CanceledAcquires, "an Acquire that ended with its ctx, uncounted: %+v", s)
		r.Release()
		require.NoError(t, p.Close(t.Context()))
	})
}
