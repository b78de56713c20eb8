// Command apicov lists the public functions of rdma-core's libibverbs, librdmacm and libibumad, the lists that
// docs/api-coverage.md must give a row each (TestCoverageTable checks it). It reads the libraries' exported
// symbols (debug/elf) and libibverbs' verbs.h from the rdma-core the goldens come from: Debian sid's, in the
// lab cache's peer root (lab.EnsurePeerRoot) and, beside it, sid's libibverbs-dev (golden.CHeaders).
//
// Usage (go generate ./internal/cmd/apicov runs it):
//
//	go run ./internal/cmd/apicov [-root DIR] [-include DIR] [-o FILE]
//
// Counting rules (the same as ../shared/reference/api-coverage.md's audit, which found 179, 74 and 42):
//
//   - librdmacm and libibumad: every function the library exports under a public version node (RDMACM_*,
//     IBUMAD_*).
//   - libibverbs: every function exported under a public version node (IBVERBS_1.*), but the seven in
//     historic; every static inline function of verbs.h whose name starts with "ibv_" (the ones starting with
//     "__" are the bodies of macros named after exported functions); and the functions exported under
//     IBVERBS_PRIVATE_* that verbs.h declares all the same (ibv_wr_opcode_str). An exported "_ibv_x" that
//     implements the inline ibv_x is counted once, as ibv_x.
//
// Each output line is "library function origin...": origin is the version nodes the function is exported
// under, "inline" for a verbs.h inline, and "name@VERSION" for the symbol behind an inline.
package main

import (
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goverbs/goverbs/test/lab"
)

//go:generate go run . -o testdata/symbols.txt

// libraries are the three libraries, by the soname the peer root holds, and the prefix of their public
// version nodes.
var libraries = []struct{ name, soname, public string }{
	{"libibverbs", "libibverbs.so.1", "IBVERBS_1."},
	{"librdmacm", "librdmacm.so.1", "RDMACM_"},
	{"libibumad", "libibumad.so.3", "IBUMAD_"},
}

// historic are exported by libibverbs under public version nodes but are not its API: no installed header
// declares them; libibverbs.map.in keeps the kernel-structure copies and the sysfs readers as historical
// symbols now private to rdma-core's own libraries, and ibv_register_driver is the deprecated registration
// of out-of-tree providers. The generator fails if one stops being exported or a header starts declaring it.
var historic = []string{
	"ibv_copy_ah_attr_from_kern", "ibv_copy_path_rec_from_kern", "ibv_copy_path_rec_to_kern",
	"ibv_copy_qp_attr_from_kern", "ibv_get_sysfs_path", "ibv_read_sysfs_file", "ibv_register_driver",
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "apicov:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("apicov", flag.ContinueOnError)
	root := fs.String("root", "", "root filesystem holding usr/lib/x86_64-linux-gnu/lib*.so (default: the lab's sid peer root)")
	include := fs.String("include", "", "include directory holding infiniband/verbs.h (default: ROOT/../dev/root/usr/include)")
	out := fs.String("o", "", "output file (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *root == "" {
		r, err := defaultRoot()
		if err != nil {
			return err
		}
		*root = r
	}
	if *include == "" {
		*include = defaultInclude(*root)
	}
	text, err := generate(*root, *include)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = os.Stdout.Write(text)
		return err
	}
	return os.WriteFile(*out, text, 0o644)
}

// defaultRoot is the sid peer root: $GOVERBS_LAB_PEER_SID (as the lab VM sets it), else the lab cache's.
func defaultRoot() (string, error) {
	if r := os.Getenv("GOVERBS_LAB_PEER_SID"); r != "" {
		return r, nil
	}
	cache, err := lab.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "peers", "sid", "root"), nil
}

// defaultInclude is where golden.CHeaders unpacks sid's libibverbs-dev: beside the peer root.
func defaultInclude(root string) string {
	return filepath.Join(filepath.Dir(root), "dev", "root", "usr", "include")
}

// symbol is one public function of one library.
type symbol struct {
	lib, name string
	origin    []string
}

