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
// With -kernels it does this once per kernel of a list ("all" is lab.Matrix, 6.1, 6.12 and the newest Debian
// kernel; default: $GOVERBS_LAB_KERNEL, else 6.1) and ends with a per-kernel summary: kernel version,
// packages ok/failed, tests run, passed, failed and skipped, each skip with its reason, and the time the kernel
// took. `make test` runs -kernels all.
//
// With -j N (default $GOVERBS_LAB_JOBS, else min(2, CPUs): one VM per core, each VM has one vCPU under TCG) it
// runs up to N lab VMs at once. Each kernel's packages are then split into units, one VM boot each (see
// splitGroups): every package of -heavy (cmd/goverbs/internal/interop, which takes most of a kernel's time) alone, the others
// together. Units run longest first (the heavy ones) on N workers; each unit's stdout is printed as one block
// when it ends ("=== kernel K (unit: U)"), its stderr goes through line by line prefixed "[K U] ", and the
// units' inner summaries are merged back into one row per kernel. -j 1 is the serial run: one boot per kernel,
// in order, output streamed.
//
// With -provider siw (or GOVERBS_LAB_PROVIDER=siw) the lab runs soft-iWARP instead of rdma_rxe: siw0 on veth0,
// from a siw.ko the lab builds once per kernel from Debian's own source (lab.EnsureSIW), and the tests'
// labtest.Device is siw0; the summary then names the device of every kernel's run. Such runs do not record
// unit durations (those are rxe's).
//
// With -siw PKGS (a comma list of packages or patterns) an rxe run also runs those packages on siw0, on the
// kernels of -siw-kernels (default newest), as lab boots of their own in the same schedule: `make test` runs
// the packages that are proven on both devices on both. Their rows in the summary are "KERNEL/siw", with the
// device column.
//
// Usage: go run ./test/lab/cmd/labsuite [-kernels all|6.1,6.12,newest] [-provider rxe|siw] [-siw PKGS [-siw-kernels LIST]] [-j N] [-heavy PKGS] [-run REGEXP] [-count N] [-v] [-timeout 20m] [packages...]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	timeout := fs.Duration("timeout", 30*time.Minute, "limit for each lab VM run (a kernel's, or with -j above 1 a unit's); unset, 30m times -count")
	pkgTimeout := fs.Duration("pkgtimeout", 15*time.Minute, "per-package test timeout inside the lab; unset, 15m times -count")
	kernelsFlag := fs.String("kernels", "", "kernels to run on: all (= "+strings.Join(lab.Matrix, ",")+") or a comma list (default $"+lab.KernelEnv+", else 6.1)")
	jobsFlag := fs.String("j", "", "lab VMs to run at once (default $"+jobsEnv+", else min(2, CPUs)); 1: one boot per kernel, one after another")
	freshRefs := fs.Bool("fresh-refs", false, "run every C reference pair again instead of taking it from the lab cache (and record it anew there)")
	providerFlag := fs.String("provider", "", "software RDMA provider of the lab: rxe (rxe0) or siw (siw0, siw.ko built once per kernel from Debian's source) (default $"+lab.ProviderEnv+", else rxe)")
	siwFlag := fs.String("siw", "", "with the rxe lab, also run these packages (a comma or space list of import paths, ./dirs or patterns) on siw0, on the kernels of -siw-kernels")
	siwKernelsFlag := fs.String("siw-kernels", "newest", "the kernels -siw's packages run on siw0 (all or a comma list)")
	heavyFlag := fs.String("heavy", strings.Join(defaultHeavy, ","), "with -j above 1, the packages (comma list of import paths or ./dirs) that run as lab boots of their own")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *inner != "" {
		return runInner(*inner)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	*timeout, *pkgTimeout = scaleTimeouts(*timeout, *pkgTimeout, *count, set["timeout"], set["pkgtimeout"])
	jobs, err := jobCount(*jobsFlag, os.Getenv(jobsEnv), runtime.NumCPU())
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 2
	}
	provider, err := providerOf(*providerFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	siwPatterns := strings.FieldsFunc(*siwFlag, func(r rune) bool { return r == ',' || r == ' ' })
	if len(siwPatterns) > 0 && provider != lab.ProviderRXE {
		fmt.Fprintln(os.Stderr, "labsuite: -siw adds siw runs to an rxe run; with -provider siw name the packages as arguments")
		return 2
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
	var siwPkgs []pkg
	if len(siwPatterns) > 0 {
		if siwPkgs, err = labPackages(siwPatterns); err != nil {
			fmt.Fprintln(os.Stderr, "labsuite: -siw:", err)
			return 1
		}
		if len(siwPkgs) == 0 {
			fmt.Fprintln(os.Stderr, "labsuite: -siw: no package among", strings.Join(siwPatterns, ","), "uses test/labtest")
			return 2
		}
	}
	// Every package's test binary once, whichever runs use it.
	toBuild := slices.Clone(pkgs)
	for _, p := range siwPkgs {
		if !slices.ContainsFunc(toBuild, func(q pkg) bool { return q.ImportPath == p.ImportPath }) {
			toBuild = append(toBuild, p)
		}
	}
	for i := range siwPkgs {
		siwPkgs[i].Binary = testBinary(work, siwPkgs[i].ImportPath)
	}
	for i := range pkgs {
		pkgs[i].Binary = testBinary(work, pkgs[i].ImportPath)
	}
	for i := range toBuild {
		p := &toBuild[i]
		p.Binary = testBinary(work, p.ImportPath)
		// -trimpath: the build cache's keys then do not depend on where the tree is, so a fresh clone reuses what
		// another checkout built (without it every clone recompiles every package of the module).
		args := []string{"test", "-c", "-trimpath", "-o", p.Binary}
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
	if err := goBuild(self, "./test/lab/cmd/labsuite"); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite: build itself:", err)
		return 1
	}
	// The tools under test, as a binary: interop tests run it under the C tools' names (multi-call).
	bin := filepath.Join(work, "goverbs")
	if err := goBuild(bin, "./cmd/goverbs"); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite: build cmd/goverbs:", err)
		return 1
	}
	if *count < 1 {
		fmt.Fprintf(os.Stderr, "labsuite: -count %d: must be at least 1\n", *count)
		return 2
	}
	groups := splitGroups(pkgs, jobs, splitList(*heavyFlag))
	split := len(groups) > 1 // the run's own kernels are split into units
	if len(siwPkgs) > 0 {
		groups = append(groups, group{Name: uniqueName(groups, siwGroup), Pkgs: siwPkgs, Provider: lab.ProviderSIW})
	}
	for i := range groups {
		g := &groups[i]
		g.Manifest = filepath.Join(work, "manifest-"+g.Name+".json")
		m := manifestT{g.Pkgs, *runRE, *verbose, pkgTimeout.String(), *count}
		b, _ := json.Marshal(m)
		if err := os.WriteFile(g.Manifest, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "labsuite:", err)
			return 1
		}
	}
	kernels, err := kernelList(*kernelsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 2
	}
	var siwKernels []string
	if len(siwPkgs) > 0 {
		if siwKernels, err = kernelList(*siwKernelsFlag); err != nil {
			fmt.Fprintln(os.Stderr, "labsuite: -siw-kernels:", err)
			return 2
		}
	}
	for _, k := range append(slices.Clone(kernels), siwKernels...) {
		if _, err := lab.CheckKernelSelector(k); err != nil {
			fmt.Fprintln(os.Stderr, "labsuite:", err)
			return 2
		}
	}
	// Other Debian releases' C tools, for the interop tests that run goverbs against them (cmd/goverbs/internal/interop,
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
	// Reference outputs of C pairs (labtest.RefKey): read in the VM from the cache, recorded ones added after each
	// boot (saveRefs).
	refsDir := ""
	if cache, err := lab.CacheDir(); err == nil {
		refsDir = filepath.Join(cache, "refs")
		if !*freshRefs {
			peers[refsEnv] = refsDir
		}
	}
	labStart := time.Now()
	// Every kernel's host-side preparation (download, unpack, vmlinux, init, initramfs) once, serially, before
	// any VM starts: the lab's cache is safe for concurrent builders, but this way two units of one kernel never
	// wait on each other's build, and the messages come in order.
	prep := map[string]time.Duration{}
	prepErr := map[string]error{}
	targets := runTargets(kernels, provider, siwKernels)
	for _, t := range targets {
		start := time.Now()
		if _, err := lab.Prepare(context.Background(), lab.Config{Kernel: t.kernel, Provider: t.provider}); err != nil {
			fmt.Fprintf(os.Stderr, "labsuite: kernel %s (%s): %v\n", t.kernel, t.provider, err)
			fmt.Printf("FAIL\tlab [the lab could not be prepared for kernel %s with %s]\n", t.kernel, t.provider)
			prepErr[t.row()] = err
		}
		prep[t.row()] = time.Since(start)
	}
	var units []unit
	for _, u := range schedule(kernels, groups, siwKernels) {
		if prepErr[u.row()] == nil {
			units = append(units, u)
		}
	}
	// The whole suite (every lab package, no -run, one count) records each unit's wall time in the lab cache;
	// the next such run starts the longest units first by those times (7.3's interop is longer than 6.1's).
	full := len(fs.Args()) == 0 && *runRE == "" && *count == 1 && !*race && provider == lab.ProviderRXE
	var est estimates
	estFile := ""
	if cache, err := lab.CacheDir(); err == nil && full {
		estFile = filepath.Join(cache, "labsuite-durations.json")
		est = loadEstimates(estFile)
		units = orderByEstimate(units, est)
	}
	workers := min(jobs, len(units))
	stream := workers <= 1
	if !stream {
		fmt.Fprintf(os.Stderr, "labsuite: %d lab boots (%d kernels, units %s), %d at a time\n", len(units), len(kernels), groupNames(groups), workers)
	}
	cfg := runConfig{work: work, root: root, bin: bin, self: self, timeout: *timeout, extraEnv: peers, refsDir: refsDir,
		split: split, stream: stream, multi: len(kernels) > 1, provider: provider}
	unitResults := runUnits(units, workers, func(u unit) unitResult { return runUnit(u, cfg) })
	if estFile != "" {
		saveEstimates(estFile, est, unitResults)
	}
	var results []kernelResult
	code := 0
	for _, t := range targets {
		var rs []unitResult
		for _, r := range unitResults {
			if r.Unit.row() == t.row() {
				rs = append(rs, r)
			}
		}
		rowPkgs := pkgs
		if t.extra {
			rowPkgs = siwPkgs
		}
		r := mergeKernel(t.row(), rowPkgs, rs)
		r.Total += prep[t.row()]
		if err := prepErr[t.row()]; err != nil {
			r.LabErr, r.ExitCode = err.Error(), 1
		}
		if r.ExitCode != 0 {
			code = 1
		}
		results = append(results, r)
	}
	note := summaryNote{wall: time.Since(labStart), jobs: workers, groups: groupNames(groups), split: split}
	if provider != lab.ProviderRXE || len(siwKernels) > 0 {
		note.device = lab.DeviceFor(provider)
	}
	printSummary(os.Stdout, results, note)
	return code
}

