package main

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/lab"
	"github.com/goverbs/goverbs/test/labtest"
)

func TestCountTests(t *testing.T) {
	out := `=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
    b_test.go:10: needs rereg (the kernel reports EOPNOTSUPP)
--- SKIP: TestB (0.00s)
=== RUN   TestC
=== RUN   TestC/sub
    c_test.go:3: boom
    --- FAIL: TestC/sub (0.01s)
=== RUN   TestC/other
=== PAUSE TestC/other
=== CONT  TestC/other
    c_test.go:9: no XRC
    --- SKIP: TestC/other (0.00s)
--- FAIL: TestC (0.01s)
FAIL
`
	var s Summary
	countTests(&s, "p", []byte(out))
	if s.Run != 5 || s.Passed != 1 || s.Failed != 2 || len(s.Skips) != 2 {
		t.Fatalf("%+v", s)
	}
	if s.Skips[0] != (skip{"p: TestB", "b_test.go:10: needs rereg (the kernel reports EOPNOTSUPP)"}) || s.Skips[1].Reason != "c_test.go:9: no XRC" {
		t.Errorf("skips %+v", s.Skips)
	}
	if len(s.Slowest) != 3 || s.Slowest[0] != (timed{"p: TestC", 0.01}) {
		t.Errorf("slowest %+v, want the three top-level tests, TestC (0.01s) first", s.Slowest)
	}
}

func TestCountTestsKeepsNotes(t *testing.T) {
	out := `=== RUN   TestA
=== RUN   TestA/x
    a_test.go:5: lab-note: c-server/c-client: perftest's listen race, running the pair again
    a_test.go:6: not a note
    --- PASS: TestA/x (0.00s)
--- PASS: TestA (0.00s)
=== RUN   TestB
    b_test.go:7: lab-note: pair took 95s
--- FAIL: TestB (0.00s)
`
	var s Summary
	countTests(&s, "p", []byte(out))
	want := []note{{"p: TestA/x", "c-server/c-client: perftest's listen race, running the pair again"}, {"p: TestB", "pair took 95s"}}
	if !reflect.DeepEqual(s.Notes, want) {
		t.Errorf("notes %+v, want %+v", s.Notes, want)
	}
	var many []byte
	for range maxNotes + 5 {
		many = append(many, "    x_test.go:1: lab-note: again\n"...)
	}
	s = Summary{}
	countTests(&s, "p", append([]byte("=== RUN   TestX\n"), many...))
	if len(s.Notes) != maxNotes {
		t.Errorf("kept %d notes, want at most %d", len(s.Notes), maxNotes)
	}
}

func TestLabtestNames(t *testing.T) {
	if noteMarker != labtest.NoteMarker || refsEnv != labtest.RefsEnv || refsOutDir != labtest.RefsOutDir {
		t.Errorf("labsuite's copies of labtest's names differ: %q %q %q, labtest %q %q %q", noteMarker, refsEnv, refsOutDir,
			labtest.NoteMarker, labtest.RefsEnv, labtest.RefsOutDir)
	}
}

