package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	moduleRoot  = "../../.."
	coverageDoc = moduleRoot + "/docs/api-coverage.md"
	symbolsFile = "testdata/symbols.txt"
)

// statuses are the legend's statuses, in the summary's column order.
var statuses = []string{"covered", "partial", "refused", "not yet"}

// TestCoverageTable checks docs/api-coverage.md against the committed symbol lists and the repository's tests.
func TestCoverageTable(t *testing.T) {
	doc, syms, tests := loadInputs(t)
	for _, p := range checkDoc(doc, syms, tests) {
		t.Error(p)
	}
}

// TestCoverageTableCatchesPlanted plants one fault of each kind in the committed table and requires the
// checker to report it.
func TestCoverageTableCatchesPlanted(t *testing.T) {
	doc, syms, tests := loadInputs(t)
	const pollRow = "| `ibv_poll_cq` | covered | `CQ.Poll([]WC)` | `conformance.TestTraffic` | no allocation |\n"
	// The covered count the summary gives libibverbs now: a removed covered row leaves the rows one short of it.
	m := regexp.MustCompile(`\| libibverbs \| 179 \| (\d+) \|`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("no libibverbs summary row")
	}
	covered, _ := strconv.Atoi(m[1])
	mu := regexp.MustCompile(`\| libibumad \| 42 \| (\d+) \|[^\n]*`).FindStringSubmatch(doc)
	if mu == nil {
		t.Fatal("no libibumad summary row")
	}
	umadRow := mu[0]
	// Any "not yet" row (the first), its notes cut off to plant a row without a reason.
	notYet := regexp.MustCompile("(\\| `(\\w+)` \\| not yet \\|[^|\\n]*\\|[^|\\n]*\\|)[^\\n]*").FindStringSubmatch(doc)
	if notYet == nil {
		t.Fatal("no \"not yet\" row to plant a missing reason in")
	}
	umadCovered, _ := strconv.Atoi(mu[1])
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"omission", pollRow, "", "libibverbs ibv_poll_cq has no row"},
		{"omission counted", pollRow, "", fmt.Sprintf("libibverbs: the summary says %d covered, the rows %d", covered, covered-1)},
		{"stranger", pollRow, pollRow + "| `ibv_poll_cq_fast` | not yet |  |  | planted |\n",
			"`ibv_poll_cq_fast` is not a public function of libibverbs"},
		{"wrong library", pollRow, "", "`ibv_poll_cq` is not a public function of librdmacm"},
		{"duplicate", pollRow, pollRow + pollRow, "`ibv_poll_cq` has a second row"},
		{"status", pollRow, strings.Replace(pollRow, "covered", "done", 1), `status "done" is not one of`},
		{"no test", pollRow, strings.Replace(pollRow, "`conformance.TestTraffic`", "", 1), "`ibv_poll_cq` is covered but names no test"},
		{"missing test", pollRow, strings.Replace(pollRow, "TestTraffic", "TestTrafficPlanted", 1),
			"conformance.TestTrafficPlanted, which no _test.go file declares"},
		{"not a test name", pollRow, strings.Replace(pollRow, "`conformance.TestTraffic`", "`TestTraffic`", 1),
			"`TestTraffic` is not package.TestName"},
		{"no reason", notYet[0], notYet[1] + "  |", fmt.Sprintf("`%s` is not yet but gives no reason", notYet[2])},
		{"summary", umadRow, strings.Replace(umadRow, fmt.Sprintf("| %d |", umadCovered), fmt.Sprintf("| %d |", umadCovered+1), 1),
			fmt.Sprintf("libibumad: the summary says %d covered, the rows %d", umadCovered+1, umadCovered)},
		{"legend", "- **refused**:", "- **declined**:", "the legend's statuses are"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(doc, c.old) {
				t.Fatalf("the table no longer has %q to plant the fault in", c.old)
			}
			planted := strings.Replace(doc, c.old, c.new, 1)
			if c.name == "wrong library" { // the row moves to a librdmacm section
				planted += "\n## librdmacm\n\n" + pollRow
			}
			problems := checkDoc(planted, syms, tests)
			for _, p := range problems {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Errorf("planted %s: want a problem containing %q, got:\n%s", c.name, c.want, strings.Join(problems, "\n"))
		})
	}
}

// TestSymbolsUpToDate regenerates testdata/symbols.txt from the sid peer root when this machine has it.
func TestSymbolsUpToDate(t *testing.T) {
	root, err := defaultRoot()
	if err != nil {
		t.Skipf("no lab cache (%v): cannot regenerate %s", err, symbolsFile)
	}
	include := defaultInclude(root)
	for _, p := range []string{filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", "libibverbs.so.1"),
		filepath.Join(include, "infiniband", "verbs.h")} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%v: cannot regenerate %s without rdma-core 65 (the lab's sid peer root, which `make lab` "+
				"builds, and sid's libibverbs-dev beside it, which the devinfo goldens fetch)", err, symbolsFile)
		}
	}
	got, err := generate(root, include)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(symbolsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what %s and %s give (run go generate ./internal/cmd/apicov)", symbolsFile, root, include)
	}
}