// testBinary is where a package's test binary is built.
func testBinary(work, importPath string) string {
	return filepath.Join(work, strings.ReplaceAll(importPath, "/", "_")+".test")
}

// siwGroup names the group of -siw's packages.
const siwGroup = "siw"

// target is one row of the summary: a kernel with a provider.
type target struct {
	kernel, provider string
	extra            bool // -siw's run, beside the run's own provider
}

// row is the summary's name of the target: the kernel selector, with "/siw" for -siw's runs.
func (t target) row() string {
	if t.extra {
		return t.kernel + "/" + t.provider
	}
	return t.kernel
}

// runTargets are the run's kernels with its provider, then -siw's kernels with siw.
func runTargets(kernels []string, provider string, siwKernels []string) []target {
	var ts []target
	for _, k := range kernels {
		ts = append(ts, target{kernel: k, provider: provider})
	}
	for _, k := range siwKernels {
		ts = append(ts, target{kernel: k, provider: lab.ProviderSIW, extra: true})
	}
	return ts
}

// providerOf is -provider's value, else $GOVERBS_LAB_PROVIDER's, checked ("rxe" when neither is set).
func providerOf(flagValue string) (string, error) {
	if strings.TrimSpace(flagValue) != "" {
		return lab.CheckProvider(flagValue)
	}
	return lab.ProviderSelector()
}