func TestSaveRefs(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	if n, err := saveRefs(filepath.Join(from, "missing"), to); n != 0 || err != nil {
		t.Errorf("no refs directory: %d, %v", n, err)
	}
	for _, f := range []string{"6.1/lab-v1/sid-ib_write_bw-ab/T_a/server.txt", "6.1/lab-v1/sid-ib_write_bw-ab/T_a/client.txt"} {
		p := filepath.Join(from, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(f), 0o644)
	}
	n, err := saveRefs(from, to)
	if n != 2 || err != nil {
		t.Fatalf("saveRefs: %d, %v", n, err)
	}
	b, err := os.ReadFile(filepath.Join(to, "6.1/lab-v1/sid-ib_write_bw-ab/T_a/client.txt"))
	if string(b) != "6.1/lab-v1/sid-ib_write_bw-ab/T_a/client.txt" || err != nil {
		t.Errorf("copied %q, %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(to, "6.1/lab-v1/sid-ib_write_bw-ab/T_a/.ref-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestSlowestKeepsTheLongest(t *testing.T) {
	var s Summary
	for i := range 20 {
		s.addTimed(timed{Test: string(rune('a' + i)), Seconds: float64((i * 7) % 20)})
	}
	if len(s.Slowest) != slowestN {
		t.Fatalf("kept %d, want %d", len(s.Slowest), slowestN)
	}
	for i, tt := range s.Slowest {
		if want := float64(19 - i); tt.Seconds != want {
			t.Errorf("slowest[%d] = %+v, want %v s", i, tt, want)
		}
	}
}

func TestFailedOutputKeepsOnlyTheFailure(t *testing.T) {
	out := `=== RUN   TestChatty
    a_test.go:1: lots of log
--- PASS: TestChatty (1.00s)
=== RUN   TestParent
=== RUN   TestParent/ok
    p_test.go:5: fine
=== RUN   TestParent/bad
    p_test.go:7: the reason
        continued
=== NAME  TestParent/ok
    p_test.go:6: late log of a passing subtest
    --- PASS: TestParent/ok (0.10s)
    --- FAIL: TestParent/bad (0.20s)
=== NAME  TestParent
    p_test.go:9: parent log
--- FAIL: TestParent (0.30s)
=== RUN   TestSkipped
    s_test.go:2: needs 6.2
--- SKIP: TestSkipped (0.00s)
=== RUN   TestCrash
    c_test.go:3: before the crash
panic: boom

goroutine 1 [running]:
FAIL	pkg	1.0s
`
	want := `=== RUN   TestParent
=== RUN   TestParent/bad
    p_test.go:7: the reason
        continued
    --- FAIL: TestParent/bad (0.20s)
    p_test.go:9: parent log
--- FAIL: TestParent (0.30s)
=== RUN   TestCrash
    c_test.go:3: before the crash
panic: boom

goroutine 1 [running]:
FAIL	pkg	1.0s
`
	if got := string(failedOutput([]byte(out))); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestFailedOutputWithCount(t *testing.T) {
	out := `=== RUN   TestFlaky
    f_test.go:1: run 1 fails
--- FAIL: TestFlaky (0.10s)
=== RUN   TestFlaky
    f_test.go:1: run 2 passes
--- PASS: TestFlaky (0.10s)
FAIL
`
	want := `=== RUN   TestFlaky
    f_test.go:1: run 1 fails
--- FAIL: TestFlaky (0.10s)
=== RUN   TestFlaky
    f_test.go:1: run 2 passes
FAIL
`
	if got := string(failedOutput([]byte(out))); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// With -count, a test that passed once and then hangs until go test's timeout (or panics) in a later run
// keeps its lines and the trace: the run that never ended is the failure.
func TestFailedOutputKeepsARunThatNeverEnded(t *testing.T) {
	out := `=== RUN   TestHang
--- PASS: TestHang (1.00s)
=== RUN   TestOther
--- PASS: TestOther (0.10s)
=== RUN   TestHang
    h_test.go:4: waiting
panic: test timed out after 7m0s
	running tests:
		TestHang (6m59s)

goroutine 1 [running]:
FAIL	pkg	420.0s
`
	want := `=== RUN   TestHang
=== RUN   TestHang
    h_test.go:4: waiting
panic: test timed out after 7m0s
	running tests:
		TestHang (6m59s)

goroutine 1 [running]:
FAIL	pkg	420.0s
`
	if got := string(failedOutput([]byte(out))); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func pkgsOf(paths ...string) []pkg {
	var ps []pkg
	for _, p := range paths {
		ps = append(ps, pkg{ImportPath: p})
	}
	return ps
}

func groupSummary(gs []group) string {
	var parts []string
	for _, g := range gs {
		var names []string
		for _, p := range g.Pkgs {
			names = append(names, path.Base(p.ImportPath))
		}
		h := ""
		if g.Heavy {
			h = "*"
		}
		parts = append(parts, g.Name+h+"="+strings.Join(names, ","))
	}
	return strings.Join(parts, " ")
}

func TestSplitGroups(t *testing.T) {
	const m = "github.com/goverbs/goverbs/"
	all := pkgsOf(m+"cgroup", m+"netlinkrdma", m+"test/conformance", m+"cmd/goverbs/internal/interop", m+"test/smoke")
	for _, tc := range []struct {
		name  string
		pkgs  []pkg
		jobs  int
		heavy []string
		want  string
	}{
		{"serial", all, 1, defaultHeavy, "all=cgroup,netlinkrdma,conformance,interop,smoke"},
		{"parallel", all, 2, defaultHeavy, "interop*=interop rest=cgroup,netlinkrdma,conformance,smoke"},
		{"many jobs", all, 8, defaultHeavy, "interop*=interop rest=cgroup,netlinkrdma,conformance,smoke"},
		{"only interop", pkgsOf(m + "cmd/goverbs/internal/interop"), 2, defaultHeavy, "all=interop"},
		{"no interop", pkgsOf(m+"test/smoke", m+"netlinkrdma"), 2, defaultHeavy, "all=smoke,netlinkrdma"},
		{"dir form", all, 2, []string{"./test/conformance/", "./cmd/goverbs/internal/interop"}, "conformance*=conformance interop*=interop rest=cgroup,netlinkrdma,smoke"},
		{"no heavy", all, 2, nil, "all=cgroup,netlinkrdma,conformance,interop,smoke"},
		{"same base", pkgsOf(m+"a/rest", m+"b/x"), 2, []string{m + "a/rest"}, "rest*=rest rest-2=x"},
	} {
		if got := groupSummary(splitGroups(tc.pkgs, tc.jobs, tc.heavy)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestScheduleHeavyFirst(t *testing.T) {
	kernels := []string{"6.1", "6.12", "newest"}
	groups := []group{{Name: "interop", Heavy: true}, {Name: "rest"}}
	var got []string
	for _, u := range schedule(kernels, groups, nil) {
		got = append(got, u.Kernel+"/"+u.Name)
	}
	want := "6.1/interop 6.12/interop newest/interop 6.1/rest 6.12/rest newest/rest"
	if strings.Join(got, " ") != want {
		t.Errorf("schedule %v, want %s", got, want)
	}
	got = nil
	for _, u := range schedule(kernels, []group{{Name: "all"}}, nil) {
		got = append(got, u.Kernel+"/"+u.Name)
	}
	if want := "6.1/all 6.12/all newest/all"; strings.Join(got, " ") != want {
		t.Errorf("serial schedule %v, want %s", got, want)
	}
}

// TestScheduleSIW: -siw's group runs only on its kernels, after the run's own units, and its units and rows are
// told apart from the rxe ones of the same kernel.
func TestScheduleSIW(t *testing.T) {
	groups := []group{{Name: "interop", Heavy: true}, {Name: "rest"}, {Name: siwGroup, Provider: lab.ProviderSIW}}
	var got, rows []string
	for _, u := range schedule([]string{"6.1", "newest"}, groups, []string{"newest"}) {
		got = append(got, unitKey(u))
		rows = append(rows, u.row())
	}
	if want := "6.1/interop newest/interop 6.1/rest newest/rest newest/siw"; strings.Join(got, " ") != want {
		t.Errorf("schedule %v, want %s", got, want)
	}
	if want := "6.1 newest 6.1 newest newest/siw"; strings.Join(rows, " ") != want {
		t.Errorf("rows %v, want %s", rows, want)
	}
	var ts []string
	for _, tg := range runTargets([]string{"6.1", "newest"}, lab.ProviderRXE, []string{"newest"}) {
		ts = append(ts, tg.row()+"="+tg.provider)
	}
	if want := "6.1=rxe newest=rxe newest/siw=siw"; strings.Join(ts, " ") != want {
		t.Errorf("targets %v, want %s", ts, want)
	}
}

func TestRunUnits(t *testing.T) {
	units := schedule([]string{"6.1", "6.12", "newest"}, []group{{Name: "interop", Heavy: true}, {Name: "rest"}}, nil)
	for _, n := range []int{1, 2, 4} {
		var mu sync.Mutex
		var started []string
		running, most := 0, 0
		results := runUnits(units, n, func(u unit) unitResult {
			mu.Lock()
			started = append(started, u.Kernel+"/"+u.Name)
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			return unitResult{Unit: u, Wall: time.Duration(len(u.Kernel))}
		})
		if most > n {
			t.Errorf("n=%d: %d units ran at once", n, most)
		}
		if n == 1 && most != 1 {
			t.Errorf("n=1: %d at once", most)
		}
		for i, r := range results {
			if r.Unit.Kernel != units[i].Kernel || r.Unit.Name != units[i].Name {
				t.Errorf("n=%d: result %d is %s/%s, want %s/%s", n, i, r.Unit.Kernel, r.Unit.Name, units[i].Kernel, units[i].Name)
			}
		}
		// The first n units start first (each worker takes the next in order).
		first := append([]string(nil), started[:n]...)
		sort.Strings(first)
		var want []string
		for _, u := range units[:n] {
			want = append(want, u.Kernel+"/"+u.Name)
		}
		sort.Strings(want)
		if !slices.Equal(first, want) {
			t.Errorf("n=%d: started first %v, want %v", n, first, want)
		}
		if n == 1 {
			var order []string
			for _, u := range units {
				order = append(order, u.Kernel+"/"+u.Name)
			}
			if !slices.Equal(started, order) {
				t.Errorf("n=1: ran %v, want the schedule %v", started, order)
			}
		}
	}
}

// goTestOutput is a package's go test -v output with the given top-level tests, each "name:verdict:seconds".
func goTestOutput(tests ...string) []byte {
	var b strings.Builder
	for _, tt := range tests {
		f := strings.Split(tt, ":")
		fmt.Fprintf(&b, "=== RUN   %s\n", f[0])
		if f[1] == "SKIP" {
			fmt.Fprintf(&b, "    x_test.go:1: skipped because %s\n", f[0])
		}
		fmt.Fprintf(&b, "--- %s: %s (%ss)\n", f[1], f[0], f[2])
	}
	return []byte(b.String())
}

func TestMergeKernelEqualsOneBoot(t *testing.T) {
	const m = "github.com/goverbs/goverbs/"
	pkgs := pkgsOf(m+"cgroup", m+"cmd/goverbs/internal/interop", m+"test/smoke")
	outs := map[string][]byte{
		m + "cgroup":                       goTestOutput("TestA:PASS:3.00", "TestB:SKIP:0.00", "TestC:FAIL:7.50", "TestD:PASS:2.00"),
		m + "cmd/goverbs/internal/interop": goTestOutput("TestI1:PASS:100.00", "TestI2:FAIL:50.00", "TestI3:SKIP:0.00", "TestI4:PASS:3.00", "TestI5:PASS:1.00", "TestI6:PASS:1.00"),
		m + "test/smoke":                   goTestOutput("TestS1:PASS:1.00", "TestS2:SKIP:0.00", "TestS3:PASS:3.00", "TestS4:PASS:0.50"),
	}
	// One boot: every package in order into one summary.
	one := Summary{Release: "6.1.0-56-amd64", Upstream: "6.1.192-2"}
	for _, p := range pkgs {
		countTests(&one, p.ImportPath, outs[p.ImportPath])
		if strings.Contains(string(outs[p.ImportPath]), "--- FAIL") {
			one.PkgFailed++
		} else {
			one.PkgOK++
		}
	}
	// Split: the groups' summaries, merged, in the schedule's order (interop first).
	groups := splitGroups(pkgs, 2, defaultHeavy)
	var units []unitResult
	for _, u := range schedule([]string{"6.1"}, groups, nil) {
		s := Summary{Release: one.Release, Upstream: one.Upstream}
		for _, p := range u.Pkgs {
			countTests(&s, p.ImportPath, outs[p.ImportPath])
			if strings.Contains(string(outs[p.ImportPath]), "--- FAIL") {
				s.PkgFailed++
			} else {
				s.PkgOK++
			}
		}
		units = append(units, unitResult{Unit: u, Summary: s, ExitCode: 1, Wall: 10 * time.Second, Boot: time.Second, Tests: 9 * time.Second})
	}
	if len(units) != 2 || units[0].Unit.Name != "interop" {
		t.Fatalf("units %+v", units)
	}
	r := mergeKernel("6.1", pkgs, units)
	if !reflect.DeepEqual(r.Summary, one) {
		t.Errorf("merged summary differs from one boot's:\nmerged %+v\none    %+v", r.Summary, one)
	}
	if len(r.Slowest) != slowestN || r.Slowest[0].Test != m+"cmd/goverbs/internal/interop: TestI1" {
		t.Errorf("slowest %+v", r.Slowest)
	}
	if r.Packages != 3 || r.Units != 2 || r.ExitCode != 1 || r.Total != 20*time.Second || r.Boot != 2*time.Second {
		t.Errorf("kernel result %+v", r)
	}
	// The printed row is the one boot's.
	var merged, single bytes.Buffer
	printSummary(&merged, []kernelResult{r}, summaryNote{jobs: 2})
	printSummary(&single, []kernelResult{{Selector: "6.1", Summary: one, Packages: 3, ExitCode: 1, Total: 20 * time.Second}}, summaryNote{jobs: 2})
	if merged.String() != single.String() {
		t.Errorf("merged summary prints\n%s\none boot's prints\n%s", merged.String(), single.String())
	}
	if !strings.Contains(merged.String(), "1 ok 2 FAIL") || !strings.Contains(merged.String(), "6.1 FAIL "+m+"cgroup: TestC") {
		t.Errorf("summary:\n%s", merged.String())
	}
}

func TestMergeKernelUnitWithoutSummary(t *testing.T) {
	pkgs := pkgsOf("a", "b", "c")
	ok := unitResult{Summary: Summary{Release: "r", PkgOK: 2, Run: 4, Passed: 4}, Wall: time.Second}
	lost := unitResult{ExitCode: 1, LabErr: "lab: stopped the VM", Wall: 2 * time.Second}
	r := mergeKernel("6.12", pkgs, []unitResult{lost, ok})
	if r.ExitCode != 1 || r.LabErr != "lab: stopped the VM" || r.Release != "r" || r.PkgOK != 2 || r.Total != 3*time.Second {
		t.Errorf("%+v", r)
	}
	var b bytes.Buffer
	printSummary(&b, []kernelResult{r}, summaryNote{})
	if !strings.Contains(b.String(), "2 ok 1 FAIL") {
		t.Errorf("a unit whose VM failed must count its packages as failed:\n%s", b.String())
	}
	if r := mergeKernel("newest", pkgs, nil); r.ExitCode == 0 || r.Packages != 3 {
		t.Errorf("no units: %+v", r)
	}
}

func TestJobCount(t *testing.T) {
	for _, tc := range []struct {
		flag, env string
		ncpu      int
		want      int
		err       bool
	}{
		{"", "", 1, 1, false},
		{"", "", 2, 2, false},
		{"", "", 16, 2, false},
		{"", "3", 2, 3, false},
		{"1", "3", 2, 1, false},
		{"0", "", 2, 0, true},
		{"", "x", 2, 0, true},
	} {
		got, err := jobCount(tc.flag, tc.env, tc.ncpu)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("jobCount(%q, %q, %d) = %d, %v; want %d (error %v)", tc.flag, tc.env, tc.ncpu, got, err, tc.want, tc.err)
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	w := &prefixWriter{w: &out, mu: &mu, prefix: "[6.1 rest] "}
	fmt.Fprint(w, "lab: one\nlab: tw")
	fmt.Fprint(w, "o\n")
	fmt.Fprint(w, "\nend")
	w.Flush()
	want := "[6.1 rest] lab: one\n[6.1 rest] lab: two\n[6.1 rest] \n[6.1 rest] end\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// With every unit's time from the last full run, the longest start first; with one missing, schedule's order
// stays.
func TestOrderByEstimate(t *testing.T) {
	units := schedule([]string{"6.1", "6.12", "newest"}, []group{{Name: "interop", Heavy: true}, {Name: "rest"}}, nil)
	est := estimates{"6.1/interop": 445, "6.12/interop": 397, "newest/interop": 552, "6.1/rest": 302, "6.12/rest": 269, "newest/rest": 325}
	var got []string
	for _, u := range orderByEstimate(units, est) {
		got = append(got, unitKey(u))
	}
	want := []string{"newest/interop", "6.1/interop", "6.12/interop", "newest/rest", "6.1/rest", "6.12/rest"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v", got, want)
	}
	delete(est, "6.12/rest")
	if o := orderByEstimate(units, est); unitKey(o[0]) != unitKey(units[0]) || unitKey(o[5]) != unitKey(units[5]) {
		t.Fatal("an incomplete set of estimates changed the order")
	}
	file := filepath.Join(t.TempDir(), "d.json")
	saveEstimates(file, nil, []unitResult{{Unit: units[0], Wall: 3 * time.Second}, {Unit: units[1], LabErr: "boom", Wall: time.Second}})
	if e := loadEstimates(file); len(e) != 1 || e[unitKey(units[0])] != 3 {
		t.Fatalf("saved %v", e)
	}
}

func TestScaleTimeouts(t *testing.T) {
	if to, pt := scaleTimeouts(30*time.Minute, 15*time.Minute, 3, false, false); to != 90*time.Minute || pt != 45*time.Minute {
		t.Fatalf("defaults with -count 3: %v %v", to, pt)
	}
	if to, pt := scaleTimeouts(20*time.Minute, 10*time.Minute, 3, true, true); to != 20*time.Minute || pt != 10*time.Minute {
		t.Fatalf("given bounds changed: %v %v", to, pt)
	}
	if to, pt := scaleTimeouts(30*time.Minute, 15*time.Minute, 1, false, false); to != 30*time.Minute || pt != 15*time.Minute {
		t.Fatalf("-count 1 changed the defaults: %v %v", to, pt)
	}
}

func TestSummaryNamesTheDevice(t *testing.T) {
	if lab.ProviderEnv != labtest.ProviderEnv {
		t.Errorf("lab.ProviderEnv %q, labtest.ProviderEnv %q", lab.ProviderEnv, labtest.ProviderEnv)
	}
	r := kernelResult{Selector: "6.1", Summary: Summary{Release: "6.1.0-56-amd64", Device: "siw0", PkgOK: 1, Run: 2, Passed: 2}, Packages: 1}
	var rxe, siw bytes.Buffer
	printSummary(&rxe, []kernelResult{r}, summaryNote{})
	printSummary(&siw, []kernelResult{r}, summaryNote{device: "siw0"})
	if strings.Contains(rxe.String(), "device") || strings.Contains(rxe.String(), "siw0") {
		t.Errorf("rxe summary has a device column:\n%s", rxe.String())
	}
	if !strings.Contains(siw.String(), " device ") || !strings.Contains(siw.String(), " siw0 ") {
		t.Errorf("siw summary does not name the device:\n%s", siw.String())
	}
}
