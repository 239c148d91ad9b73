package retry_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/retry"
	"github.com/stretchr/testify/require"
)

// TestClosedIsNotRetried pins a seam between retry and the primitives it
// wraps. A closed Queue or Pool never opens again, so an attempt that meets
// its ErrClosed cannot succeed on a later try; retrying it made a shutdown
// wait out the whole backoff (100 ms, then 200 ms, with the zero Policy)
// before the caller heard that the thing it used was gone. Right: such an
// error, wrapped or not, ends the call at once with Reason NotRetryable, as
// one marked Permanent does.
func TestClosedIsNotRetried(t *testing.T) {
	q := ctxsync.NewQueue[int](1)
	q.Close()
	p, err := pool.New(pool.Config[int]{
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
	})
	require.NoError(t, err)
	require.NoError(t, p.Close(t.Context()))
	attempts := map[string]func(context.Context) error{
		"Queue.Get": func(ctx context.Context) error { _, err := q.Get(ctx); return err },
		"Pool.Acquire": func(ctx context.Context) error {
			r, err := p.Acquire(ctx)
			if err == nil {
				r.Release()
			}
			return err
		},
		"wrapped": func(context.Context) error { return fmt.Errorf("fetch: %w", ctxsync.ErrClosed) },
		"joined":  func(context.Context) error { return errors.Join(errors.New("other"), pool.ErrClosed) },
	}
	for name, attempt := range attempts {
		t.Run(name, func(t *testing.T) {
			// In a bubble: the defect's waits take no real time.
			synctest.Test(t, func(t *testing.T) {
				n := 0
				err := retry.Policy{}.Execute(t.Context(), func(ctx context.Context) error {
					n++
					return attempt(ctx)
				})
				require.Equal(t, 1, n, "attempts")
				var re *retry.Error
				require.ErrorAs(t, err, &re)
				require.Equal(t, retry.NotRetryable, re.Reason)
			})
		})
	}
}

// TestHedgedClosedEndsTheCall: a hedged copy that meets a closed Queue ends
// the call at once, as a Permanent failure does, rather than leave the call
// waiting for a copy still in flight that cannot do better.
func TestHedgedClosedEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		q.Close()
		var calls atomic.Int32
		h := retry.Hedge{Delay: time.Millisecond, MaxHedges: 1, Budget: retry.NewBudget(1, 1e6)}
		_, err := retry.DoHedged(t.Context(), h, func(ctx context.Context) (int, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done() // the first copy hangs until the call ends
				return 0, ctx.Err()
			}
			return q.Get(ctx)
		})
		require.ErrorIs(t, err, ctxsync.ErrClosed)
		require.EqualValues(t, 2, calls.Load())
	})
}