// goBuild builds the package pkg (cgo-free, -trimpath) into out, the go tool's output on stderr.
func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// scaleTimeouts multiplies the default bounds by -count: each run of a package's tests takes as long as the
// first, and cmd/goverbs/internal/interop alone is ≈ 450 s a run under TCG, so -count 3 outgrew the 15-minute package bound. A
// bound given on the command line is kept as it is.
func scaleTimeouts(timeout, pkgTimeout time.Duration, count int, timeoutSet, pkgSet bool) (time.Duration, time.Duration) {
	n := time.Duration(max(count, 1))
	if !timeoutSet {
		timeout *= n
	}
	if !pkgSet {
		pkgTimeout *= n
	}
	return timeout, pkgTimeout
}

// jobsEnv is the default of -j.
const jobsEnv = "GOVERBS_LAB_JOBS"

// jobCount is -j's value: the flag, else $GOVERBS_LAB_JOBS, else min(2, ncpu). Under TCG each VM keeps one host
// core busy, so more VMs than cores only slow each other down (and timing-sensitive tests with them).
func jobCount(flagValue, envValue string, ncpu int) (int, error) {
	v, what := strings.TrimSpace(flagValue), "-j"
	if v == "" {
		v, what = strings.TrimSpace(envValue), jobsEnv
	}
	if v == "" {
		return max(1, min(2, ncpu)), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q: want a number of lab VMs, at least 1", what, v)
	}
	return n, nil
}

