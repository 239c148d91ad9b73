package breaker

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewM10ExecuteCtxPanicJudgesFnError: Execute now looks at its ctx
// after fn returned an error (is it the cause the ctx ended with?), and if
// the ctx panics there, it records the call as it records a panic of fn: a
// failure of the dependency. But fn returned, and its error is known: here
// one IsFailure says is no failure (a 404 of the caller's), and a breaker
// of one failure opens, for every caller, on a bug of one caller's ctx.
// Allow's done, for the same panic, judges the error as it is (see
// TestAllowCauseIsNoFailure); Allow's doc says it judges as Execute does.
// Right: Execute judges fn's error as it is, and the panic goes on.
func TestReviewM10ExecuteCtxPanicJudgesFnError(t *testing.T) {
	errNotFound := errors.New("not found")
	for _, fast := range []bool{true, false} {
		s := Settings{FailureThreshold: 1, IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) }}
		if !fast {
			s.OnCall = func(CallEvent) {} // off the fast path
		}
		b := New(s)
		ctx := &testutil.ArmedCtx{Context: context.Background()}
		p := testutil.PanicOf(func() {
			_ = b.Execute(ctx, func(context.Context) error {
				ctx.Arm()
				return errNotFound
			})
		})
		require.Equal(t, testutil.ErrCtxPanic, p, "fast=%v", fast)
		m := b.Metrics()
		require.Zero(t, m.Total.Failures, "fast=%v: fn's error is no failure: %+v", fast, m.Total)
		require.Equal(t, Closed, m.State, "fast=%v", fast)
	}
}
