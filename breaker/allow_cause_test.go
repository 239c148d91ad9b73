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

// TestOnCallGetsTheCallsError: a call judged as its ctx's end because it
// failed with the ctx's cause is reported to OnCall with the call's own
// error, as CallEvent.Err says, not the breaker's judging of it.
func TestOnCallGetsTheCallsError(t *testing.T) {
	var got []error
	b := New(Settings{OnCall: func(e CallEvent) { got = append(got, e.Err) }})
	errBad := errors.New("a task failed")
	failed := fmt.Errorf("get: %w", errBad)
	ctx, cancel := context.WithCancelCause(context.Background())
	done, err := b.Allow(ctx)
	require.NoError(t, err)
	cancel(errBad)
	done(failed)
	require.Len(t, got, 1)
	require.Same(t, failed, got[0])
	require.EqualValues(t, 1, b.Metrics().Total.Ignored)
}
