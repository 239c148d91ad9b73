// Package testutil holds helpers that the tests of several ctxsync packages
// share.
package testutil

import (
	"context"
	"os"
	"strconv"
)

// HammerRounds scales the hammer tests: CTXSYNC_HAMMER=10 runs ten times as
// many rounds as base. The default keeps the whole suite short under -race.
func HammerRounds(base int) int {
	if v, err := strconv.Atoi(os.Getenv("CTXSYNC_HAMMER")); err == nil && v > 0 {
		return base * v
	}
	return base
}

// Cancelled returns a context that is already cancelled.
func Cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
