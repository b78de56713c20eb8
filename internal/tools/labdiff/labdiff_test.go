package labdiff

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/internal/tools/devices"
	"github.com/goverbs/goverbs/internal/tools/devinfo"
	"github.com/goverbs/goverbs/internal/tools/devinfo/uverbssrc"
	"github.com/goverbs/goverbs/internal/tools/golden"
	"github.com/goverbs/goverbs/internal/tools/ibstat"
)

// requireLab is the lab gate of docs/DESIGN.md: skip outside the lab VM,
// unless GOVERBS_LAB_REQUIRED=1 makes that a failure.
func requireLab(t *testing.T) {
	t.Helper()
	if os.Getenv("GOVERBS_LAB") != "" {
		return
	}
	if os.Getenv("GOVERBS_LAB_REQUIRED") == "1" {
		t.Fatal("this test needs the lab VM (GOVERBS_LAB_REQUIRED=1)")
	}
	t.Skip("needs the lab VM (rxe0); run it with test/lab")
}

// runC runs the C tool and returns its result with pids normalized.
func runC(t *testing.T, prog string, args []string) golden.Result {
	t.Helper()
	cmd := exec.Command(prog, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := golden.Result{Stdout: out.String(), Stderr: golden.NormalizePid(errb.String())}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Status = ee.ExitCode()
	default:
		t.Fatalf("run %s: %v", prog, err)
	}
	return r
}

type goTool func(prog string, args []string, stdout, stderr io.Writer) int

// compare runs the C tool and ours with the same arguments.
func compare(t *testing.T, prog string, run goTool, cases []string) {
	for _, c := range cases {
		t.Run(strings.ReplaceAll(prog+" "+c, " ", "_"), func(t *testing.T) {
			args := strings.Fields(c)
			want := runC(t, prog, args)
			var out, errb bytes.Buffer
			st := run(prog, args, &out, &errb)
			got := golden.Result{Stdout: out.String(), Stderr: golden.NormalizePid(errb.String()), Status: st}
			if got != want {
				t.Errorf("%s %s differs from the C tool\n--- C:\n%s\n--- goverbs:\n%s", prog, c, want, got)
			}
		})
	}
}

func TestDevices(t *testing.T) {
	requireLab(t)
	compare(t, "ibv_devices", func(_ string, a []string, o, e io.Writer) int {
		return devices.Command{Source: uverbssrc.New(e)}.Run(a, o, e)
	}, []string{"", "-v"})
	// The sysfs scan (used where netlink is unavailable) agrees too.
	compare(t, "ibv_devices", func(_ string, a []string, o, e io.Writer) int { return devices.Run(a, o, e) }, []string{""})
}

func TestIbstat(t *testing.T) {
	requireLab(t)
	compare(t, "ibstat", func(p string, a []string, o, e io.Writer) int { return ibstat.Command{Prog: p}.Run(a, o, e) },
		[]string{"", "-s", "-p", "-l", "rxe0", "rxe0 1", "rxe0 2", "rxe0 0", "foo", "-l rxe0", "-p rxe0", "-s rxe0",
			"-dd rxe0 2", "-dd -p", "-V", "-h", "-x"})
}

// DevinfoCases are the ibv_devinfo invocations compared in the lab.
var DevinfoCases = []string{"", "-v", "-l", "-d rxe0", "-d rxe0 -i 1", "-v -i 1", "-i 2", "-i 257", "-d foo",
	"-i 0", "-v -d rxe0", "--ib-dev=rxe0 --verbose", "-x"}

// DiffDevinfo compares ibv_devinfo with goverbs' devinfo over src, a
// devinfo.Source implementation.
func DiffDevinfo(t *testing.T, src devinfo.Source) {
	compare(t, "ibv_devinfo", func(p string, a []string, o, e io.Writer) int {
		return devinfo.Command{Prog: p, Source: src}.Run(a, o, e)
	}, DevinfoCases)
}

func TestDevinfo(t *testing.T) {
	requireLab(t)
	DiffDevinfo(t, uverbssrc.New(io.Discard))
}
