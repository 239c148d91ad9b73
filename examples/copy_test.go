// Package examples_test checks that every example copies as it is: each is one
// main.go that builds in a user's module after go get github.com/ctxsync/ctxsync
// alone, with no helper of this repository; or, for an example that is a
// module of its own (one that needs more than the library, as
// resource-manager needs extra/ctxsyncprom and client_golang), after go get
// of what its go.mod requires.
package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestExamplesBuildWhenCopied copies each example's main.go into a fresh
// module that requires github.com/ctxsync/ctxsync (served from this working
// tree by a replace directive, as the published module would be), and builds
// it there, with no go.work. An example with a go.mod of its own is copied
// with its go.mod and go.sum, each module of this repository that it requires
// served from the working tree the same way.
func TestExamplesBuildWhenCopied(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" || e.Name() == "testdata" {
			continue
		}
		name := e.Name()
		n++
		t.Run(name, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(name, "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if base := filepath.Base(f); base != "main.go" && !strings.HasSuffix(base, "_test.go") {
					t.Errorf("%s: an example is one main.go (and its tests): a user copies one file", f)
				}
			}
			src, err := os.ReadFile(filepath.Join(name, "main.go"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			copied := map[string][]byte{
				"go.mod": []byte("module example.com/copied\n\ngo 1.25\n\n" +
					"require github.com/ctxsync/ctxsync v0.0.0\n\n" +
					"replace github.com/ctxsync/ctxsync => " + root + "\n"),
				"go.sum":  sum, // the library's own requirements
				"main.go": src,
			}
			if gomod, err := os.ReadFile(filepath.Join(name, "go.mod")); err == nil {
				copied["go.mod"] = ownModule(t, root, gomod)
				if copied["go.sum"], err = os.ReadFile(filepath.Join(name, "go.sum")); err != nil {
					t.Fatalf("%s has a go.mod but no go.sum: %v", name, err)
				}
			}
			for file, data := range copied {
				if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(goCmd, "build", "-o", os.DevNull, ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
			if out, err := cmd.CombinedOutput(); err != nil {
				hint := ""
				if strings.Contains(string(out), "use of internal package") {
					hint = "\n(an example may import no helper of this repository: give it its own few lines, as the timeline at the end of examples/pipeline/main.go)"
				}
				t.Errorf("%s/main.go does not build when copied into a module that requires only github.com/ctxsync/ctxsync (or, for an example with a go.mod, what it requires): %v\n%s%s", name, err, out, hint)
			}
		})
	}
	if n == 0 {
		t.Fatal("found no example")
	}
}

// ownModule returns the go.mod of an example that is a module of its own, as a
// user's module that requires the same: each module of this repository that it
// requires (github.com/ctxsync/ctxsync and those under it, at a version not
// yet published) replaced by its directory in the working tree.
func ownModule(t *testing.T, root string, gomod []byte) []byte {
	t.Helper()
	const lib = "github.com/ctxsync/ctxsync"
	var b strings.Builder
	b.Write(gomod)
	b.WriteString("\n")
	for line := range strings.Lines(string(gomod)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) < 2 || (f[0] != lib && !strings.HasPrefix(f[0], lib+"/")) {
			continue
		}
		if strings.Contains(line, "=>") {
			t.Fatalf("an example's go.mod replaces %s: a user's build would ignore it", f[0])
		}
		b.WriteString("replace " + f[0] + " => " + filepath.Join(root, strings.TrimPrefix(f[0], lib)) + "\n")
	}
	return []byte(b.String())
}
