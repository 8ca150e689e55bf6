package layout_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
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
	"runtime":    {"adjudicate", "checkers", "wasm"}, // wasm and checkers narrowed by TestRuntimeHoldsNoSandbox
	"storage":    {"runtime"},
	"api":        {"runtime", "adjudicate", "web", "internal/metrics"},
	"web":        {},   // the console's embedded files: imports nothing of the project
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
	module + "/internal/wasmtest":    true,
	module + "/storage/storetest":    true,
}

func layer(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	return strings.SplitN(rel, "/", 2)[0]
}

func TestImportArrows(t *testing.T) {
	t.Parallel()
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

// runtimeWasm is what runtime's production code may name from wasm: the
// outcome model (Outcome, its Kind and the Kind constants) and what a run
// is given (Input, Limits). Never Sandbox, NewSandbox or Config: runtime
// neither builds nor holds a sandbox.
var runtimeWasm = map[string]bool{"Outcome": true, "Kind": true, "Input": true, "Limits": true}

// runtimeCheckersNever is what runtime's production code may not name
// from checkers: building a Runner (it is handed one, as an interface of
// its own) or validating in a sandbox. *checkers.Runner itself may appear
// only in an interface guard, var _ I = (*checkers.Runner)(nil).
var runtimeCheckersNever = map[string]bool{"NewRunner": true, "RunnerOption": true, "WithMemo": true,
	"WithPool": true, "NewPool": true, "Validate": true}

// TestRuntimeHoldsNoSandbox: runtime uses wasm's outcome types at most and
// never builds or holds a sandbox or a runner; the server wires one runner
// (cmd/assay) and hands it to the services.
func TestRuntimeHoldsNoSandbox(t *testing.T) {
	t.Parallel()
	for _, p := range list(t) {
		if layer(p.ImportPath) != "runtime" {
			continue
		}
		for _, f := range p.GoFiles {
			path := filepath.Join(p.Dir, f)
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range violations(file) {
				t.Errorf("%s: %s", path, v)
			}
		}
	}
}

// violations lists what file names from wasm and checkers against
// runtimeWasm and runtimeCheckersNever.
func violations(file *ast.File) []string {
	names := map[string]string{} // local name -> wasm or checkers
	for _, imp := range file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		for _, l := range []string{"wasm", "checkers"} {
			if path == module+"/"+l {
				name := l
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = l
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	guards := map[*ast.SelectorExpr]bool{} // *checkers.Runner inside var _ I = (*checkers.Runner)(nil)
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != len(vs.Values) {
			return true
		}
		for i, name := range vs.Names {
			if name.Name != "_" {
				continue
			}
			// (*X)(nil): a conversion of nil to a pointer type.
			if call, ok := vs.Values[i].(*ast.CallExpr); ok && len(call.Args) == 1 {
				if paren, ok := call.Fun.(*ast.ParenExpr); ok {
					if star, ok := paren.X.(*ast.StarExpr); ok {
						if sel, ok := star.X.(*ast.SelectorExpr); ok {
							guards[sel] = true
						}
					}
				}
			}
		}
		return true
	})
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch names[id.Name] {
		case "wasm":
			if name := sel.Sel.Name; !runtimeWasm[name] && !strings.HasPrefix(name, "Kind") {
				out = append(out, fmt.Sprintf("names wasm.%s: runtime may name only wasm's outcome types (Outcome, Kind*, Input, Limits)", name))
			}
		case "checkers":
			if name := sel.Sel.Name; runtimeCheckersNever[name] || name == "Runner" && !guards[sel] {
				out = append(out, fmt.Sprintf("names checkers.%s: runtime is handed the server's runner as an interface; it never builds or holds one", name))
			}
		}
		return true
	})
	return out
}

