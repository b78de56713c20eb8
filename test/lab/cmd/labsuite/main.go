// Command labsuite runs the tests of every package that has lab tests inside ONE lab VM boot, and prints go
// test's own summary lines ("ok", "FAIL", "--- FAIL") so the result reads like `go test`.
//
// Booting the lab costs tens of seconds under TCG, so `go test -exec labexec ./...` (one boot per package) is
// for development; `make test` uses this. It:
//
//  1. lists the packages whose tests use test/labtest (the ones with kernel-facing tests),
//  2. compiles each package's test binary on the host (go test -c),
//  3. boots the lab once and runs this same program inside it in "inner" mode, which runs every binary in its
//     package directory with GOVERBS_LAB_REQUIRED=1 (a missing device fails instead of skipping) and prints the
//     results,
//  4. exits non-zero if any package failed, or if the lab itself failed.
//
// With -kernels it does this once per kernel of a list (one boot each: "all" is lab.Matrix, 6.1, 6.12 and
// the newest Debian kernel; default: $GOVERBS_LAB_KERNEL, else 6.1) and ends with a per-kernel summary:
// kernel version, packages ok/failed, tests run, passed, failed and skipped, each skip with its reason, and
// the time the kernel took. `make test` runs -kernels all.
//
// Usage: go run ./test/lab/cmd/labsuite [-kernels all|6.1,6.12,newest] [-run REGEXP] [-count N] [-v] [-timeout 20m] [packages...]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

type pkg struct {
	ImportPath string
	Dir        string
	Binary     string
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("labsuite", flag.ContinueOnError)
	inner := fs.String("inner", "", "run the manifest FILE inside the lab (internal)")
	runRE := fs.String("run", "", "run only tests matching REGEXP (passed as -test.run)")
	verbose := fs.Bool("v", false, "verbose test output")
	count := fs.Int("count", 1, "run each test N times (passed as -test.count; for hunting flaky tests)")
	race := fs.Bool("race", false, "build the test binaries with the race detector (needs cgo and a C compiler on the host; the binaries then use the host's libc, which the lab mounts)")
	timeout := fs.Duration("timeout", 30*time.Minute, "limit for each kernel's lab run")
	pkgTimeout := fs.Duration("pkgtimeout", 15*time.Minute, "per-package test timeout inside the lab")
	kernelsFlag := fs.String("kernels", "", "kernels to run on, one boot each: all (= "+strings.Join(lab.Matrix, ",")+") or a comma list (default $"+lab.KernelEnv+", else 6.1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *inner != "" {
		return runInner(*inner)
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	work := filepath.Join(root, ".lab", "suite")
	os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	pkgs, err := labPackages(patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	if len(pkgs) == 0 {
		fmt.Fprintln(os.Stderr, "labsuite: no package uses test/labtest; nothing to run in the lab")
		return 1
	}
	for i := range pkgs {
		p := &pkgs[i]
		p.Binary = filepath.Join(work, strings.ReplaceAll(p.ImportPath, "/", "_")+".test")
		args := []string{"test", "-c", "-o", p.Binary}
		if *race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, p.ImportPath)...)
		if *race {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		}
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Printf("FAIL\t%s [build failed]\n", p.ImportPath)
			return 1
		}
	}
	self := filepath.Join(work, "labsuite")
	build := exec.Command("go", "build", "-o", self, "./test/lab/cmd/labsuite")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite: build itself:", err)
		return 1
	}
	// The tools under test, as a binary: interop tests run it under the C tools' names (multi-call).
	bin := filepath.Join(work, "goverbs")
	gb := exec.Command("go", "build", "-o", bin, "./cmd/goverbs")
	gb.Env = append(os.Environ(), "CGO_ENABLED=0")
	gb.Stdout, gb.Stderr = os.Stderr, os.Stderr
	if err := gb.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite: build cmd/goverbs:", err)
		return 1
	}
	manifest := filepath.Join(work, "manifest.json")
	if *count < 1 {
		fmt.Fprintf(os.Stderr, "labsuite: -count %d: must be at least 1\n", *count)
		return 2
	}
	m := manifestT{pkgs, *runRE, *verbose, pkgTimeout.String(), *count}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	kernels, err := kernelList(*kernelsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 2
	}
	// Other Debian releases' C tools, for the interop tests that run goverbs against them (test/interop,
	// impl "c@trixie"): a root per era in the lab cache, passed as GOVERBS_LAB_PEER_<ERA>.
	peers := map[string]string{}
	if cache, err := lab.CacheDir(); err == nil {
		for era := range lab.PeerEras {
			root, err := lab.EnsurePeerRoot(context.Background(), cache, era, os.Stderr)
			if err != nil {
				fmt.Fprintf(os.Stderr, "labsuite: %v (the tests against %s's tools will fail)\n", err, era)
				continue
			}
			peers["GOVERBS_LAB_PEER_"+strings.ToUpper(era)] = root
		}
	}
	var results []kernelResult
	code := 0
	for _, k := range kernels {
		if len(kernels) > 1 {
			fmt.Printf("=== kernel %s\n", k)
		}
		r := runKernel(k, len(pkgs), work, root, manifest, bin, self, *timeout, peers)
		if r.ExitCode != 0 {
			code = 1
		}
		results = append(results, r)
	}
	printSummary(os.Stdout, results)
	return code
}

