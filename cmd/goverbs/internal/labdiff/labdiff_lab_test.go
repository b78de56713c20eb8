package labdiff

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/asyncwatch"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/devices"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/devinfo"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibstat"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibstatus"
	"github.com/goverbs/goverbs/test/labtest"
)

// reference is the lab peer era whose C tools the clones mirror:
// rdma-core 65 (Debian sid), run from its own root by chroot.
const reference = "sid"

// runC runs the reference C tool prog (from sid's root, by chroot; ibstatus,
// a /bin/sh script and the root having no shell, with the VM's sh) and
// returns its result with pids normalized.
func runC(t *testing.T, prog string, args []string) golden.Result {
	t.Helper()
	root := labtest.PeerRoot(t, reference)
	var path string
	for _, dir := range []string{"/usr/bin", "/usr/sbin"} {
		if _, err := os.Stat(filepath.Join(root, dir, prog)); err == nil {
			path = filepath.Join(dir, prog)
			break
		}
	}
	if path == "" {
		t.Fatalf("no %s in %s's root %s", prog, reference, root)
	}
	var cmd *exec.Cmd
	if prog == "ibstatus" {
		cmd = exec.Command("/bin/sh", append([]string{filepath.Join(root, path)}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
		cmd.Args[0] = prog
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	r, err := golden.Exec(cmd)
	if err != nil {
		t.Fatalf("run %s: %v", prog, err)
	}
	r.Stdout, r.Stderr = golden.NormalizePid(r.Stdout), golden.NormalizePid(r.Stderr)
	return r
}

type goTool func(prog string, args []string, stdout, stderr io.Writer) int

// compare runs the C tool and ours with the same arguments; DEV in a case
// stands for the test device (rxe0 in the lab).
func compare(t *testing.T, prog string, run goTool, cases []string) {
	for _, c := range cases {
		t.Run(strings.ReplaceAll(prog+" "+c, " ", "_"), func(t *testing.T) {
			args := strings.Fields(strings.ReplaceAll(c, "DEV", labtest.Device()))
			want := runC(t, prog, args)
			var out, errb bytes.Buffer
			st := run(prog, args, &out, &errb)
			got := golden.Result{Stdout: golden.NormalizePid(out.String()), Stderr: golden.NormalizePid(errb.String()), Status: st}
			if got != want {
				t.Errorf("%s %s differs from the C tool\n--- C:\n%s\n--- goverbs:\n%s", prog, c, want, got)
			}
		})
	}
}

func TestLabDevices(t *testing.T) {
	labtest.Require(t)
	compare(t, "ibv_devices", devices.Main, []string{"", "-v"})
	// The sysfs scan (used where netlink is unavailable) agrees too.
	compare(t, "ibv_devices", func(_ string, a []string, o, e io.Writer) int { return devices.Command{}.Run(a, o, e) }, []string{""})
}

func TestLabIbstat(t *testing.T) {
	labtest.Require(t)
	compare(t, "ibstat", ibstat.Main,
		[]string{"", "-s", "-p", "-l", "DEV", "DEV 1", "DEV 2", "DEV 0", "DEV 9", "foo", "-l DEV", "-p DEV", "-s DEV",
			"-dd DEV 9", "-dd -p", "-V", "-h", "-x", "-Y 3 DEV", "--pkey-idx=70000", "-d -Y x DEV", "-d DEV 0"})
}

// DevinfoCases are the ibv_devinfo invocations compared in the lab.
var DevinfoCases = []string{"", "-v", "-l", "-d DEV", "-d DEV -i 1", "-v -i 1", "-i 9", "-i 257", "-d foo",
	"-i 0", "-v -d DEV", "--ib-dev=DEV --verbose", "-x", "-h"}

// DiffDevinfo compares ibv_devinfo with goverbs' devinfo over src, a
// devinfo.Source implementation.
func DiffDevinfo(t *testing.T, src devinfo.Source) {
	compare(t, "ibv_devinfo", func(p string, a []string, o, e io.Writer) int {
		return devinfo.Command{Prog: p, Source: src}.Run(a, o, e)
	}, DevinfoCases)
}

func TestLabDevinfo(t *testing.T) {
	labtest.Require(t)
	DiffDevinfo(t, devinfo.NewUverbsSource(io.Discard))
}

// TestLabIbstatus compares ibstatus with infiniband-diags' script on the lab's real sysfs (rxe0's real GIDs,
// state and rate).
func TestLabIbstatus(t *testing.T) {
	labtest.Require(t)
	compare(t, "ibstatus", ibstatus.Main, []string{"", "DEV", "DEV:1", "DEV:2", "nosuchdev", "-h"})
}

// TestLabAsyncwatch compares ibv_asyncwatch's invocations that return (the
// event loop itself is compared in cmd/goverbs/internal/interop's TestLabAsyncwatch).
func TestLabAsyncwatch(t *testing.T) {
	labtest.Require(t)
	compare(t, "ibv_asyncwatch", asyncwatch.Main, []string{"-h", "-x", "-d", "-d foo", "--help=1"})
}