// defaultHeavy are the packages that run as lab boots of their own when labsuite runs VMs in parallel:
// cmd/goverbs/internal/interop takes about 400 of the 670 s of a kernel's run on 6.1 (every lab package together), so it
// alone is about as long as all the others.
var defaultHeavy = []string{"github.com/goverbs/goverbs/cmd/goverbs/internal/interop"}

// group is a set of packages that one lab boot runs, on each kernel.
type group struct {
	Name     string // a heavy package's last element ("interop"), "rest" for the others, "all" for everything, "siw" for -siw's
	Heavy    bool
	Pkgs     []pkg
	Manifest string // the inner labsuite's manifest for this group
	Provider string // "" for the run's provider; lab.ProviderSIW for -siw's group, which runs on siwKernels only
}

// splitGroups divides the packages into the groups a kernel's run is split into. With jobs 1 there is one group,
// "all" (one boot per kernel, as without -j). Otherwise each package of heavy that is among pkgs is a group of
// its own, named by its last path element, first; the other packages, in their order, form "rest". When only
// one group would be non-empty it is "all" again: splitting gains nothing then.
func splitGroups(pkgs []pkg, jobs int, heavy []string) []group {
	all := []group{{Name: "all", Pkgs: pkgs}}
	if jobs <= 1 {
		return all
	}
	var groups []group
	var rest []pkg
	for _, p := range pkgs {
		if isHeavy(p.ImportPath, heavy) {
			groups = append(groups, group{Name: uniqueName(groups, path.Base(p.ImportPath)), Heavy: true, Pkgs: []pkg{p}})
		} else {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		groups = append(groups, group{Name: uniqueName(groups, "rest"), Pkgs: rest})
	}
	if len(groups) <= 1 {
		return all
	}
	return groups
}

// modulePath is the module the packages belong to, for -heavy's ./dir form.
const modulePath = "github.com/goverbs/goverbs"

// isHeavy reports whether importPath is in heavy, given as import paths or as ./dirs of the module.
func isHeavy(importPath string, heavy []string) bool {
	for _, h := range heavy {
		if rel, ok := strings.CutPrefix(h, "./"); ok {
			h = modulePath + "/" + strings.TrimSuffix(rel, "/")
		}
		if h == importPath {
			return true
		}
	}
	return false
}

// uniqueName returns name, or name-2, name-3, ... when a group has it already.
func uniqueName(groups []group, name string) string {
	taken := func(n string) bool {
		return slices.ContainsFunc(groups, func(g group) bool { return g.Name == n })
	}
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s-%d", name, i); !taken(n) {
			return n
		}
	}
}

