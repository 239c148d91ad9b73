package testutil

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// childEnv names the variable that tells a test binary started by RunChild
// which test it runs as a child.
const childEnv = "CTXSYNC_TEST_CHILD"

// InChild reports whether t runs in the child process that RunChild started
// for it: the test then plays the scenario, and its parent judges the end.
func InChild(t testing.TB) bool {
	return os.Getenv(childEnv) == t.Name()
}

// RunChild runs t (a top-level test) again, alone, in a child process of the
// test binary, where InChild(t) is true, and returns the child's combined
// output and its error. It is for a scenario that ends the process (a fatal
// error of the runtime, which no recover catches) or stops it (a synctest
// bubble whose clock has stopped, which a watchdog in the child ends).
// RunChild skips t under -short.
func RunChild(t *testing.T) ([]byte, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	return cmd.CombinedOutput()
}

// DocText returns the text of a source file of the package under test with
// the comment markers taken out and its white space collapsed, so that a
// phrase of a doc comment is found wherever its lines wrap.
func DocText(t testing.TB, file string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", " ")), " ")
}
