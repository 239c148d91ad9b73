package examples_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeListsEveryExample: the README's Examples table is where a new
// user learns which example shows what, and it left out four of them
// (cache-stampede, config-reload, hedged-fetch, per-account), the only ones
// that show Flight, Lazy, Watch and KeyedLock in use. Every example that
// `go run ./examples/<name>` runs has a row, linked to its main.go.
func TestReadmeListsEveryExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "tour" { // the tour has the quick start's line
			continue
		}
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); err != nil {
			continue
		}
		row := "| [" + e.Name() + "](examples/" + e.Name() + "/main.go) |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md's Examples table has no row %q", row)
		}
	}
}

// TestReadmeTourClaim: the quick start said that `go run ./examples/tour`
// "walks through every primitive", and the tour shows ten of the package's
// fifteen types and none of Flight, Lazy, WaitGroup, Watch and KeyedLock. The
// README names what the tour leaves to the other examples.
func TestReadmeTourClaim(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	tour, err := os.ReadFile(filepath.Join("tour", "testdata", "output.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "walks through every primitive") {
		return
	}
	for _, p := range []string{"Flight", "Lazy", "WaitGroup", "Watch", "KeyedLock"} {
		if !strings.Contains(string(tour), "== "+p) {
			t.Errorf("README.md says the tour walks through every primitive; it has no section on %s", p)
		}
	}
}