func groupNames(groups []group) string {
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	return strings.Join(names, "+")
}

func splitList(v string) []string {
	var l []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			l = append(l, e)
		}
	}
	return l
}

// unit is one lab VM boot: a group's packages on one kernel.
type unit struct {
	Kernel string
	group
}

// row is the summary row the unit belongs to (target.row).
func (u unit) row() string {
	if u.Provider != "" {
		return u.Kernel + "/" + u.Provider
	}
	return u.Kernel
}

// schedule orders the units longest first: the heavy groups' units (cmd/goverbs/internal/interop on every kernel), then the
// others, kernels in their order within each group. Workers take units in this order, so the long boots start
// first and the short ones fill in around them. With one group ("all") this is the kernels in order.
// -siw's group runs on siwKernels (after the others, being short).
func schedule(kernels []string, groups []group, siwKernels []string) []unit {
	var units []unit
	for _, heavyPass := range []bool{true, false} {
		for _, g := range groups {
			if g.Heavy != heavyPass {
				continue
			}
			ks := kernels
			if g.Provider != "" {
				ks = siwKernels
			}
			for _, k := range ks {
				units = append(units, unit{Kernel: k, group: g})
			}
		}
	}
	return units
}

// estimates are the wall times, in seconds, of the units of the last full run, by unitKey.
type estimates map[string]float64

func unitKey(u unit) string { return u.Kernel + "/" + u.Name }

func loadEstimates(file string) estimates {
	est := estimates{}
	if b, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(b, &est)
	}
	return est
}

// saveEstimates records the units' wall times (those that ran to the end) over est.
func saveEstimates(file string, est estimates, rs []unitResult) {
	if est == nil {
		est = estimates{}
	}
	for _, r := range rs {
		if r.LabErr == "" && r.Wall > 0 {
			est[unitKey(r.Unit)] = r.Wall.Seconds()
		}
	}
	b, _ := json.MarshalIndent(est, "", "  ")
	tmp := file + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, file)
	}
}

// orderByEstimate sorts the units longest first by est when every unit has an estimate (greedy longest-first
// on the workers: the last unit to start is a short one); otherwise it keeps schedule's order.
func orderByEstimate(units []unit, est estimates) []unit {
	for _, u := range units {
		if _, ok := est[unitKey(u)]; !ok {
			return units
		}
	}
	out := slices.Clone(units)
	sort.SliceStable(out, func(i, j int) bool { return est[unitKey(out[i])] > est[unitKey(out[j])] })
	return out
}

