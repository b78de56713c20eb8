// Package golden holds the test plumbing shared by the tool clones: golden
// files of captured C tool output, and a runner that executes the real
// rdma-core tool (the Reference release's, from its own root) against a fake
// sysfs tree inside a private mount namespace, so that the goldens are
// produced by the C tool itself.
package golden

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goverbs/goverbs/test/lab"
)

// Pid is the process id the goldens carry in "[pid]" diagnostics; tests run
// the Go tools with this pid and C output is normalized to it.
const Pid = 4242

// Result is one tool run.
type Result struct {
	Stdout, Stderr string
	Status         int
}

// String renders r in the golden file format.
func (r Result) String() string {
	return fmt.Sprintf("-- status --\n%d\n-- stdout --\n%s-- stderr --\n%s", r.Status, r.Stdout, r.Stderr)
}

// Parse reads the golden file format.
func Parse(text string) (Result, error) {
	var r Result
	rest, ok := strings.CutPrefix(text, "-- status --\n")
	if !ok {
		return r, errors.New("parse golden: missing status section")
	}
	st, rest, ok := strings.Cut(rest, "\n-- stdout --\n")
	if !ok {
		return r, errors.New("parse golden: missing stdout section")
	}
	n, err := strconv.Atoi(st)
	if err != nil {
		return r, fmt.Errorf("parse golden status: %w", err)
	}
	r.Status = n
	i := strings.LastIndex(rest, "-- stderr --\n")
	if i < 0 {
		return r, errors.New("parse golden: missing stderr section")
	}
	r.Stdout, r.Stderr = rest[:i], rest[i+len("-- stderr --\n"):]
	return r, nil
}

// Check compares got with the golden file path, failing t with a readable
// diff.
func Check(t *testing.T, path string, got Result) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	want, err := Parse(string(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got.Status != want.Status {
		t.Errorf("%s: status %d, want %d", path, got.Status, want.Status)
	}
	if d := Diff(got.Stdout, want.Stdout); d != "" {
		t.Errorf("%s: stdout differs: %s", path, d)
	}
	if d := Diff(got.Stderr, want.Stderr); d != "" {
		t.Errorf("%s: stderr differs: %s", path, d)
	}
}

// Diff describes the first line where got and want differ, or returns ""
// when they are equal.
func Diff(got, want string) string {
	if got == want {
		return ""
	}
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return fmt.Sprintf("got %q, want %q", got, want)
}

// Write stores r as the golden file path.
func Write(path string, r Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(r.String()), 0o644)
}

var pidRE = regexp.MustCompile(`\[(pid )?[0-9]+\]`)

// NormalizePid rewrites "[1234]" and "[pid 1234]" to carry Pid.
func NormalizePid(s string) string {
	return pidRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "[pid ") {
			return fmt.Sprintf("[pid %d]", Pid)
		}
		return fmt.Sprintf("[%d]", Pid)
	})
}

// Reference names the rdma-core release whose tools make the goldens: the
// tools of Debian sid, run from the root lab.EnsurePeerRoot builds.
const Reference = "rdma-core 65.0 (Debian sid)"

// referenceEra is the lab's peer era that carries Reference.
const referenceEra = "sid"

var croot = sync.OnceValues(func() (string, error) {
	if root := os.Getenv("GOVERBS_LAB_PEER_" + strings.ToUpper(referenceEra)); root != "" {
		return root, nil
	}
	cache, err := lab.CacheDir()
	if err != nil {
		return "", err
	}
	return lab.EnsurePeerRoot(context.Background(), cache, referenceEra, os.Stderr)
})

// CRoot returns the root filesystem holding the Reference tools
// ($GOVERBS_LAB_PEER_SID when set, as in the lab VM, else the lab cache's
// root, built the first time by downloading sid's packages).
func CRoot() (string, error) { return croot() }

// CAvailable reports why the Reference C tool prog cannot be run against
// fake trees here ("" when it can): it needs root, unshare(1) and the
// Reference root holding prog.
func CAvailable(prog string) string {
	if os.Geteuid() != 0 {
		return "not root (a mount namespace and chroot are needed)"
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return "unshare not installed"
	}
	root, err := CRoot()
	if err != nil {
		return Reference + ": " + err.Error()
	}
	if _, err := toolPath(root, prog); err != nil {
		return err.Error()
	}
	return ""
}

