package designrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// moduleRoot is the directory holding go.mod, above the test's working directory.
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
		if dir == filepath.Dir(dir) {
			t.Fatal("no go.mod above the working directory")
		}
		dir = filepath.Dir(dir)
	}
}

// pkg is one parsed public package: its files, and whether its tests have an Example.
type pkg struct {
	path       string // relative to the module root
	files      []*ast.File
	hasExample bool
}

// publicPackages parses the module's library packages: every directory with Go files that is not under
// internal/, cmd/, test/, examples/ or testdata, and not a main package.
func publicPackages(t *testing.T, root string) []*pkg {
	t.Helper()
	var pkgs []*pkg
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		base := d.Name()
		if rel != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" ||
			base == "internal" || rel == "cmd" || rel == "test" || rel == "examples") {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		p := &pkg{path: filepath.ToSlash(rel)}
		for _, e := range ents {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(path, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			if strings.HasSuffix(name, "_test.go") {
				for _, d := range f.Decls {
					if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
						p.hasExample = true
					}
				}
				continue
			}
			if f.Name.Name == "main" {
				return nil
			}
			p.files = append(p.files, f)
		}
		if len(p.files) > 0 {
			pkgs = append(pkgs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

var integerKinds = map[string]bool{"int": true, "int8": true, "int16": true, "int32": true, "int64": true, "uint": true,
	"uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true, "byte": true, "rune": true}

// releaseVerbs are method names that free a kernel object: a type that has one has Close too ("Close
// everywhere": DESIGN.md).
var releaseVerbs = []string{"Destroy", "Release", "Dealloc", "Dereg", "Free"}

// violations lists every rule broken in the public packages, one line each ("pkg: rule: name").
func violations(t *testing.T, root string) []string {
	var v []string
	for _, p := range publicPackages(t, root) {
		methods := map[string]map[string]bool{} // receiver type -> method names
		types := map[string]*ast.TypeSpec{}
		var order []string
		for _, f := range p.files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil || len(d.Recv.List) == 0 {
						continue
					}
					rt := d.Recv.List[0].Type
					if s, ok := rt.(*ast.StarExpr); ok {
						rt = s.X
					}
					if g, ok := rt.(*ast.IndexExpr); ok {
						rt = g.X
					}
					if id, ok := rt.(*ast.Ident); ok {
						if methods[id.Name] == nil {
							methods[id.Name] = map[string]bool{}
						}
						methods[id.Name][d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								types[s.Name.Name] = s
								order = append(order, s.Name.Name)
							}
						case *ast.ValueSpec:
							if d.Tok != token.VAR {
								continue
							}
							for i, n := range s.Names {
								if n.IsExported() && !isErrorSentinel(n.Name, s, i) {
									v = append(v, fmt.Sprintf("%s: mutable exported variable: %s", p.path, n.Name))
								}
								if foundationSentinels[n.Name] && !isReexport(s, i) {
									v = append(v, fmt.Sprintf("%s: %s defined again, not re-exported from the foundation", p.path, n.Name))
								}
							}
						}
					}
				}
			}
		}
		for _, name := range order {
			ts := types[name]
			if ts.Assign.IsValid() {
				continue // an alias: the rules apply where the type is defined
			}
			if id, ok := ts.Type.(*ast.Ident); ok && integerKinds[id.Name] && !methods[name]["String"] {
				v = append(v, fmt.Sprintf("%s: integer type without String: %s", p.path, name))
			}
			// abi's structs are the kernel's command layouts: a field fd there is a number the command
			// carries, not a file the struct owns.
			if p.path != "abi" && holdsKernelResource(ts) && !methods[name]["Close"] {
				v = append(v, fmt.Sprintf("%s: holds a file descriptor, no Close: %s", p.path, name))
			}
			if strings.HasSuffix(name, "Error") {
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, f := range st.Fields.List {
						for _, fn := range f.Names {
							if deviceFieldAliases[fn.Name] {
								v = append(v, fmt.Sprintf("%s: error field %s.%s names the device: call it Device", p.path, name, fn.Name))
							}
						}
					}
				}
			}
			for _, r := range releaseVerbs {
				if methods[name][r] && !methods[name]["Close"] {
					v = append(v, fmt.Sprintf("%s: %s without Close: %s", p.path, r, name))
				}
			}
		}
		if !p.hasExample {
			v = append(v, fmt.Sprintf("%s: public package without an Example", p.path))
		}
	}
	sort.Strings(v)
	return v
}

// isErrorSentinel reports whether the i-th name of a var spec is an error sentinel: ErrXxx or errXxx assigned
// from errors.New, fmt.Errorf or another sentinel. They are variables by Go's convention (errors.Is compares
// them by identity).
// foundationSentinels are the error values defined once, in internal/rdmaerr, and re-exported by value by the
// packages that return them ("one error vocabulary": DESIGN.md).
var foundationSentinels = map[string]bool{"ErrClosed": true, "ErrNoDevice": true, "ErrNotSupported": true}