// runUnits runs the units on n workers, each taking the next unit in order as it becomes free, and returns the
// results in the units' order.
func runUnits(units []unit, n int, run func(unit) unitResult) []unitResult {
	results := make([]unitResult, len(units))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = run(units[i])
			}
		}()
	}
	for i := range units {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
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

// kernelResult is one kernel's run, from the host's side plus the inner summary, its units' merged.
type kernelResult struct {
	Selector string
	Summary
	Packages int
	Units    int // lab boots
	ExitCode int
	LabErr   string
	Boot     time.Duration // summed over the units
	Tests    time.Duration // summed over the units
	// Total is the kernel's preparation (downloads, vmlinux, initramfs) plus the wall time of each of its lab
	// boots, summed: with -j 1 the time the kernel took; with -j 2 its units overlap other kernels' (and may
	// overlap each other), so the lab phase's wall clock is less than the kernels' totals together.
	Total time.Duration
}

// unitResult is one lab boot.
type unitResult struct {
	Unit unit
	Summary
	ExitCode int
	LabErr   string
	Boot     time.Duration
	Tests    time.Duration
	Wall     time.Duration
}

// runConfig is what every unit's run shares.
type runConfig struct {
	work, root, bin, self string
	timeout               time.Duration
	extraEnv              map[string]string // read only
	refsDir               string            // the lab cache's reference outputs ("": none)
	split                 bool              // kernels are split into several units
	stream                bool              // one VM at a time: output goes straight through, as without -j
	multi                 bool              // several kernels
	provider              string            // the lab's RDMA provider (lab.ProviderRXE, lab.ProviderSIW)
}

// outMu serializes the units' blocks on stdout and their lines on stderr.
var outMu sync.Mutex

// runUnit boots the lab once on the unit's kernel and runs its group's manifest inside. With cfg.stream the
// command's output goes straight to stdout and stderr; otherwise stdout is kept and printed as one block when
// the unit ends, and stderr goes through a line at a time, prefixed with the unit.
func runUnit(u unit, cfg runConfig) unitResult {
	start := time.Now()
	r := unitResult{Unit: u, ExitCode: 1}
	name := "kernel " + u.Kernel
	outDir := "out-" + u.Kernel
	provider := cfg.provider
	if u.Provider != "" {
		provider = u.Provider
	}
	if cfg.split || u.Provider != "" {
		name += " (unit: " + u.Name + ")"
		outDir += "-" + u.Name
	}
	out := filepath.Join(cfg.work, outDir)
	os.RemoveAll(out)
	env := lab.HostEnv()
	env["GOVERBS_LAB_REQUIRED"] = "1"
	env["GOVERBS_BIN"] = cfg.bin
	for k, v := range cfg.extraEnv {
		env[k] = v
	}
	lc := lab.Config{Kernel: u.Kernel, Timeout: cfg.timeout, Env: env, Workdir: cfg.root, OutDir: out}
	if provider != lab.ProviderRXE {
		lc.Provider = provider
	}
	var stdout bytes.Buffer
	var stderr *prefixWriter
	var progress io.Writer = os.Stderr
	if cfg.stream {
		if cfg.multi {
			fmt.Printf("=== %s\n", name)
		}
	} else {
		prefix := "[" + u.Kernel + "] "
		if cfg.split || u.Provider != "" {
			prefix = "[" + u.Kernel + " " + u.Name + "] "
		}
		stderr = &prefixWriter{w: os.Stderr, mu: &outMu, prefix: prefix}
		lc.Stdout, lc.Stderr, lc.Log = &stdout, stderr, stderr
		progress = stderr
	}
	res, err := lab.RunResult(context.Background(), lc, []string{cfg.self, "-inner", u.Manifest})
	r.Wall = time.Since(start)
	if cfg.refsDir != "" {
		if n, err := saveRefs(filepath.Join(out, refsOutDir), cfg.refsDir); err != nil {
			fmt.Fprintf(progress, "labsuite: recording reference outputs: %v\n", err)
		} else if n > 0 {
			fmt.Fprintf(progress, "labsuite: %d reference outputs recorded in %s\n", n, cfg.refsDir)
		}
	}
	if b, rerr := os.ReadFile(filepath.Join(out, "summary.json")); rerr == nil {
		_ = json.Unmarshal(b, &r.Summary)
	}
	var w io.Writer = os.Stdout
	if !cfg.stream {
		w = &stdout
	}
	if err != nil {
		fmt.Fprintln(progress, "labsuite:", err)
		fmt.Fprintf(w, "FAIL\tlab [the lab VM failed on %s]\n", name)
		r.LabErr = err.Error()
	} else {
		r.ExitCode, r.Boot, r.Tests = res.ExitCode, res.Boot, res.Command
		what := fmt.Sprintf("kernel %s (%s)", u.Kernel, r.Release)
		if cfg.split || u.Provider != "" {
			what += ", unit " + u.Name
		}
		fmt.Fprintf(progress, "labsuite: %s: %d packages in one lab boot (%s): boot %.1fs, tests %.1fs, total %.1fs\n",
			what, len(u.Pkgs), res.Accel, res.Boot.Seconds(), res.Command.Seconds(), r.Wall.Seconds())
	}
	if !cfg.stream {
		stderr.Flush()
		outMu.Lock()
		fmt.Printf("=== %s\n", name)
		os.Stdout.Write(stdout.Bytes())
		outMu.Unlock()
	}
	return r
}

// saveRefs copies the reference outputs a boot recorded (under its out directory's refs/) into the lab cache's
// refs directory, each file written to a temporary name and renamed (readers in other runs never see half a
// file). It returns how many files it wrote.
func saveRefs(from, to string) (int, error) {
	n := 0
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == from {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".ref-*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(b)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), dst)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return werr
		}
		n++
		return nil
	})
	return n, err
}

