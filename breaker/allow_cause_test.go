package breaker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestAllowCauseIsNoFailure: Allow's done judges an error that is the cause
// its ctx ended with as the ctx's end, as Execute does (it counted a failure
// of the dependency where the caller had given up); and a ctx whose Err
// panics as done looks at it leaves no call in flight.
func TestAllowCauseIsNoFailure(t *testing.T) {
	b := New(Settings{FailureThreshold: 1})
	errBad := errors.New("a task failed")
	ctx, cancel := context.WithCancelCause(context.Background())
	done, err := b.Allow(ctx)
	require.NoError(t, err)
	cancel(errBad)
	done(fmt.Errorf("get: %w", errBad)) // as net/http fails with the cause
	m := b.Metrics()
	require.Equal(t, Closed, m.State)
	require.Zero(t, m.Total.Failures, "%+v", m.Total)
	require.EqualValues(t, 1, m.Total.Ignored, "%+v", m.Total)

	pctx := &testutil.OnceCtx{Context: context.Background(), PanicAt: 2} // Allow's look at it passes; done's panics
	done, err = b.Allow(pctx)
	require.NoError(t, err)
	require.Panics(t, func() { done(errBad) })
	m = b.Metrics()
	require.EqualValues(t, 1, m.Total.Failures, "the call's error, judged as it is: %+v", m.Total)
	require.Equal(t, Open, m.State)
}