// toolPath is prog's path inside root.
func toolPath(root, prog string) (string, error) {
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(root, dir, prog)); err == nil {
			return filepath.Join(dir, prog), nil
		}
	}
	return "", fmt.Errorf("%s: no %s in %s", Reference, prog, root)
}

// Run is one run of a Reference C tool against a fake tree.
//
// In a private mount namespace the tree's sys/ is bound over the root's
// /sys and its dev/ (the host's /dev when the tree has none) over the root's
// /dev, the host's /proc over /proc, and the tool runs chrooted in the root
// (libibverbs finds its providers by compiled-in paths), with a clean
// environment, SYSFS_PATH=/sys and argv[0] = prog. A shell script (ibstatus:
// the root has no shell) runs instead under the host's /bin/sh from the
// root, outside the chroot, with the tree's sys/class bound over
// /sys/class.
type Run struct {
	Tree string   // the fake tree: Tree/sys and optionally Tree/dev
	Env  []string // extra environment ("K=V")
	// Tmp, when set, is a host directory bound over /tmp in the root and,
	// inside the namespace, on the host, so that a /tmp path in Env (an
	// LD_PRELOAD library, its input) names the same file for chroot(8) and
	// for the tool.
	Tmp string
}

// RunC runs the Reference C tool prog with args against the fake tree dir.
func RunC(dir, prog string, args ...string) (Result, error) {
	return Run{Tree: dir}.C(prog, args...)
}

// runScript is the namespace set-up; $1 is the root, $2 the tree, $3 the
// tmp directory or "", $4 "chroot" or "script", $5 the number of "K=V"
// environment entries that follow, exported only for the tool (an
// LD_PRELOAD must not apply to the host's mount and chroot), then the
// command.
const runScript = `root=$1 tree=$2 tmp=$3 how=$4 n=$5; shift 5
if [ "$how" = script ]; then
	mount --bind "$tree/sys/class" /sys/class || exit 125
else
	mount --bind "$tree/sys" "$root/sys" || exit 125
	if [ -d "$tree/dev" ]; then mount --bind "$tree/dev" "$root/dev"; else mount --rbind /dev "$root/dev"; fi || exit 125
	mount --rbind /proc "$root/proc" || exit 125
	if [ -n "$tmp" ]; then
		# Also over the host's /tmp, so that chroot(8) finds what the
		# environment names there (it runs with the tool's environment).
		mount --bind "$tmp" "$root/tmp" && mount --bind "$tmp" /tmp || exit 125
	fi
fi
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done
if [ "$how" = script ]; then exec /bin/sh "$@"; fi
exec chroot "$root" "$@"`

