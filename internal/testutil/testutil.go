// Package testutil holds helpers that the tests of several ctxsync packages
// share.
package testutil

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
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

// OneProcessor runs the rest of the test on one processor (GOMAXPROCS 1), and
// restores the setting when it ends. A goroutine made runnable then cannot
// run until the test's goroutine blocks, which lets a test end a waiter's ctx
// and hand it a grant before it runs again: the race between the two, made to
// happen every time. The tests of a package that uses it must not run in
// parallel.
func OneProcessor(t testing.TB) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}
