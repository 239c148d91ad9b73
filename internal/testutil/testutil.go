// Package testutil holds helpers that the tests of several ctxsync packages
// share.
package testutil

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
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

// LockedRand returns a function that draws from [0, n) with a generator
// seeded with seed1 and seed2, safe for the goroutines of a hammer to share.
func LockedRand(seed1, seed2 uint64) func(n int64) int64 {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	var mu sync.Mutex
	return func(n int64) int64 {
		mu.Lock()
		defer mu.Unlock()
		return rng.Int64N(n)
	}
}
