package testutil

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

// vetCopy matches a report of go vet's copylocks check and captures the type
// copied, type arguments left out: "literal copies lock value from *q:
// example.com/m.Queue[int] contains ...", or "assignment copies lock value to
// x: ...".
var vetCopy = regexp.MustCompile(`copies lock value (?:to|from) [^:]*: ([^ \[]+)(?:\[.*?\])? contains`)

// VetReportsCopies fails the test unless go vet's copylocks check, run on the
// package in vetDir (a package that copies values it must not), reports a copy
// of every exported struct type declared in the packages of pkgs (import path
// to directory) but those in copyable, the plain values. The test is skipped
// when the go command is not at hand, or in -short mode.
func VetReportsCopies(t *testing.T, vetDir string, pkgs map[string]string, copyable map[string]bool) {
	t.Helper()
	copied := vetCopies(t, vetDir)
	for path, dir := range pkgs {
		for _, typ := range structTypes(t, path, dir) {
			if !copyable[typ] && !copied[typ] {
				t.Errorf("go vet does not report a copy of %s (or %s does not copy one)", typ, vetDir)
			}
		}
	}
}

// vetCopies runs go vet's copylocks check on the package in dir and returns
// the types that it reports a copy of, as "import/path.Name".
func vetCopies(t *testing.T, dir string) map[string]bool {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	// vet fails when it reports: the output is what matters.
	out, _ := exec.Command(goCmd, "vet", "-copylocks", "./"+dir).CombinedOutput()
	copied := make(map[string]bool)
	for _, m := range vetCopy.FindAllStringSubmatch(string(out), -1) {
		copied[m[1]] = true
	}
	if len(copied) == 0 {
		t.Fatalf("go vet reported no copy; its output:\n%s", out)
	}
	return copied
}

// structTypes returns the exported struct types declared in the Go files of
// dir, tests left out, as "importPath.Name".
func structTypes(t *testing.T, importPath, dir string) []string {
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
