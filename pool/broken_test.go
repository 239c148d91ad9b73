package pool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithBrokenNeverReused: a resource that fn found broken, by the default
// rule (an error wrapping ErrBroken or driver.ErrBadConn), is closed, never
// handed to the next caller; other errors keep it.
func TestWithBrokenNeverReused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err    error
		broken bool
	}{
		{nil, false},
		{errors.New("row not found"), false},
		{context.Canceled, false},
		{fmt.Errorf("read: %w", ErrBroken), true},
		{fmt.Errorf("query: %w", driver.ErrBadConn), true},
		{errors.Join(errors.New("x"), ErrBroken), true},
	} {
		l := newLedger()
		p := mustNew(t, l.config(1))
		var first *conn
		require.Equal(t, tc.err, p.With(ctx, func(c *conn) error { first = c; return tc.err }))
		var next *conn
		require.NoError(t, p.With(ctx, func(c *conn) error { next = c; return nil }))
		if tc.broken {
			require.NotEqual(t, first.id, next.id, "a broken resource went to the next caller (%v)", tc.err)
			require.Equal(t, int64(1), p.Stats().ClosedDestroy)
		} else {
			require.Equal(t, first.id, next.id, "a resource closed for %v", tc.err)
		}
		require.NoError(t, p.Close(ctx))
		l.check(t)
	}
}

// TestWithBrokenKnob: Config.Broken decides, from the value and fn's error
// (nil included); a Broken that panics destroys the resource, and the panic
// reaches With's caller.
func TestWithBrokenKnob(t *testing.T) {
	ctx := context.Background()
	l := newLedger()
	cfg := l.config(1)
	type seen struct {
		id  int
		err error
	}
	var calls []seen
	cfg.Broken = func(c *conn, err error) bool {
		calls = append(calls, seen{c.id, err})
		if errors.Is(err, errBoom) {
			panic("broken exploded")
		}
		return !c.healthy.Load()
	}
	p := mustNew(t, cfg)
	require.NoError(t, p.With(ctx, func(c *conn) error { return nil }))
	require.Equal(t, []seen{{1, nil}}, calls)
	require.NoError(t, p.With(ctx, func(c *conn) error { c.healthy.Store(false); return nil }))
	require.Equal(t, int64(1), p.Stats().ClosedDestroy, "Broken said broken")
	require.PanicsWithValue(t, "broken exploded", func() {
		_ = p.With(ctx, func(*conn) error { return errBoom })
	})
	requireWhole(t, p)
	require.Equal(t, int64(2), p.Stats().ClosedDestroy, "kept a resource whose Broken panicked")
	require.NoError(t, p.Close(ctx))
	l.check(t)
}