// deviceFieldAliases are field names an error struct must not use for the RDMA device it is about: every error
// type calls that field Device.
var deviceFieldAliases = map[string]bool{"Dev": true, "DevName": true, "IBDev": true, "Ibdev": true, "DeviceName": true}

// isReexport reports whether the i'th value of s is another package's variable (pkg.ErrX), the form a
// re-exported foundation sentinel takes.
func isReexport(s *ast.ValueSpec, i int) bool {
	if i >= len(s.Values) {
		return false
	}
	sel, ok := s.Values[i].(*ast.SelectorExpr)
	if !ok {
		return false
	}
	_, ok = sel.X.(*ast.Ident)
	return ok && strings.HasPrefix(sel.Sel.Name, "Err")
}

func isErrorSentinel(name string, s *ast.ValueSpec, i int) bool {
	if !strings.HasPrefix(name, "Err") || i >= len(s.Values) {
		return false
	}
	switch x := s.Values[i].(type) {
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
			if pk, ok := sel.X.(*ast.Ident); ok {
				return (pk.Name == "errors" && sel.Sel.Name == "New") || (pk.Name == "fmt" && sel.Sel.Name == "Errorf") ||
					(pk.Name == "rdmaerr" && sel.Sel.Name == "NotSupported")
			}
		}
	case *ast.SelectorExpr:
		return strings.HasPrefix(x.Sel.Name, "Err")
	case *ast.Ident:
		return strings.HasPrefix(x.Name, "Err") || strings.HasPrefix(x.Name, "err")
	}
	return false
}

// holdsKernelResource reports whether a struct type has a field that is an open file: *os.File, or an
// integer field named fd.
func holdsKernelResource(ts *ast.TypeSpec) bool {
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		if s, ok := f.Type.(*ast.StarExpr); ok {
			if sel, ok := s.X.(*ast.SelectorExpr); ok {
				if pk, ok := sel.X.(*ast.Ident); ok && pk.Name == "os" && sel.Sel.Name == "File" {
					return true
				}
			}
		}
		if id, ok := f.Type.(*ast.Ident); ok && integerKinds[id.Name] {
			for _, n := range f.Names {
				if strings.EqualFold(n.Name, "fd") {
					return true
				}
			}
		}
	}
	return false
}

// TestDesignRules checks the public packages against docs/DESIGN.md's rules. Violations the code had when
// the test came are listed in known (testdata/known.txt): the list may only shrink, and an entry that no
// longer occurs must go, so it is the to-do list of issue 29, not an exemption.
func TestDesignRules(t *testing.T) {
	root := moduleRoot(t)
	got := violations(t, root)
	b, err := os.ReadFile("testdata/known.txt")
	if err != nil {
		t.Fatal(err)
	}
	var known []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			known = append(known, l)
		}
	}
	for _, x := range got {
		if !slices.Contains(known, x) {
			t.Errorf("design rule broken (docs/DESIGN.md): %s", x)
		}
	}
	for _, k := range known {
		if !slices.Contains(got, k) {
			t.Errorf("testdata/known.txt lists %q, which no longer occurs: remove it", k)
		}
	}
	t.Logf("%d known violations left (testdata/known.txt)", len(known))
}

// TestDesignRulesCatchPlanted plants one violation of each rule in a throw-away module and checks that the
// rules report every one: a rules test that cannot fail would pass on any tree.
func TestDesignRulesCatchPlanted(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/planted\n")
	write("bad/bad.go", `package bad

import (
	"errors"
	"os"
)

type Mode uint8

var Default = 3

var ErrClosed = errors.New("closed")

type Handle struct{ f *os.File }

type Queue struct{}

func (*Queue) Destroy() error { return nil }

type OpError struct {
	Op  string
	Dev string
	Err error
}
`)
	// A package that follows the rules reports nothing.
	write("good/good.go", `package good

import "example.com/planted/internal/rdmaerr"

type Mode uint8

func (m Mode) String() string { return "mode" }

var ErrClosed = rdmaerr.ErrClosed

type OpError struct {
	Op     string
	Device string
	Err    error
}
`)
	write("good/example_test.go", "package good_test\n\nfunc Example() {}\n")
	want := []string{
		"bad: integer type without String: Mode",
		"bad: mutable exported variable: Default",
		"bad: ErrClosed defined again, not re-exported from the foundation",
		"bad: holds a file descriptor, no Close: Handle",
		"bad: Destroy without Close: Queue",
		"bad: error field OpError.Dev names the device: call it Device",
		"bad: public package without an Example",
	}
	got := violations(t, root)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("planted violation not reported: %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("reported %d violations, want the %d planted:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}
