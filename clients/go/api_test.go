package analytics

import (
	"bytes"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestAPIMatchesSnapshot fails when the exported API drifts from api.txt,
// the checked-in snapshot. After an intended change, refresh it with
// go test -run TestAPIMatchesSnapshot -update and read the diff.
func TestAPIMatchesSnapshot(t *testing.T) {
	got := renderAPI(t)
	if *update {
		if err := os.WriteFile("api.txt", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("api.txt")
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("exported API differs from api.txt (run with -update if intended)\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// renderAPI prints every exported declaration of the package, without
// comments or bodies, in go/doc's order.
func renderAPI(t *testing.T) []byte {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "analytics" {
			t.Fatalf("%s: package %s", name, f.Name.Name)
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/sluice-dev/sluice/clients/go")
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	out.WriteString("package analytics // import \"github.com/sluice-dev/sluice/clients/go\"\n")
	emit := func(node ast.Node) {
		// Comments are documentation, not API: drop them so rewording a
		// doc comment does not count as drift.
		ast.Inspect(node, func(n ast.Node) bool {
			if f, ok := n.(*ast.Field); ok {
				f.Doc, f.Comment = nil, nil
			}
			return true
		})
		out.WriteString("\n")
		cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
		if err := cfg.Fprint(&out, fset, node); err != nil {
			t.Fatal(err)
		}
		out.WriteString("\n")
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			emit(v.Decl)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			f.Decl.Body = nil
			emit(f.Decl)
		}
	}
	values(d.Consts)
	values(d.Vars)
	funcs(d.Funcs)
	for _, ty := range d.Types {
		emit(ty.Decl)
		values(ty.Consts)
		values(ty.Vars)
		funcs(ty.Funcs)
		funcs(ty.Methods)
	}
	return out.Bytes()
}