// prefixWriter writes whole lines to w, each with prefix, under mu; Flush writes a last unterminated line.
type prefixWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
	part   []byte // the unterminated end of what was written
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	data := append(p.part, b...)
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 {
		p.part = data
		return n, nil
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(data[:i+1], []byte("\n")) {
		if len(line) > 0 {
			out.WriteString(p.prefix)
			out.Write(line)
		}
	}
	p.part = append([]byte(nil), data[i+1:]...)
	_, err := p.w.Write(out.Bytes())
	return n, err
}

// Flush writes what is left of an unterminated line, ended with a newline.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.part) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.part)
		p.part = nil
	}
}

// mergeKernel merges the results of one kernel's units into its row of the summary: the counts added, failures
// and skips in the packages' order (as one boot would list them), Slowest the slowestN longest of all units.
// pkgs are all the kernel's packages, in order; a unit whose summary is missing (its VM failed) leaves its
// packages uncounted, which the summary shows as failed.
func mergeKernel(sel string, pkgs []pkg, units []unitResult) kernelResult {
	r := kernelResult{Selector: sel, Packages: len(pkgs), Units: len(units)}
	if len(units) == 0 {
		r.ExitCode = 1
	}
	order := map[string]int{}
	for i, p := range pkgs {
		order[p.ImportPath] = i
	}
	pos := func(entry string) int {
		ip, _, _ := strings.Cut(entry, ": ")
		if i, ok := order[ip]; ok {
			return i
		}
		return len(pkgs)
	}
	var labErrs []string
	var slowest []timed
	for _, u := range units {
		if r.Release == "" {
			r.Release, r.Upstream = u.Release, u.Upstream
		}
		if r.Device == "" {
			r.Device = u.Device
		}
		r.PkgOK += u.PkgOK
		r.PkgFailed += u.PkgFailed
		r.Run += u.Run
		r.Passed += u.Passed
		r.Failed += u.Failed
		r.Fails = append(r.Fails, u.Fails...)
		r.Skips = append(r.Skips, u.Skips...)
		r.Notes = append(r.Notes, u.Notes...)
		slowest = append(slowest, u.Slowest...)
		if u.ExitCode != 0 {
			r.ExitCode = 1
		}
		if u.LabErr != "" {
			labErrs = append(labErrs, u.LabErr)
		}
		r.Boot += u.Boot
		r.Tests += u.Tests
		r.Total += u.Wall
	}
	r.LabErr = strings.Join(labErrs, "; ")
	// In the packages' order, as one boot would have seen them: so are ties among the slowest broken.
	sort.SliceStable(r.Fails, func(i, j int) bool { return pos(r.Fails[i]) < pos(r.Fails[j]) })
	sort.SliceStable(r.Skips, func(i, j int) bool { return pos(r.Skips[i].Test) < pos(r.Skips[j].Test) })
	sort.SliceStable(r.Notes, func(i, j int) bool { return pos(r.Notes[i].Test) < pos(r.Notes[j].Test) })
	sort.SliceStable(slowest, func(i, j int) bool { return pos(slowest[i].Test) < pos(slowest[j].Test) })
	for _, t := range slowest {
		r.addTimed(t)
	}
	return r
}

// summaryNote is what the summary says about the run as a whole.
type summaryNote struct {
	wall   time.Duration // the lab phase: preparation and every boot, as the clock on the wall saw it
	jobs   int           // VMs at once
	groups string        // the groups a kernel is split into ("all", or "interop+rest")
	split  bool
	device string // the lab device the runs expect when it is not rxe0 ("siw0"): the table gets a device column
}

