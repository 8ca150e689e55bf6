package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorCodes_Named: every error code api/ gives is a named constant
// (errors.go), never a string literal at the site.
func TestErrorCodes_Named(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		literal := func(e ast.Expr) {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				t.Errorf("%s: the error code %s is a literal: name it in errors.go", fset.Position(lit.Pos()), lit.Value)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr: // fault.New(kind, code, …), fault.Wrap(kind, code, err)
					if x, ok := fn.X.(*ast.Ident); ok && x.Name == "fault" && (fn.Sel.Name == "New" || fn.Sel.Name == "Wrap") && len(n.Args) > 1 {
						literal(n.Args[1])
					}
				case *ast.Ident: // writeError(c, status, code, …), answerAndDrain, unauthorized(code, …)
					switch fn.Name {
					case "writeError", "answerAndDrain":
						literal(n.Args[2])
					case "unauthorized":
						literal(n.Args[0])
					}
				}
			case *ast.KeyValueExpr: // statusError{code: …}, fault.Error{Code: …}, errorCode{Code: …}
				if k, ok := n.Key.(*ast.Ident); ok && (k.Name == "code" || k.Name == "Code") {
					literal(n.Value)
				}
			}
			return true
		})
	}
}