// manifestT is what the host tells the inner labsuite to run.
type manifestT struct {
	Pkgs       []pkg
	Run        string
	Verbose    bool
	PkgTimeout string
	Count      int
}

// kernelList expands -kernels: "" is $GOVERBS_LAB_KERNEL (else 6.1), "all" is lab.Matrix.
func kernelList(flagValue string) ([]string, error) {
	v := strings.TrimSpace(flagValue)
	if v == "" {
		sel, err := lab.KernelSelector()
		if err != nil {
			return nil, err
		}
		if sel == "" {
			sel = "6.1"
		}
		return []string{sel}, nil
	}
	if v == "all" {
		return lab.Matrix, nil
	}
	var ks []string
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			ks = append(ks, k)
		}
	}
	return ks, nil
}

// kernelResult is one kernel's run, from the host's side plus the inner summary.
type kernelResult struct {
	Selector string
	Summary
	Packages int
	ExitCode int
	LabErr   string
	Boot     time.Duration
	Tests    time.Duration
	Total    time.Duration // wall time for this kernel, preparation (downloads, vmlinux, initramfs) included
}

// runKernel boots the lab once on kernel sel and runs the manifest inside.
func runKernel(sel string, npkgs int, work, root, manifest, bin, self string, timeout time.Duration, extraEnv map[string]string) kernelResult {
	start := time.Now()
	r := kernelResult{Selector: sel, ExitCode: 1, Packages: npkgs}
	out := filepath.Join(work, "out-"+sel)
	os.RemoveAll(out)
	// The host side of the lab (EnsureKernel) reads the selector from the environment.
	os.Setenv(lab.KernelEnv, sel)
	env := lab.HostEnv()
	env["GOVERBS_LAB_REQUIRED"] = "1"
	env["GOVERBS_BIN"] = bin
	for k, v := range extraEnv {
		env[k] = v
	}
	res, err := lab.RunResult(context.Background(), lab.Config{Timeout: timeout, Env: env, Workdir: root, OutDir: out},
		[]string{self, "-inner", manifest})
	r.Total = time.Since(start)
	if b, rerr := os.ReadFile(filepath.Join(out, "summary.json")); rerr == nil {
		_ = json.Unmarshal(b, &r.Summary)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		fmt.Printf("FAIL\tlab [the lab VM failed on kernel %s]\n", sel)
		r.LabErr = err.Error()
		return r
	}
	r.ExitCode, r.Boot, r.Tests = res.ExitCode, res.Boot, res.Command
	fmt.Fprintf(os.Stderr, "labsuite: kernel %s (%s): %d packages in one lab boot (%s): boot %.1fs, tests %.1fs, total %.1fs\n",
		sel, r.Release, r.Packages, res.Accel, res.Boot.Seconds(), res.Command.Seconds(), r.Total.Seconds())
	return r
}

