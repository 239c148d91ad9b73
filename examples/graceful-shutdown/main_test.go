package main

import (
	"context"
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOutput runs the example in virtual time, with no signal (the demo stops
// itself), and compares its output with testdata/output.golden; run it with
// -update to accept a change.
func TestOutput(t *testing.T) {
	golden.Run(t, func(w io.Writer) { run(context.Background(), w) })
}
