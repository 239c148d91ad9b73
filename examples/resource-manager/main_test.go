package main

import (
	"bufio"
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files with the output of the test")

// TestOutput runs the example in virtual time and compares its timeline with
// testdata/output.golden, and what its /metrics serves at the end (the
// ctxsync_ samples) with testdata/metrics.golden. Run it with -update to
// accept a change, then read the diff.
func TestOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		var out bytes.Buffer
		run(&out, reg)
		checkGolden(t, "output", out.Bytes())

		// The handler main serves, called in the bubble: a real listener
		// would keep a goroutine blocked on the network, which a bubble
		// does not wait out.
		rec := httptest.NewRecorder()
		metricsHandler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /metrics: %d\n%s", rec.Code, rec.Body)
		}
		checkGolden(t, "metrics", samples(t, rec.Body.Bytes()))
	})
}

// samples returns the ctxsync_ samples of a scrape, their values written
// with 10 significant digits: a histogram's sum of the same observations
// added in another order (goroutines woken at one instant run in any order)
// may differ in its last bits.
func samples(t *testing.T, scrape []byte) []byte {
	var b bytes.Buffer
	for sc := bufio.NewScanner(bytes.NewReader(scrape)); sc.Scan(); {
		line := sc.Text()
		if !strings.HasPrefix(line, "ctxsync_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		b.WriteString(line[:i+1] + strconv.FormatFloat(v, 'g', 10, 64) + "\n")
	}
	return b.Bytes()
}

// checkGolden compares got with testdata/name.golden, or with -update
// writes it there.
func checkGolden(t *testing.T, name string, got []byte) {
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

// stamp matches the stamp that the timeline puts on a line.
var stamp = regexp.MustCompile(`^\[\s*-?\d+ms\] `)

// canonical sorts each run of consecutive lines that bear the same stamp:
// goroutines that wake at one instant of a synctest bubble run in an order
// the scheduler picks, and the story is the same either way.
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