// printSummary prints the per-kernel table and every skip with its reason.
func printSummary(w io.Writer, results []kernelResult) {
	fmt.Fprintf(w, "\nlabsuite summary (one lab boot per kernel)\n")
	fmt.Fprintf(w, "%-8s %-40s %-14s %6s %6s %6s %7s %8s\n", "kernel", "version", "packages", "tests", "passed", "failed", "skipped", "time")
	var total time.Duration
	for _, r := range results {
		total += r.Total
		version := r.Release
		if r.Upstream != "" {
			version += " (" + r.Upstream + ")"
		}
		if version == "" {
			version = "? (" + r.LabErr + ")"
			if len(version) > 40 {
				version = version[:39] + "…"
			}
		}
		pk := fmt.Sprintf("%d ok", r.PkgOK)
		if r.PkgFailed > 0 || r.PkgOK+r.PkgFailed < r.Packages {
			pk = fmt.Sprintf("%d ok %d FAIL", r.PkgOK, r.Packages-r.PkgOK)
		}
		fmt.Fprintf(w, "%-8s %-40s %-14s %6d %6d %6d %7d %7.0fs\n", r.Selector, version, pk, r.Run, r.Passed, r.Failed, len(r.Skips), r.Total.Seconds())
	}
	fmt.Fprintf(w, "total %.0fs\n", total.Seconds())
	for _, r := range results {
		for _, f := range r.Fails {
			fmt.Fprintf(w, "  %s FAIL %s\n", r.Selector, f)
		}
	}
	for _, r := range results {
		for _, s := range r.Skips {
			fmt.Fprintf(w, "  %s skip %s: %s\n", r.Selector, s.Test, s.Reason)
		}
	}
	for _, r := range results {
		for _, t := range r.Slowest {
			fmt.Fprintf(w, "  %s slow %7.1fs %s\n", r.Selector, t.Seconds, t.Test)
		}
	}
}

// labPackages lists the packages among patterns whose tests import test/labtest.
func labPackages(patterns []string) ([]pkg, error) {
	args := append([]string{"list", "-f", `{{.ImportPath}}	{{.Dir}}	{{join .TestImports " "}} {{join .XTestImports " "}}`}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) < 3 {
			continue
		}
		for _, imp := range strings.Fields(f[2]) {
			if imp == "github.com/goverbs/goverbs/test/labtest" {
				pkgs = append(pkgs, pkg{ImportPath: f[0], Dir: f[1]})
				break
			}
		}
	}
	return pkgs, sc.Err()
}

// Summary is what the inner labsuite reports for one kernel ($GOVERBS_LAB_OUT/summary.json).
type Summary struct {
	Release   string // uname -r
	Upstream  string // the kernel version from /proc/version ("Debian 6.1.192-2" -> 6.1.192-2)
	PkgOK     int
	PkgFailed int
	Run       int // tests and subtests that finished: passed + failed + skipped
	Passed    int
	Failed    int
	Fails     []string // package: test
	Skips     []skip
	Slowest   []timed // the top-level tests that took longest, longest first (at most slowestN)
}

type skip struct{ Test, Reason string }

// timed is a top-level test and the time go test -v reported for it.
type timed struct {
	Test    string
	Seconds float64
}

// slowestN is how many of a kernel's slowest tests the summary names: where the lab's time goes.
const slowestN = 8

// addTimed keeps s.Slowest the slowestN longest tests, longest first.
func (s *Summary) addTimed(t timed) {
	i := sort.Search(len(s.Slowest), func(i int) bool { return s.Slowest[i].Seconds < t.Seconds })
	if i >= slowestN {
		return
	}
	s.Slowest = slices.Insert(s.Slowest, i, t)
	if len(s.Slowest) > slowestN {
		s.Slowest = s.Slowest[:slowestN]
	}
}

// countTests reads go test -v output: every "--- PASS/FAIL/SKIP: name" line at any depth, and for a skip the
// last line its test logged (go test -v streams a test's log lines under "=== RUN/CONT/NAME name" before its
// "--- SKIP" line).
func countTests(s *Summary, importPath string, out []byte) {
	current := ""
	last := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if h, ok := strings.CutPrefix(trimmed, "=== "); ok {
			if f := strings.Fields(h); len(f) == 2 && (f[0] == "RUN" || f[0] == "CONT" || f[0] == "NAME") {
				current = f[1]
			}
			continue
		}
		verdict, rest, ok := strings.Cut(trimmed, ": ")
		if !ok || !strings.HasPrefix(verdict, "--- ") {
			if trimmed != "" && line != trimmed && current != "" {
				last[current] = trimmed
			}
			continue
		}
		name, dur, _ := strings.Cut(rest, " (")
		if line == trimmed && !strings.Contains(name, "/") {
			// A top-level test: "--- PASS: TestX (12.34s)".
			if sec, err := strconv.ParseFloat(strings.TrimSuffix(dur, "s)"), 64); err == nil {
				s.addTimed(timed{importPath + ": " + name, sec})
			}
		}
		switch verdict {
		case "--- PASS":
			s.Passed++
		case "--- FAIL":
			s.Failed++
			s.Fails = append(s.Fails, importPath+": "+name)
		case "--- SKIP":
			reason := last[name]
			if reason == "" {
				reason = "(no reason printed)"
			}
			s.Skips = append(s.Skips, skip{importPath + ": " + name, reason})
		default:
			continue
		}
		s.Run++
	}
}