// printSummary prints the per-kernel table and every skip with its reason.
func printSummary(w io.Writer, results []kernelResult, note summaryNote) {
	boots := "one lab boot per kernel"
	if note.split {
		boots = "one lab boot per kernel and unit: " + note.groups
	}
	fmt.Fprintf(w, "\nlabsuite summary (%s)\n", boots)
	devCol := func(string) string { return "" }
	if note.device != "" {
		devCol = func(d string) string { return fmt.Sprintf(" %-7s", d) }
	}
	fmt.Fprintf(w, "%-8s %-40s%s %-14s %6s %6s %6s %7s %8s\n", "kernel", "version", devCol("device"), "packages", "tests", "passed", "failed", "skipped", "time")
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
		dev := r.Device
		if dev == "" {
			dev = "?" // the VM reported nothing
		}
		fmt.Fprintf(w, "%-8s %-40s%s %-14s %6d %6d %6d %7d %7.0fs\n", r.Selector, version, devCol(dev), pk, r.Run, r.Passed, r.Failed, len(r.Skips), r.Total.Seconds())
	}
	fmt.Fprintf(w, "total %.0fs; wall clock %.0fs with %d lab VM(s) at once (time: a kernel's preparation plus its lab boots' wall times, summed)\n",
		total.Seconds(), note.wall.Seconds(), max(1, note.jobs))
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
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s note %s: %s\n", r.Selector, n.Test, n.Text)
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
	Device    string `json:",omitempty"` // the lab's RDMA device the tests ran on (rxe0, siw0), when it is there
	PkgOK     int
	PkgFailed int
	Run       int // tests and subtests that finished: passed + failed + skipped
	Passed    int
	Failed    int
	Fails     []string // package: test
	Skips     []skip
	Slowest   []timed // the top-level tests that took longest, longest first (at most slowestN)
	Notes     []note  // what tests logged with labtest.Note, passed or not: reruns, slow steps (at most maxNotes)
}

// maxNotes bounds a kernel's notes: a test that notes in a loop cannot flood the summary.
const maxNotes = 40

// Copies of test/labtest's names (labsuite does not import the lab's test helpers, which import testing;
// TestLabtestNames checks they agree): what labtest.Note logs, the variable that gives the VM the lab cache's
// reference outputs, and the directory under the out directory where a boot records new ones.
const (
	noteMarker = "lab-note: "
	refsEnv    = "GOVERBS_LAB_REFS"
	refsOutDir = "refs"
)

type skip struct{ Test, Reason string }

// note is a line a test logged with labtest.Note.
type note struct{ Test, Text string }

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
				if _, text, ok := strings.Cut(trimmed, noteMarker); ok && len(s.Notes) < maxNotes {
					s.Notes = append(s.Notes, note{importPath + ": " + current, text})
				}
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
	runs, ends := map[string]int{}, map[string]int{}
	for _, line := range lines {
		t := strings.TrimLeft(line, " ")
		if h, ok := strings.CutPrefix(t, "=== RUN "); ok {
			runs[strings.TrimSpace(h)]++
		}
		if v, rest, ok := strings.Cut(t, ": "); ok && strings.HasPrefix(v, "--- ") {
			name, _, _ := strings.Cut(strings.TrimSpace(rest), " (")
			ends[name]++
			if verdict[name] != "--- FAIL" { // with -count, one failed run of a name keeps all its runs' lines
				verdict[name] = v
			}
		}
	}
	// A name that ran more often than it ended never finished one run (with -count, a hang or a crash after
	// runs that passed): it counts as failed, so its lines and the timeout's or panic's trace are kept.
	failed := func(name string) bool {
		v, ok := verdict[name]
		return !ok || v == "--- FAIL" || runs[name] > ends[name]
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
	dev := lab.DeviceFor(os.Getenv(lab.ProviderEnv))
	if _, err := os.Stat(filepath.Join("/sys/class/infiniband", dev)); err == nil {
		sum.Device = dev
	}
	if dev != lab.Device {
		fmt.Printf("kernel %s (%s), device %s\n", sum.Release, sum.Upstream, dev)
	} else {
		fmt.Printf("kernel %s (%s)\n", sum.Release, sum.Upstream)
	}
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
