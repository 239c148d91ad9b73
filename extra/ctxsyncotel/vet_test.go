package ctxsyncotel_test

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

// TestVetReportsCopies: go vet's copylocks check reports a copy of every
// exported struct type (their Observe guards are atomic). The module keeps
// its own copy of the check, as it imports nothing internal of ctxsync.
func TestVetReportsCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, _ := exec.Command(goCmd, "vet", "-copylocks", "./testdata/vetcopy").CombinedOutput()
	copied := make(map[string]bool)
	for _, m := range vetCopy.FindAllStringSubmatch(string(out), -1) {
		copied[m[1]] = true
	}
	if len(copied) == 0 {
		t.Fatalf("go vet reported no copy; its output:\n%s", out)
	}
	types := exportedStructs(t, "github.com/ctxsync/ctxsync/extra/ctxsyncotel", ".")
	if len(types) == 0 {
		t.Fatal("found no exported struct type")
	}
	for _, typ := range types {
		if !copied[typ] {
			t.Errorf("go vet does not report a copy of %s (or testdata/vetcopy does not copy one)", typ)
		}
	}
}

var vetCopy = regexp.MustCompile(`copies lock value (?:to|from) [^:]*: ([^ \[]+)(?:\[.*?\])? contains`)

// exportedStructs returns the exported struct types of the non-test Go files
// of dir, as "importPath.Name".
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
