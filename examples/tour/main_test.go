package main

import (
	"bytes"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTour runs the tour in virtual time, where its output is exact.
func TestTour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		run(&out)
		golden.Check(t, "tour", out.Bytes())
	})
}