// generate returns the symbol list of the libraries under root and the verbs.h under include.
func generate(root, include string) ([]byte, error) {
	header, err := os.ReadFile(filepath.Join(include, "infiniband", "verbs.h"))
	if err != nil {
		return nil, err
	}
	verbsH := stripComments(string(header))
	var syms []symbol
	var files []string
	for _, l := range libraries {
		path := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", l.soname)
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.Base(real))
		exports, err := exportedFunctions(real)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.soname, err)
		}
		if l.name == "libibverbs" {
			s, err := verbsSymbols(exports, verbsH, l.public)
			if err != nil {
				return nil, err
			}
			syms = append(syms, s...)
			continue
		}
		for name, versions := range exports {
			if publicVersions(versions, l.public) {
				syms = append(syms, symbol{l.name, name, versions})
			}
		}
	}
	slices.SortFunc(syms, func(a, b symbol) int {
		return cmp.Or(cmp.Compare(libIndex(a.lib), libIndex(b.lib)), cmp.Compare(a.name, b.name))
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Public functions of rdma-core's libraries (%s) and infiniband/verbs.h.\n", strings.Join(files, ", "))
	fmt.Fprintf(&b, "# Generated by internal/cmd/apicov (go generate ./internal/cmd/apicov); do not edit.\n")
	fmt.Fprintf(&b, "# library function origin...\n")
	for _, s := range syms {
		fmt.Fprintf(&b, "%s %s %s\n", s.lib, s.name, strings.Join(s.origin, " "))
	}
	return b.Bytes(), nil
}

func libIndex(lib string) int {
	return slices.IndexFunc(libraries, func(l struct{ name, soname, public string }) bool { return l.name == lib })
}

// exportedFunctions maps each function a shared object defines to the version nodes it is exported under,
// sorted.
func exportedFunctions(path string) (map[string][]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return nil, err
	}
	m := map[string][]string{}
	for _, s := range dyn {
		if s.Section == elf.SHN_UNDEF || elf.ST_TYPE(s.Info) != elf.STT_FUNC || elf.ST_BIND(s.Info) == elf.STB_LOCAL {
			continue
		}
		if s.Version == "" {
			return nil, fmt.Errorf("%s has no symbol version", s.Name)
		}
		if !slices.Contains(m[s.Name], s.Version) {
			m[s.Name] = append(m[s.Name], s.Version)
		}
	}
	for _, v := range m {
		slices.SortFunc(v, compareVersions)
	}
	return m, nil
}

// compareVersions orders version nodes by name, their numbers as numbers (IBVERBS_1.9 before IBVERBS_1.10).
func compareVersions(a, b string) int {
	pa, pb := versionParts.FindAllString(a, -1), versionParts.FindAllString(b, -1)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, y := pa[i], pb[i]
		if x[0] >= '0' && x[0] <= '9' && y[0] >= '0' && y[0] <= '9' {
			if c := cmp.Or(cmp.Compare(len(x), len(y)), cmp.Compare(x, y)); c != 0 {
				return c
			}
		} else if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

var versionParts = regexp.MustCompile(`[0-9]+|[^0-9]+`)

// publicVersions reports whether one of versions is a public node (its name starts with prefix).
func publicVersions(versions []string, prefix string) bool {
	return slices.ContainsFunc(versions, func(v string) bool { return strings.HasPrefix(v, prefix) })
}

var (
	inlineDecl = regexp.MustCompile(`\bstatic\s+inline\b[^;{}()]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	comment    = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
)

func stripComments(s string) string { return comment.ReplaceAllString(s, " ") }

// declares reports whether the comment-free header text h names function name as a function (a prototype,
// an inline or a function-like macro).
func declares(h, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\(`).MatchString(h)
}

// verbsSymbols applies libibverbs' counting rules (the package doc) to its exports and verbs.h.
func verbsSymbols(exports map[string][]string, h, public string) ([]symbol, error) {
	inline := map[string]bool{}
	for _, m := range inlineDecl.FindAllStringSubmatch(h, -1) {
		if strings.HasPrefix(m[1], "ibv_") {
			inline[m[1]] = true
		}
	}
	if len(inline) == 0 {
		return nil, errors.New("verbs.h: no static inline ibv_ function found")
	}
	for _, name := range historic {
		if !publicVersions(exports[name], public) {
			return nil, fmt.Errorf("historic symbol %s is not exported under %s* any more", name, public)
		}
		if declares(h, name) {
			return nil, fmt.Errorf("historic symbol %s is declared in verbs.h now", name)
		}
	}
	var syms []symbol
	for name, versions := range exports {
		if slices.Contains(historic, name) {
			continue
		}
		if impl, ok := strings.CutPrefix(name, "_"); ok && inline[impl] {
			continue // counted with its inline below
		}
		if publicVersions(versions, public) || declares(h, name) {
			syms = append(syms, symbol{"libibverbs", name, versions})
		}
	}
	for name := range inline {
		if _, ok := exports[name]; ok {
			return nil, fmt.Errorf("%s is both exported and a verbs.h inline", name)
		}
		origin := []string{"inline"}
		for _, v := range exports["_"+name] {
			origin = append(origin, "_"+name+"@"+v)
		}
		syms = append(syms, symbol{"libibverbs", name, origin})
	}
	return syms, nil
}
