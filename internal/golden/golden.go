// Package golden compares the output of the example programs with the files
// under their testdata directories. Run their tests with -update to rewrite the
// files after an intended change, then read the diff.
//
// Lines stamped with the same instant by an example's timeline (each example
// prints "[  150ms] " before its lines, with a few lines of its own) may come
// in any order: in a testing/synctest bubble, goroutines that wake at one
// instant run in an order the scheduler picks, and the story is the same
// either way. The comparison sorts each run of such lines; everything else
// must match exactly.
package golden

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
)

var update = flag.Bool("update", false, "rewrite the golden files with the output of the tests")

// Check compares got with testdata/name.golden.
func Check(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if canonical(string(got)) != canonical(string(want)) {
		t.Errorf("output differs from %s (run with -update to accept it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// Run runs an example's run function, inside a testing/synctest bubble so
// that time is virtual and the output exact, and compares its output with
// testdata/output.golden.
func Run(t *testing.T, run func(io.Writer)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		run(&out)
		Check(t, "output", out.Bytes())
	})
}

// stamp matches the stamp that the examples' timelines put on a line.
var stamp = regexp.MustCompile(`^\[\s*-?\d+ms\] `)

// canonical sorts each run of consecutive lines that bear the same stamp.
func canonical(out string) string {
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); {
		st := stamp.FindString(lines[i])
		j := i + 1
		for st != "" && j < len(lines) && stamp.FindString(lines[j]) == st {
			j++
		}
		slices.Sort(lines[i:j])
		i = j
	}
	return strings.Join(lines, "\n")
}