// TestVerbsCountingRules runs the libibverbs rules on a made-up header and export table.
func TestVerbsCountingRules(t *testing.T) {
	h := stripComments(`
struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe);
/* static inline int ibv_commented(void); */
static inline int ibv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) { return 0; }
static inline struct ibv_device **__ibv_get_device_list(int *n) { return 0; }
#define ibv_get_device_list(n) __ibv_get_device_list(n)
static inline int ibv_query_gid_ex(struct ibv_context *c) { return _ibv_query_gid_ex(c); }
const char *ibv_wr_opcode_str(enum ibv_wr_opcode op);
static inline void *verbs_get_ctx(struct ibv_context *c) { return c; }
`)
	exports := map[string][]string{
		"ibv_create_cq": {"IBVERBS_1.0", "IBVERBS_1.1"}, "ibv_get_device_list": {"IBVERBS_1.1"},
		"_ibv_query_gid_ex": {"IBVERBS_1.11"}, "ibv_wr_opcode_str": {"IBVERBS_PRIVATE_65"},
		"ibv_cmd_create_cq": {"IBVERBS_PRIVATE_65"}, "ibv_dontfork_range": {"IBVERBS_1.1"},
	}
	for _, name := range historic {
		exports[name] = []string{"IBVERBS_1.0"}
	}
	syms, err := verbsSymbols(exports, h, "IBVERBS_1.")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range syms {
		got = append(got, s.name+" "+strings.Join(s.origin, " "))
	}
	slices.Sort(got)
	want := []string{
		"ibv_create_cq IBVERBS_1.0 IBVERBS_1.1", "ibv_dontfork_range IBVERBS_1.1", "ibv_get_device_list IBVERBS_1.1",
		"ibv_poll_cq inline", "ibv_query_gid_ex inline _ibv_query_gid_ex@IBVERBS_1.11",
		"ibv_wr_opcode_str IBVERBS_PRIVATE_65",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	delete(exports, historic[0])
	if _, err := verbsSymbols(exports, h, "IBVERBS_1."); err == nil {
		t.Error("a historic symbol that is no longer exported was not reported")
	}
	if c := compareVersions("IBVERBS_1.9", "IBVERBS_1.10"); c >= 0 {
		t.Errorf("IBVERBS_1.9 does not sort before IBVERBS_1.10 (%d)", c)
	}
}

func FuzzParseDoc(f *testing.F) {
	f.Add("## Summary\n\n| libibverbs | 1 | 1 | 0 | 0 | 0 |\n## libibverbs\n\n| `ibv_x` | covered | a | `p.TestX` | n |\n")
	f.Add("- **covered**: x\n| a \\| b |\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseDoc(s)
	})
}

func loadInputs(t *testing.T) (doc string, syms map[string]string, tests map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(coverageDoc)
	if err != nil {
		t.Fatal(err)
	}
	syms, err = readSymbols(symbolsFile)
	if err != nil {
		t.Fatal(err)
	}
	tests, err = testFunctions(moduleRoot)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), syms, tests
}

// readSymbols reads the committed lists: function name → library.
func readSymbols(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want library, function and origin: %q", path, n, line)
		}
		if _, dup := m[fields[1]]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, fields[1])
		}
		m[fields[1]] = fields[0]
	}
	return m, sc.Err()
}

// testFunctions is every top-level TestXxx function of the module's _test.go files, as "package.TestXxx" (an
// external test package counts as its package).
func testFunctions(root string) (map[string]bool, error) {
	tests := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := strings.TrimSuffix(f.Name.Name, "_test")
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[pkg+"."+fn.Name.Name] = true
			}
		}
		return nil
	})
	return tests, err
}

// row is one function's row of the table.
type row struct {
	line                         int
	lib, fn, status, counterpart string
	tests                        []string // as written, each in backquotes
	notes                        string
}

// coverage is what parseDoc reads: the legend's statuses, the summary (library → functions, then one count
// per status), the rows and the lines it could not read.
type coverage struct {
	legend    []string
	summary   map[string][]int
	rows      []row
	malformed []string
}

var (
	legendItem = regexp.MustCompile(`^- \*\*([a-z ]+)\*\*:`)
	testName   = regexp.MustCompile("^`([a-z][a-z0-9_]*)\\.(Test[A-Za-z0-9_]*)`$")
	backquoted = regexp.MustCompile("`[^`]*`")
)

