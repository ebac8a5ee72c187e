package main

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestCommandFilesStandAlone holds the spine of package main (README
// "Architecture"): a command file (cmd_*.go) depends on the shared files
// (helpers.go, upkeep.go, output.go, …) and on lower packages, never on
// another command's file; and the shared files depend on no command file,
// except main.go registering each command (its xCommand constructor). A
// helper that a second command needs moves to helpers.go (or upkeep.go, for
// what every read does) instead of being called across, so no chain of
// command files calling each other is longer than one.
func TestCommandFilesStandAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package with its dependencies' export data (go list -export)")
	}
	var bad []string
	for from, tos := range fileUses(t) {
		for to, name := range tos {
			switch {
			case !isCommandFile(to):
			case commandOf(from) == commandOf(to):
			case isCommandFile(from):
				bad = append(bad, fmt.Sprintf("command file %s uses %s of another command's file, %s", from, name, to))
			case from == "main.go" && strings.HasSuffix(name, "Command"):
			default:
				bad = append(bad, fmt.Sprintf("shared file %s uses %s of command file %s", from, name, to))
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

func isCommandFile(name string) bool { return strings.HasPrefix(name, "cmd_") }

// commandOf is the command a file belongs to: cmd_list.go and cmd_list_ids.go
// are both list's ("" for a shared file).
func commandOf(name string) string {
	if !isCommandFile(name) {
		return ""
	}
	c, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(name, "cmd_"), ".go"), "_")
	return c
}

// fileUses maps each non-test file of package main to the other files of the
// package whose functions, methods or types it uses, with one example each.
func fileUses(t *testing.T) map[string]map[string]string {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("load package main: %v", pkgs[0].Errors)
	}
	p := pkgs[0]
	calls := map[string]map[string]string{}
	for _, f := range p.Syntax {
		from := filepath.Base(p.Fset.Position(f.Pos()).Filename)
		if strings.HasSuffix(from, "_test.go") {
			continue
		}
		if calls[from] == nil {
			calls[from] = map[string]string{}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != p.Types || obj.Parent() != nil && obj.Parent() != p.Types.Scope() {
				return true
			}
			switch o := obj.(type) {
			case *types.Func, *types.TypeName:
			case *types.Var:
				if o.IsField() {
					return true
				}
			default:
				return true
			}
			to := filepath.Base(p.Fset.Position(obj.Pos()).Filename)
			if to == from || strings.HasSuffix(to, "_test.go") {
				return true
			}
			if _, ok := calls[from][to]; !ok {
				calls[from][to] = obj.Name() // one example is enough to point at
			}
			return true
		})
	}
	// Every file appears, also one that uses nothing of another.
	for _, name := range p.GoFiles {
		b := filepath.Base(name)
		if !strings.HasSuffix(b, "_test.go") && calls[b] == nil {
			calls[b] = map[string]string{}
		}
	}
	return calls
}