// apiNever is what api's production code may not name from the runtime:
// a service's concrete type, or what builds one. api calls the services
// through the small interfaces it declares where it uses them
// (api/services.go); cmd/assay hands it the runtime's services.
var apiNever = map[string]map[string]bool{
	"escrow":    {"Service": true, "New": true},
	"market":    {"Service": true, "New": true, "NewWithRunner": true},
	"matters":   {"Service": true, "New": true},
	"replays":   {"Service": true, "NewService": true, "Library": true, "NewLibrary": true, "Worker": true, "NewWorker": true},
	"principal": {"Registry": true, "New": true},
	"store":     {"Store": true},
	"translog":  {"Log": true, "New": true},
}

// TestAPINamesNoService: api's production code names no concrete service
// type of the runtime, and builds none.
func TestAPINamesNoService(t *testing.T) {
	for _, p := range list(t) {
		if layer(p.ImportPath) != "api" {
			continue
		}
		for _, f := range p.GoFiles {
			path := filepath.Join(p.Dir, f)
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range serviceNames(file) {
				t.Errorf("%s: %s", path, v)
			}
		}
	}
}

// serviceNames lists what file names of apiNever.
func serviceNames(file *ast.File) []string {
	names := map[string]string{} // local name -> runtime package
	for _, imp := range file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		pkg, ok := strings.CutPrefix(path, module+"/runtime/")
		if !ok || apiNever[pkg] == nil {
			continue
		}
		name := pkg
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = pkg
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && apiNever[names[id.Name]][sel.Sel.Name] {
			out = append(out, fmt.Sprintf("names %s.%s: api calls the services through the interfaces it declares (api/services.go)", names[id.Name], sel.Sel.Name))
		}
		return true
	})
	return out
}

// TestViolations: the rule catches what it is for, and passes what runtime
// may do.
func TestViolations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src  string
		want int
	}{
		{`package p; import "github.com/assayhq/assay/wasm"; var o wasm.Outcome; var k = wasm.KindTimeout; func f(wasm.Input, wasm.Limits) {}`, 0},
		{`package p; import "github.com/assayhq/assay/wasm"; var sb *wasm.Sandbox`, 1},
		{`package p; import w "github.com/assayhq/assay/wasm"; var _, _ = w.NewSandbox(nil, w.Config{})`, 2},
		{`package p; import "github.com/assayhq/assay/checkers"; type R interface{ Run() }; var _ R = (*checkers.Runner)(nil); var ref checkers.Ref`, 0},
		{`package p; import "github.com/assayhq/assay/checkers"; type S struct{ r *checkers.Runner }`, 1},
		{`package p; import "github.com/assayhq/assay/checkers"; var r = checkers.NewRunner(nil, nil, checkers.WithMemo(nil))`, 2},
		{`package p; import "github.com/assayhq/assay/checkers"; var err = checkers.Validate(nil, nil, "", nil)`, 1},
	} {
		file, err := parser.ParseFile(token.NewFileSet(), "p.go", c.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if got := violations(file); len(got) != c.want {
			t.Errorf("%s: %d violations %q, want %d", c.src, len(got), got, c.want)
		}
	}
	for _, c := range []struct {
		src  string
		want int
	}{
		{`package p; import "github.com/assayhq/assay/runtime/escrow"; type Court interface{ Get() *escrow.Contract }`, 0},
		{`package p; import "github.com/assayhq/assay/runtime/escrow"; type Config struct{ Court *escrow.Service }`, 1},
		{`package p; import m "github.com/assayhq/assay/runtime/market"; var _, _ = m.New(m.Config{})`, 1},
		{`package p; import "github.com/assayhq/assay/runtime/principal"; var r *principal.Registry; var a principal.Actor`, 1},
	} {
		file, err := parser.ParseFile(token.NewFileSet(), "p.go", c.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if got := serviceNames(file); len(got) != c.want {
			t.Errorf("%s: %d violations %q, want %d", c.src, len(got), got, c.want)
		}
	}
}

// TestPackageComments: every package has exactly one package comment.
func TestPackageComments(t *testing.T) {
	t.Parallel()
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