// parseDoc reads the coverage table: "## Summary" holds the counts, "## <library>" sections the rows (tables
// whose first cell is a backquoted function name), and the "- **status**:" items before the summary the legend.
func parseDoc(doc string) coverage {
	c := coverage{summary: map[string][]int{}}
	section := ""
	for i, line := range strings.Split(doc, "\n") {
		n := i + 1
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		if section == "" {
			if m := legendItem.FindStringSubmatch(line); m != nil {
				c.legend = append(c.legend, m[1])
			}
			continue
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := splitRow(line)
		switch {
		case section == "Summary":
			if len(cells) != 2+len(statuses) || cells[0] == "library" {
				continue
			}
			counts := make([]int, 0, len(cells)-1)
			for _, s := range cells[1:] {
				v, err := strconv.Atoi(s)
				if err != nil {
					c.malformed = append(c.malformed, fmt.Sprintf("line %d: summary count %q is not a number", n, s))
				}
				counts = append(counts, v)
			}
			c.summary[cells[0]] = counts
		case strings.HasPrefix(cells[0], "`"):
			if len(cells) != 5 {
				c.malformed = append(c.malformed, fmt.Sprintf("line %d: %d cells, want 5: %s", n, len(cells), line))
				continue
			}
			r := row{line: n, lib: section, fn: strings.Trim(cells[0], "`"), status: cells[1],
				counterpart: cells[2], notes: cells[4]}
			r.tests = backquoted.FindAllString(cells[3], -1)
			if rest := strings.Trim(backquoted.ReplaceAllString(cells[3], ""), " ,—"); rest != "" {
				c.malformed = append(c.malformed, fmt.Sprintf("line %d: `%s`: the test cell has %q outside backquotes", n, r.fn, rest))
			}
			c.rows = append(c.rows, r)
		}
	}
	return c
}

// splitRow splits a Markdown table row into its trimmed cells ("\|" is a bar inside a cell).
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
	for i, s := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(s, "\x00", `\|`))
	}
	return cells
}

// checkDoc returns every way doc disagrees with the lists (function → library) and the tests.
func checkDoc(doc string, syms map[string]string, tests map[string]bool) []string {
	c := parseDoc(doc)
	problems := c.malformed
	if !slices.Equal(c.legend, statuses) {
		problems = append(problems, fmt.Sprintf("the legend's statuses are %q, want %q", c.legend, statuses))
	}
	seen := map[string]int{}
	counted := map[string][]int{}
	for _, r := range c.rows {
		where := fmt.Sprintf("line %d: `%s`", r.line, r.fn)
		if lib, ok := syms[r.fn]; !ok || lib != r.lib {
			problems = append(problems, fmt.Sprintf("%s is not a public function of %s", where, r.lib))
		}
		if prev, dup := seen[r.fn]; dup {
			problems = append(problems, fmt.Sprintf("%s has a second row (the first is line %d)", where, prev))
		}
		seen[r.fn] = r.line
		st := slices.Index(statuses, r.status)
		if st < 0 {
			problems = append(problems, fmt.Sprintf("%s: status %q is not one of %q", where, r.status, statuses))
		} else {
			if counted[r.lib] == nil {
				counted[r.lib] = make([]int, len(statuses))
			}
			counted[r.lib][st]++
		}
		if (r.status == "covered" || r.status == "partial") && len(r.tests) == 0 {
			problems = append(problems, fmt.Sprintf("%s is %s but names no test", where, r.status))
		}
		if (r.status == "refused" || r.status == "not yet" || r.status == "partial") && r.notes == "" {
			problems = append(problems, fmt.Sprintf("%s is %s but gives no reason", where, r.status))
		}
		for _, name := range r.tests {
			m := testName.FindStringSubmatch(name)
			if m == nil {
				problems = append(problems, fmt.Sprintf("%s: %s is not package.TestName", where, name))
			} else if !tests[m[1]+"."+m[2]] {
				problems = append(problems, fmt.Sprintf("%s names %s.%s, which no _test.go file declares", where, m[1], m[2]))
			}
		}
	}
	libs := map[string]int{}
	var missing []string
	for fn, lib := range syms {
		libs[lib]++
		if _, ok := seen[fn]; !ok {
			missing = append(missing, lib+" "+fn+" has no row")
		}
	}
	slices.Sort(missing)
	problems = append(problems, missing...)
	for lib, n := range libs {
		s, ok := c.summary[lib]
		if !ok {
			problems = append(problems, lib+": no summary row")
			continue
		}
		if s[0] != n {
			problems = append(problems, fmt.Sprintf("%s: the summary says %d functions, the lists %d", lib, s[0], n))
		}
		for i, st := range statuses {
			got := 0
			if counted[lib] != nil {
				got = counted[lib][i]
			}
			if s[1+i] != got {
				problems = append(problems, fmt.Sprintf("%s: the summary says %d %s, the rows %d", lib, s[1+i], st, got))
			}
		}
	}
	for lib := range c.summary {
		if libs[lib] == 0 {
			problems = append(problems, lib+": a summary row for a library the lists do not have")
		}
	}
	return problems
}
