package ctxsyncprom_test

import (
	"runtime"
	"testing"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
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
	if panicked != nil || !exited || ran != [2]int{1, 1} {
		t.Fatalf("JoinOnCall: panicked %v, exited %v, ran %v; want no panic, Goexit, each once", panicked, exited, ran)
	}

	ran = [2]int{}
	h := ctxsyncprom.JoinPoolHooks(
		pool.Hooks{OnRelease: func() { ran[0]++; panic("earlier hook's") }},
		pool.Hooks{OnRelease: func() { ran[1]++; runtime.Goexit() }},
	)
	panicked, exited = endsHow(h.OnRelease)
	if panicked != nil || !exited || ran != [2]int{1, 1} {
		t.Fatalf("JoinPoolHooks: panicked %v, exited %v, ran %v; want no panic, Goexit, each once", panicked, exited, ran)
	}
}
