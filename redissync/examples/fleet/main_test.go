package main

import (
	"context"
	"os"
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
	if err := run(context.Background(), addr, os.Stdout); err != nil {
		t.Fatal(err)
	}
}