// C runs the Reference C tool prog with args; stderr's pids are normalized.
func (r Run) C(prog string, args ...string) (Result, error) {
	root, err := CRoot()
	if err != nil {
		return Result{}, err
	}
	tree, err := filepath.Abs(r.Tree)
	if err != nil {
		return Result{}, err
	}
	tmp := r.Tmp
	if tmp != "" {
		if tmp, err = filepath.Abs(tmp); err != nil {
			return Result{}, err
		}
	}
	path, err := toolPath(root, prog)
	if err != nil {
		return Result{}, err
	}
	how, argv, sysfsPath := "chroot", append([]string{prog}, args...), "/sys"
	if script, err := isScript(filepath.Join(root, path)); err != nil {
		return Result{}, err
	} else if script {
		how, argv, sysfsPath = "script", append([]string{filepath.Join(root, path)}, args...), filepath.Join(tree, "sys")
	}
	shArgs := []string{"-m", "--propagation", "private", "sh", "-c", runScript, "sh", root, tree, tmp, how, strconv.Itoa(len(r.Env))}
	cmd := exec.Command("unshare", append(append(shArgs, r.Env...), argv...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SYSFS_PATH=" + sysfsPath}
	res, err := Exec(cmd)
	if err == nil && res.Status == 125 {
		err = errors.New("exit status 125")
	}
	if err != nil {
		return res, fmt.Errorf("run %s (%s) in a mount namespace: %v: %s", prog, Reference, err, res.Stderr)
	}
	res.Stderr = NormalizePid(res.Stderr)
	return res, nil
}

// Exec runs cmd with its Stdout and Stderr set to buffers and returns what it wrote and its exit status (-1 when
// a signal ended it); err is set when it did not run to an exit.
func Exec(cmd *exec.Cmd) (Result, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Status, err = ee.ExitCode(), nil
	}
	return r, err
}

// isScript reports whether the file at path starts with "#!".
func isScript(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [2]byte
	n, _ := f.Read(b[:])
	return n == 2 && string(b[:]) == "#!", nil
}

// referenceDevPackage is the package whose headers build C test helpers
// against the Reference libibverbs (devinfo's fakeverbs).
const referenceDevPackage = "libibverbs-dev"

var cheaders = sync.OnceValues(func() (string, error) {
	root, err := CRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "dev")
	inc := filepath.Join(dir, "root", "usr", "include")
	if _, err := os.Stat(filepath.Join(inc, "infiniband", "verbs.h")); err == nil {
		return inc, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	debs, _ := filepath.Glob(filepath.Join(dir, referenceDevPackage+"_*.deb"))
	if len(debs) == 0 {
		// The lab's private apt configuration (lab.PrivateApt), which
		// building the root has set up; never the system's sources.
		cache, err := lab.CacheDir()
		if err != nil {
			return "", err
		}
		apt := filepath.Join(cache, "apt")
		cmd := exec.Command("apt-get",
			"-o", "Dir::Etc::sourcelist="+filepath.Join(apt, "sources.list"), "-o", "Dir::Etc::sourceparts=-",
			"-o", "Dir::State::Lists="+filepath.Join(apt, "lists"), "-o", "Dir::Cache="+filepath.Join(apt, "cache"),
			"-o", "Dir::State::status="+filepath.Join(apt, "status"), "-o", "Debug::NoLocking=1",
			"-o", "APT::Sandbox::User=root", "download", referenceDevPackage+"/"+referenceEra)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get download %s/%s: %v: %s", referenceDevPackage, referenceEra, err, out)
		}
		if debs, _ = filepath.Glob(filepath.Join(dir, referenceDevPackage+"_*.deb")); len(debs) == 0 {
			return "", fmt.Errorf("apt-get download %s/%s: no .deb in %s", referenceDevPackage, referenceEra, dir)
		}
	}
	tmp, err := os.MkdirTemp(dir, ".root-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg", "-x", debs[0], tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg -x %s: %v: %s", debs[0], err, out)
	}
	os.RemoveAll(filepath.Join(dir, "root"))
	if err := os.Rename(tmp, filepath.Join(dir, "root")); err != nil {
		return "", err
	}
	return inc, nil
})

// CHeaders returns the include directory of the Reference libibverbs
// (sid's libibverbs-dev, downloaded once next to the root through the lab's
// private apt configuration and unpacked), for C test helpers that must
// match the Reference library's structures.
func CHeaders() (string, error) { return cheaders() }

// CaseName is a golden case's name: the tree, '_', the arguments with blanks and slashes (and each further
// old, new pair) replaced, and no '_' at the end.
func CaseName(tree, args string, more ...string) string {
	n := tree + "_" + strings.NewReplacer(append([]string{" ", "_", "/", "_"}, more...)...).Replace(args)
	return strings.TrimSuffix(n, "_")
}

// RequireC is the start of a golden test run with -update: it fails t when the C tool prog cannot be run.
func RequireC(t *testing.T, update bool, prog string) {
	t.Helper()
	if update {
		if why := CAvailable(prog); why != "" {
			t.Fatalf("-update: %s", why)
		}
	}
}

