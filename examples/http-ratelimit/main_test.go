package main

import (
	"bytes"
	"testing"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOutput runs the example and compares its output with
// testdata/output.golden; run it with -update to accept a change. It runs in
// real time, since the example talks to a real (loopback) server, which a
// synctest bubble cannot.
func TestOutput(t *testing.T) {
	var out bytes.Buffer
	run(&out)
	golden.Check(t, "output", out.Bytes())
}
