package instance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCorePurity keeps the deterministic core deterministic: no package of
// the core (instance, resv, timeline, qpu) may do I/O, start processes, talk
// to NATS or read the wall clock. It parses their non-test sources and fails
// on any forbidden import or call.
func TestCorePurity(t *testing.T) {
	forbiddenImports := []string{"os", "os/exec", "net", "net/http", "io/ioutil", "syscall/js", "github.com/nats-io/"}
	forbiddenCalls := map[string]bool{"time.Now": true, "time.Sleep": true, "time.After": true, "time.Tick": true,
		"time.NewTimer": true, "time.NewTicker": true, "time.AfterFunc": true, "time.Since": true, "time.Until": true,
		"rand.Int": true, "rand.Intn": true, "rand.Float64": true, "rand.Seed": true}
	checked := 0
	for _, pkg := range []string{".", "../resv", "../timeline", "../qpu"} {
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			checked++
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fs := token.NewFileSet()
			file, err := parser.ParseFile(fs, f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbiddenImports {
					if p == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad)) {
						t.Errorf("%s imports %s: the core does no I/O", f, p)
					}
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: a go statement at %s: the core starts no goroutines", f, fs.Position(n.Pos()))
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && forbiddenCalls[id.Name+"."+n.Sel.Name] {
						t.Errorf("%s: %s.%s at %s: the core reads no clock and no global randomness", f, id.Name, n.Sel.Name, fs.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: the core's packages moved?", checked)
	}
}
