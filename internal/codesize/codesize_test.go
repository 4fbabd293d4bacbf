package codesize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// notYet lists folders the test skips while they are being split into
// smaller rooms; none now.
var notYet = map[string]bool{}

// TestCodeSize: no non-test Go file of the module is over MaxFileLines
// lines and no function (declared or literal) is over MaxFuncLines lines,
// counting from its func keyword to its closing brace.
func TestCodeSize(t *testing.T) {
	root := moduleRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if name == ".git" || name == "testdata" || name == "vendor" || (strings.HasPrefix(name, ".") && path != root) || notYet[filepath.ToSlash(rel)] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		checkFile(t, path, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s: is the walk wrong?", checked, root)
	}
}

func checkFile(t *testing.T, path, rel string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s: %v", rel, err)
		return
	}
	if n := fset.File(f.Pos()).LineCount(); n > MaxFileLines {
		t.Errorf("%s: %d lines, over the limit of %d: split it by concept", rel, n, MaxFileLines)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		var body *ast.BlockStmt
		switch fn := n.(type) {
		case *ast.FuncDecl:
			name, body = fn.Name.Name, fn.Body
			if fn.Recv != nil && len(fn.Recv.List) > 0 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
		case *ast.FuncLit:
			name, body = "func literal", fn.Body
		}
		if body == nil {
			return true
		}
		start, end := fset.Position(n.Pos()), fset.Position(body.Rbrace)
		if lines := end.Line - start.Line + 1; lines > MaxFuncLines {
			t.Errorf("%s:%d: %s is %d lines, over the limit of %d", rel, start.Line, name, lines, MaxFuncLines)
		}
		return true
	})
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// moduleRoot is the directory holding go.mod, above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
