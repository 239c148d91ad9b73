//go:build !race

package ctxsync

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRLockReleaseCountABA: RLock looks at ctx once when the count of
// writers' releases is the same in the state it loaded before the look and in
// the state its take returned. The count has 30 bits, so 2³⁰ releases between
// the load and the take bring it back to where it was. That is no sleep
// through: a ctx's Err is the caller's code, and a writer's Lock and Unlock
// cost about 10 ns, so the wrap comes within seconds of a look that blocks
// (or of a goroutine descheduled that long). Here the ctx ends during the
// look and writers take and free the lock 2³⁰ times: the lock the reader
// finds was freed after its ctx ended, and it must not get it (as it does not
// after one release, see TestRWLockReleaseCountWraps). Wrong: RLock returns
// nil, holding the lock. (About 15 s on 2 cores: skipped with -short, and
// left out under -race, which would take minutes.)
func TestRLockReleaseCountABA(t *testing.T) {
	if testing.Short() {
		t.Skip("2³⁰ writer releases")
	}
	var rw RWLock
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &onceErrCtx{Context: inner, hook: func() {
		cancel()
		for range 1 << 30 {
			rw.TryLock()
			rw.Unlock()
		}
	}}
	require.Equal(t, context.Canceled, rw.RLock(ctx), "got a lock freed after its ctx ended")
	require.True(t, rw.TryLock(), "given back")
	rw.Unlock()
}
