package redissync

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Regression: with a client without ContextTimeoutEnabled, each round trip
// of a call runs in a goroutine of its own (evalThen), where nothing
// recovers a panic: a client hook that panics ends the program, instead of
// reaching the caller of Acquire as it does with the other client and in
// a pipeline. The test runs itself in a child process to see the program
// end.
func TestReviewS4_HookPanicEndsProgramWithoutCtxTimeouts(t *testing.T) {
	if os.Getenv("REDISSYNC_TEST_S4_HOOK_PANIC") == "1" {
		// miniredis alone: a redis-server started here would outlive a
		// child that crashes.
		m := miniredis.RunT(t)
		m.ClockTTL(true)
		b := backend{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}
		c, h := hookedClient(t, b, false)
		s, err := NewLock(b.config(c, "hookgo", 1, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		warm(t, s)
		h.cmdPanics.Store(true)
		_, r, _ := acquireRecovering(func() (*Permit, error) { return s.Acquire(context.Background()) })
		if r != errHookPanic {
			t.Fatalf("Acquire panicked with %v; want the hook's panic", r)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewS4_HookPanicEndsProgramWithoutCtxTimeouts$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REDISSYNC_TEST_S4_HOOK_PANIC=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && strings.Contains(string(out), "panic: a client hook panics") {
		lines := strings.SplitN(string(out), "\n", 9)
		t.Fatalf("a client hook's panic ended the program instead of reaching Acquire's caller:\n%s", strings.Join(lines[:min(len(lines), 8)], "\n"))
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
