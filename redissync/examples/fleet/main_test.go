package main

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/redissync"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example against an embedded Redis (or REDIS_ADDR's).
func TestRun(t *testing.T) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		srv := miniredis.RunT(t)
		srv.ClockTTL(true)
		addr = srv.Addr()
	}
	// A round trip the program's Timeout (a second) does not see answered
	// fails its call with ErrUnavailable, as the package promises; a
	// machine loaded enough to stall the test for a second makes one now
	// and then. The run is then made again, under names of its own: what
	// is checked is what a run that Redis answered prints.
	var out strings.Builder
	for try := 1; ; try++ {
		out.Reset()
		err := run(context.Background(), addr, &out)
		if err == nil {
			break
		}
		if !errors.Is(err, redissync.ErrUnavailable) || try == 5 {
			t.Fatal(err)
		}
		t.Logf("run %d: %v; again", try, err)
	}
	got := out.String()
	for _, re := range []string{
		`(?m)^nightly report: run by 1 instance, skipped by 3$`,
		`(?m)^licensed API: 12 calls from 4 instances, at most [12] at once$`,
		`(?m)^ledger: "balance 120" kept; the late write refused \(token 1, below 2\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("output does not match %s:\n%s", re, got)
		}
	}
}
