package redislimit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVetReportsCopies: go vet's copylocks check reports a copy of a Limiter.
// Config, Limit and Handle are plain values, meant to be copied.
//
// The module keeps its own copy of this check rather than import ctxsync's
// internal helpers: a ctxsync release may change those at any time, and this
// module must build and test against every release it allows.
func TestVetReportsCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	const path = "github.com/ctxsync/ctxsync/ratelimit/redislimit"
	copyable := map[string]bool{path + ".Config": true, path + ".Limit": true, path + ".Handle": true}

	// vet fails when it reports: the output is what matters.
	out, _ := exec.Command(goCmd, "vet", "-copylocks", "./testdata/vetcopy").CombinedOutput()
	copied := make(map[string]bool)
	for _, m := range vetCopy.FindAllStringSubmatch(string(out), -1) {
		copied[m[1]] = true
	}
	if len(copied) == 0 {
		t.Fatalf("go vet reported no copy; its output:\n%s", out)
	}
	for _, typ := range exportedStructs(t, path, ".") {
		if !copyable[typ] && !copied[typ] {
			t.Errorf("go vet does not report a copy of %s (or testdata/vetcopy does not copy one)", typ)
		}
	}
}

// vetCopy matches a report of go vet's copylocks check and captures the type
// copied, type arguments left out.
var vetCopy = regexp.MustCompile(`copies lock value (?:to|from) [^:]*: ([^ \[]+)(?:\[.*?\])? contains`)

// exportedStructs returns the exported struct types declared in the Go files
// of dir, tests left out, as "importPath.Name".
func exportedStructs(t *testing.T, importPath, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var types []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
					types = append(types, importPath+"."+ts.Name.Name)
				}
			}
		}
	}
	return types
}
