package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOutput runs the example in a testing/synctest bubble, as the others
// are (its own clock makes it deterministic outside one too), and compares
// its output with testdata/output.golden; run it with -update to accept a
// change.
func TestOutput(t *testing.T) { golden.Run(t, run) }