// failedOutput keeps, of a failed package's go test -v output, what explains the failure: the lines of every
// test that failed or never finished (a panic, a timeout) with their "=== RUN" headers and "--- FAIL" lines,
// and the lines outside any test (the binary's own, such as "FAIL" or a panic's trace). The logs of the tests
// that passed or skipped are dropped: a package with many chatty tests would otherwise bury the failure, and
// CI shows only part of the output.
func failedOutput(out []byte) []byte {
	lines := strings.SplitAfter(string(out), "\n")
	verdict := map[string]string{}
	for _, line := range lines {
		t := strings.TrimLeft(line, " ")
		if v, rest, ok := strings.Cut(t, ": "); ok && strings.HasPrefix(v, "--- ") {
			name, _, _ := strings.Cut(strings.TrimSpace(rest), " (")
			if verdict[name] != "--- FAIL" { // with -count, one failed run of a name keeps all its runs' lines
				verdict[name] = v
			}
		}
	}
	failed := func(name string) bool {
		v, ok := verdict[name]
		return !ok || v == "--- FAIL"
	}
	var b bytes.Buffer
	current := ""
	for _, line := range lines {
		t := strings.TrimLeft(line, " ")
		if h, ok := strings.CutPrefix(t, "=== "); ok {
			if f := strings.Fields(h); len(f) == 2 {
				if f[0] == "RUN" || f[0] == "CONT" || f[0] == "NAME" {
					current = f[1]
				}
				if f[0] == "RUN" && failed(f[1]) {
					b.WriteString(line)
				}
			}
			continue
		}
		if v, _, ok := strings.Cut(t, ": "); ok && strings.HasPrefix(v, "--- ") {
			if v == "--- FAIL" {
				b.WriteString(line)
			}
			if line == t {
				current = "" // a top-level test ended: what follows is the binary's
			}
			continue
		}
		if current == "" || failed(current) {
			b.WriteString(line)
		}
	}
	return b.Bytes()
}

// runInner runs inside the VM: every test binary in its package directory, with go test's summary lines.
func runInner(manifest string) int {
	b, err := os.ReadFile(manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	var m manifestT
	if err := json.Unmarshal(b, &m); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	var sum Summary
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		sum.Release = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/version"); err == nil {
		// "Linux version 6.1.0-56-amd64 (...) #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-...)"
		if _, after, ok := strings.Cut(string(b), " Debian "); ok {
			sum.Upstream, _, _ = strings.Cut(after, " ")
		}
	}
	fmt.Printf("kernel %s (%s)\n", sum.Release, sum.Upstream)
	failed := 0
	for _, p := range m.Pkgs {
		args := []string{"-test.timeout=" + m.PkgTimeout, "-test.v"}
		if m.Run != "" {
			args = append(args, "-test.run="+m.Run)
		}
		if m.Count > 1 {
			args = append(args, fmt.Sprintf("-test.count=%d", m.Count))
		}
		cmd := exec.Command(p.Binary, args...)
		cmd.Dir = p.Dir
		var buf bytes.Buffer
		w := io.Writer(&buf)
		if m.Verbose {
			w = io.MultiWriter(&buf, os.Stdout)
		}
		cmd.Stdout, cmd.Stderr = w, w
		start := time.Now()
		err := cmd.Run()
		el := time.Since(start).Seconds()
		countTests(&sum, p.ImportPath, buf.Bytes())
		if err != nil {
			failed++
			sum.PkgFailed++
			if !m.Verbose {
				os.Stdout.Write(failedOutput(buf.Bytes()))
			}
			fmt.Printf("FAIL\t%s\t%.3fs\n", p.ImportPath, el)
			continue
		}
		sum.PkgOK++
		fmt.Printf("ok  \t%s\t%.3fs\n", p.ImportPath, el)
	}
	if out := os.Getenv(lab.OutDirEnv); out != "" {
		b, _ := json.Marshal(sum)
		if err := os.WriteFile(filepath.Join(out, "summary.json"), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "labsuite:", err)
		}
	}
	if failed > 0 {
		fmt.Printf("FAIL: %d of %d lab packages failed\n", failed, len(m.Pkgs))
		return 1
	}
	return 0
}