// Regenerate is -update's step of a golden test: it runs the C tool prog on the tree dir and writes its result
// to file, through fix first when fix is not nil (NormalizePid on stdout, say).
func Regenerate(t *testing.T, dir, prog string, args []string, file string, fix func(*Result)) {
	t.Helper()
	r, err := RunC(dir, prog, args...)
	if err != nil {
		t.Fatal(err)
	}
	if fix != nil {
		fix(&r)
	}
	if err := Write(file, r); err != nil {
		t.Fatal(err)
	}
}

// CheckRun runs run with fresh stdout and stderr buffers and compares what it wrote and returned with the golden
// file path (Check).
func CheckRun(t *testing.T, path string, run func(stdout, stderr io.Writer) int) {
	t.Helper()
	var out, errb bytes.Buffer
	st := run(&out, &errb)
	Check(t, path, Result{Stdout: out.String(), Stderr: errb.String(), Status: st})
}

// Trees is a tool's golden test over fake sysfs trees: each case runs the Go tool on one tree and compares its
// result with testdata/golden/NAME.golden, which -update first rewrites from the C tool run on the same tree.
type Trees struct {
	Dir    string                                                        // the folder of the trees
	Prog   string                                                        // the C tool
	Update bool                                                          // -update: Regenerate first
	Fix    func(*Result)                                                 // Regenerate's fix, or nil
	Name   func(tree, args string) string                                // a case's name; CaseName when nil
	Run    func(dir string, args []string, stdout, stderr io.Writer) int // the Go tool on the tree dir
}

// Case runs the case (tree, args split at blanks) as a subtest of t.
func (g Trees) Case(t *testing.T, tree, args string) {
	t.Helper()
	name := CaseName(tree, args)
	if g.Name != nil {
		name = g.Name(tree, args)
	}
	t.Run(name, func(t *testing.T) {
		argv := strings.Fields(args)
		dir := filepath.Join(g.Dir, tree)
		file := filepath.Join("testdata", "golden", name+".golden")
		if g.Update {
			Regenerate(t, dir, g.Prog, argv, file, g.Fix)
		}
		CheckRun(t, file, func(stdout, stderr io.Writer) int { return g.Run(dir, argv, stdout, stderr) })
	})
}

// BuildFakeverbs is the first step of -update for the goldens of a C tool (prog) that must see a device: it
// compiles the fakeverbs LD_PRELOAD shim (fakeverbs.c and its version script fakeverbs.map in dir) against the
// Reference headers into a temporary directory of t and returns its path. It fails t when that cannot be done.
func BuildFakeverbs(t *testing.T, prog, dir string) string {
	t.Helper()
	if why := CAvailable(prog); why != "" {
		t.Fatalf("-update: %s", why)
	}
	inc, err := CHeaders()
	if err != nil {
		t.Fatalf("-update: %v", err)
	}
	shim := filepath.Join(t.TempDir(), "fakeverbs.so")
	cc := exec.Command("cc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I", inc,
		"-Wl,--version-script="+filepath.Join(dir, "fakeverbs.map"), "-o", shim, filepath.Join(dir, "fakeverbs.c"))
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("build fakeverbs: %v\n%s", err, out)
	}
	return shim
}

// RegenerateFakeverbs is Regenerate with the fakeverbs shim (BuildFakeverbs) answering from spec: it runs the
// C tool prog on the tree dir with the shim and the spec visible as /tmp/fakeverbs.so and /tmp/spec in the
// Reference root, and writes its result to file.
func RegenerateFakeverbs(t *testing.T, shim, spec, dir, prog string, args []string, file string) {
	t.Helper()
	tmp := t.TempDir()
	b, err := os.ReadFile(shim)
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "fakeverbs.so"), b, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "spec"), []byte(spec), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run{Tree: dir, Tmp: tmp, Env: []string{"LD_PRELOAD=/tmp/fakeverbs.so", "FAKEVERBS_SPEC=/tmp/spec"}}.C(prog, args...)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(file, r); err != nil {
		t.Fatal(err)
	}
}

// NormalizeStdoutPid is a Regenerate fix: NormalizePid on stdout (infiniband-diags' IBEXIT and DEBUG lines).
func NormalizeStdoutPid(r *Result) { r.Stdout = NormalizePid(r.Stdout) }
