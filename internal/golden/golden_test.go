package golden

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCanonical(t *testing.T) {
	a := "[    0ms] producer queued job-1\n[    0ms] consumer 1 processes job-1\n[    3ms] b\n[    3ms] a\nkind  count\n"
	b := "[    0ms] consumer 1 processes job-1\n[    0ms] producer queued job-1\n[    3ms] a\n[    3ms] b\nkind  count\n"
	if canonical(a) != canonical(b) {
		t.Errorf("lines of one instant in another order compare unequal:\n%s\n%s", canonical(a), canonical(b))
	}
	for _, c := range []string{
		"[    0ms] a\n[    3ms] b\n",              // not the same instants
		"[    0ms] a\n[    0ms] b\n[    0ms] c\n", // a line more
		"[    0ms] a\n[    0ms] b\nkind  count\n", // the same lines but one
	} {
		if canonical(c) == canonical("[    3ms] a\n[    0ms] b\n") {
			t.Errorf("%q compares equal to a different story", c)
		}
	}
	// A line from another instant between two of the same stamp keeps them
	// apart: order across instants counts.
	if canonical("[    0ms] b\n[    1ms] x\n[    0ms] a\n") == canonical("[    0ms] a\n[    1ms] x\n[    0ms] b\n") {
		t.Error("lines of one stamp were reordered across a line of another")
	}
}
