// Package golden holds the test plumbing shared by the tool clones: golden
// files of captured C tool output, and a runner that executes the real
// rdma-core tool against a fake sysfs tree (inside a private mount
// namespace) so that the goldens are produced by the C tool itself.
package golden

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
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

// CAvailable reports why the C tool prog cannot be run against fake trees
// here ("" when it can): it needs the tool, root and unshare(1).
func CAvailable(prog string) string {
	if _, err := exec.LookPath(prog); err != nil {
		return prog + " not installed"
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return "unshare not installed"
	}
	if os.Geteuid() != 0 {
		return "not root (a mount namespace is needed)"
	}
	return ""
}

// RunC runs the real C tool prog with args against the fake tree dir (with
// dir/sys and dir/dev): in a private mount namespace dir/sys/class is bound
// over /sys/class and dir/dev over /dev, and SYSFS_PATH points libibverbs at
// dir/sys. The command runs with a clean environment and argv[0] = prog.
func RunC(dir, prog string, args ...string) (Result, error) {
	return RunCEnv(dir, nil, prog, args...)
}

// RunCEnv is RunC with extra environment variables ("K=V").
func RunCEnv(dir string, env []string, prog string, args ...string) (Result, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Result{}, err
	}
	script := `mount --bind "$1/sys/class" /sys/class && { [ ! -d "$1/dev" ] || mount --bind "$1/dev" /dev; } && shift && exec "$@"`
	cmd := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", abs, prog}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SYSFS_PATH=" + filepath.Join(abs, "sys")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	r := Result{Stdout: out.String(), Stderr: NormalizePid(errb.String())}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Status = ee.ExitCode()
	default:
		return r, fmt.Errorf("run %s in a mount namespace: %w", prog, err)
	}
	return r, nil
}
