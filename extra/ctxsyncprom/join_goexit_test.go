package ctxsyncprom_test

import (
	"runtime"
	"testing"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/stretchr/testify/require"
)

// TestJoinedGoexitAfterPanic pins what JoinOnCall's and JoinPoolHooks' docs
// say of a hook that calls runtime.Goexit after an earlier hook panicked:
// the goroutine ends by Goexit, and the earlier panic is lost, as it is
// for deferred calls. Both hooks still run once.
func TestJoinedGoexitAfterPanic(t *testing.T) {
	var ran [2]int
	call := ctxsyncprom.JoinOnCall(
		func(breaker.CallEvent) { ran[0]++; panic("earlier hook's") },
		func(breaker.CallEvent) { ran[1]++; runtime.Goexit() },
	)
	panicked, exited := endsHow(func() { call(breaker.CallEvent{}) })
	require.Nil(t, panicked)
	require.True(t, exited)
	require.Equal(t, [2]int{1, 1}, ran)

	ran = [2]int{}
	h := ctxsyncprom.JoinPoolHooks(
		pool.Hooks{OnRelease: func() { ran[0]++; panic("earlier hook's") }},
		pool.Hooks{OnRelease: func() { ran[1]++; runtime.Goexit() }},
	)
	panicked, exited = endsHow(h.OnRelease)
	require.Nil(t, panicked)
	require.True(t, exited)
	require.Equal(t, [2]int{1, 1}, ran)
}
