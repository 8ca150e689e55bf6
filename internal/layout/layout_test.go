package layout_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/assayhq/assay"

type pkg struct {
	ImportPath string
	Dir        string
	Name       string
	Imports    []string
	GoFiles    []string
}

// list returns the module's packages as go list sees them.
func list(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// allowed maps a layer (a path prefix inside the module) to the layers its
// production code may import. A package may always import packages below
// its own path.
var allowed = map[string][]string{
	"wasm":       {},
	"checkers":   {"wasm"},
	"adjudicate": {"checkers", "wasm"},
	"runtime":    {"adjudicate", "checkers", "wasm"},
	"storage":    {"runtime"},
	"api":        {"runtime", "adjudicate", "checkers", "wasm", "internal/metrics"},
	"cmd":        {""}, // anything
	"internal":   {""},
	"fixtures":   {""},
	"e2e":        {""},
}

// leaves are packages any layer allowed them may import because they
// import nothing of the module's: internal/metrics holds the registry and
// every metric's definition, over the standard library and client_golang
// only, so that api records into it directly while the layers below api
// take func hooks that cmd wires to it.
var leaves = map[string]bool{
	module + "/internal/metrics": true,
}

// testHelpers are the packages for tests only: they may import testing,
// and production code never imports them.
var testHelpers = map[string]bool{
	module + "/internal/conformance": true,
	module + "/internal/pgtest":      true,
	module + "/storage/storetest":    true,
}

func layer(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	return strings.SplitN(rel, "/", 2)[0]
}

func TestImportArrows(t *testing.T) {
	for _, p := range list(t) {
		from := layer(p.ImportPath)
		ok, known := allowed[from]
		if !known {
			t.Errorf("%s: layer %q is not in the layout", p.ImportPath, from)
			continue
		}
		testOnly := testHelpers[p.ImportPath]
		if leaves[p.ImportPath] {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, module+"/") {
					t.Errorf("%s imports %s: a leaf imports nothing of the module", p.ImportPath, imp)
				}
			}
		}
		for _, imp := range p.Imports {
			if !testOnly && (imp == "testing" || strings.HasPrefix(imp, "testing/")) {
				t.Errorf("%s imports %s: production code never imports testing", p.ImportPath, imp)
			}
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			if strings.HasPrefix(imp+"/", p.ImportPath+"/") || layer(imp) == from && from != "runtime" {
				continue // its own layer
			}
			if layer(imp) == "cmd" || layer(imp) == "api" && from != "cmd" {
				t.Errorf("%s imports %s: nothing but cmd imports api, and nothing imports cmd", p.ImportPath, imp)
				continue
			}
			if testHelpers[imp] {
				t.Errorf("%s imports %s: it is for tests only", p.ImportPath, imp)
				continue
			}
			if from == "runtime" && layer(imp) == "runtime" {
				continue // the services share runtime's packages
			}
			permitted := false
			for _, a := range ok {
				if a == "" || to == a || strings.HasPrefix(to, a+"/") {
					permitted = true
				}
			}
			if !permitted {
				t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, imp, from, ok)
			}
		}
	}
}

// TestPackageComments: every package has exactly one package comment.
func TestPackageComments(t *testing.T) {
	for _, p := range list(t) {
		n := 0
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if file.Doc != nil && strings.TrimSpace(file.Doc.Text()) != "" && !strings.HasPrefix(file.Doc.Text(), "Code generated") {
				n++
			}
		}
		if len(p.GoFiles) > 0 && n != 1 {
			t.Errorf("%s has %d package comments, want 1", p.ImportPath, n)
		}
	}
}
