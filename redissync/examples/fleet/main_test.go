package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"
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
	var out strings.Builder
	if err := run(context.Background(), addr, &out); err != nil {
		t.Fatal(err)
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
