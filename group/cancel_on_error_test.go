package group_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/group"
)

// CancelOnError with CollectAll: the first error cancels the others, and
// Wait returns every error, the first first.
func TestCancelOnErrorCollectsEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errFirst := errors.New("first")
		g, ctx := group.New(t.Context(), group.Options{CollectAll: true, CancelOnError: true})
		g.Go(func(context.Context) error {
			time.Sleep(time.Millisecond)
			return errFirst
		})
		for range 3 {
			g.Go(func(ctx context.Context) error {
				<-ctx.Done() // stopped early by the first error
				return ctx.Err()
			})
		}
		time.Sleep(2 * time.Millisecond)
		require.ErrorIs(t, g.Go(func(context.Context) error { return nil }), context.Canceled, "Go after the first error")
		start := time.Now()
		err := g.Wait()
		require.Zero(t, time.Since(start), "the others stopped at the first error")
		joined, ok := err.(interface{ Unwrap() []error })
		require.True(t, ok, "Wait = %v, want errors joined", err)
		errs := joined.Unwrap()
		require.Len(t, errs, 4)
		require.Same(t, errFirst, errs[0], "the first error first")
		for _, e := range errs[1:] {
			require.ErrorIs(t, e, context.Canceled)
		}
		require.Same(t, errFirst, context.Cause(ctx), "the group's ctx ends with the first error as its cause")
	})
}

// Without CollectAll, CancelOnError changes nothing.
func TestCancelOnErrorFailFast(t *testing.T) {
	errA := errors.New("a")
	g, _ := group.New(context.Background(), group.Options{CancelOnError: true, Limit: 1})
	g.Go(func(context.Context) error { return errA })
	require.Same(t, errA, g.Wait())
}

// A Go waiting for a slot when the first error comes returns the ctx's
// error and never runs its task.
func TestCancelOnErrorRefusesWaitingGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := group.New(t.Context(), group.Options{Limit: 1, CollectAll: true, CancelOnError: true})
		g.Go(func(context.Context) error {
			time.Sleep(time.Millisecond)
			return errors.New("fails")
		})
		ran := false
		err := g.Go(func(context.Context) error { ran = true; return nil })
		require.ErrorIs(t, err, context.Canceled)
		require.Error(t, g.Wait())
		require.False(t, ran)
	})
}

// Options.CancelOnError with CollectAll stops the other tasks at the first
// error, and still reports every error.
func ExampleOptions_cancelOnError() {
	g, _ := group.New(context.Background(), group.Options{CollectAll: true, CancelOnError: true})
	g.Go(func(ctx context.Context) error {
		<-ctx.Done() // the first error ends the others' work
		return fmt.Errorf("upload stopped: %w", context.Cause(ctx))
	})
	// Started second: once a task has failed, the group's ctx is done and
	// a Go after that starts nothing.
	g.Go(func(ctx context.Context) error { return errors.New("disk full") })
	fmt.Println(g.Wait())
	// Output:
	// disk full
	// upload stopped: disk full
}
