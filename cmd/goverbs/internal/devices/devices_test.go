package devices

import (
	"bytes"
	"errors"
	"flag"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

var update = flag.Bool("update", false, "rewrite the goldens from the real C ibv_devices (needs root, unshare, ibverbs-utils)")

func TestGolden(t *testing.T) {
	golden.RequireC(t, *update, "ibv_devices")
	for _, tree := range []string{"rxe", "mlx5", "empty", "verbs_edge", "verbs_badabi"} {
		t.Run(tree, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", tree)
			file := filepath.Join("testdata", "golden", tree+".golden")
			if *update {
				golden.Regenerate(t, dir, "ibv_devices", nil, file, nil)
			}
			var out, errb bytes.Buffer
			st := Command{Source: SysfsSource{FS: sysfs.Under(dir), Stderr: &errb}}.Run([]string{"--ignored"}, &out, &errb)
			golden.Check(t, file, golden.Result{Stdout: out.String(), Stderr: errb.String(), Status: st})
		})
	}
}

type failing struct{ err error }

func (f failing) Entries() ([]Entry, error) { return nil, f.err }

func TestErrors(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{unix.ENOSYS, "Failed to get IB devices list: Function not implemented\n"},
		{errors.Join(errors.New("netlink dump"), unix.EPERM), "Failed to get IB devices list: Operation not permitted\n"},
		{errors.New("no errno"), "Failed to get IB devices list: Input/output error\n"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if st := (Command{Source: failing{tt.err}}).Run(nil, &out, &errb); st != 1 || out.Len() != 0 || errb.String() != tt.want {
			t.Errorf("%v: status %d stdout %q stderr %q", tt.err, st, out.String(), errb.String())
		}
	}
}

func TestRender(t *testing.T) {
	var b bytes.Buffer
	Render(&b, []Entry{{"a_very_long_device_name_x", 0x1}, {"rxe0", 0x0042acfffe110002}})
	want := "    device          \t   node GUID\n    ------          \t----------------\n    a_very_long_device_name_x\t0000000000000001\n    rxe0            \t0042acfffe110002\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
}

// The goldens captured by the C ibv_devices in the lab VM, against the tree
// captured in the same boot.
func TestLabCapture(t *testing.T) {
	lab := filepath.Join("..", "testdata", "lab")
	for _, name := range []string{"devices", "devices_extra", "devices_nonroot"} {
		var out, errb bytes.Buffer
		st := Command{Source: SysfsSource{FS: sysfs.Under(filepath.Join(lab, "tree")), Stderr: &errb}}.Run([]string{"-v"}, &out, &errb)
		golden.Check(t, filepath.Join(lab, "golden", name+".golden"), golden.Result{Stdout: out.String(), Stderr: errb.String(), Status: st})
	}
}
