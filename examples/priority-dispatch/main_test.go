package main

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOutput runs the example in virtual time and compares its output with
// testdata/output.golden; run it with -update to accept a change.
func TestOutput(t *testing.T) { golden.Run(t, run) }

// TestWorkerStopsWhenCtxEnds: a worker whose ctx ends stops, rather than spin
// on the zero task that the failed Get returns.
func TestWorkerStopsWhenCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		q := ctxsync.NewPriorityQueue[task](0) // open, and empty
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		work(ctx, newTimeline(&out, time.Millisecond), 1, q)
		if want := "[   10ms] worker 1 stops: context deadline exceeded\n"; out.String() != want {
			t.Errorf("output %q, want %q", out.String(), want)
		}
	})
}
