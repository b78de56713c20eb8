package interop_test

import (
	"bytes"
	"errors"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

func runTool(path string, args ...string) (string, int) {
	return runToolCmd(exec.Command(path, args...))
}

// runToolCmd runs cmd and returns its combined output and exit status.
func runToolCmd(cmd *exec.Cmd) (string, int) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		return out.String() + err.Error(), -1
	}
	return out.String(), 0
}

// TestLabMultiCall runs the goverbs binary through links named like rdma-core's tools, and as subcommands, and
// demands the exact output and exit status of rdma-core 65's tools (sid's root, the release the clones follow;
// the per-option comparisons are in cmd/goverbs/internal/labdiff; this proves the static binary itself).
func TestLabMultiCall(t *testing.T) {
	labtest.Require(t)
	bin := interop.Binary(t)
	cases := []struct {
		ctool, sub, pkg string
		args            []string
	}{
		{"ibv_devices", "devices", "ibverbs-utils", nil},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-v"}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-d", "nosuchdev"}},
		{"ibstat", "ibstat", "infiniband-diags", nil},
		{"ibstat", "ibstat", "infiniband-diags", []string{"-p"}},
		{"ibv_uc_pingpong", "uc_pingpong", "ibverbs-utils", []string{"-d", "nosuchdev"}},
		{"ibv_ud_pingpong", "ud_pingpong", "ibverbs-utils", []string{"-d", labtest.Device(), "-s", "4096"}},
		{"ibv_srq_pingpong", "srq_pingpong", "ibverbs-utils", []string{"-q", "300"}},
		{"ibv_xsrq_pingpong", "xsrq_pingpong", "ibverbs-utils", []string{"-d", labtest.Device()}},
		{"rping", "rping", "rdmacm-utils", []string{"-x"}},
		{"rping", "rping", "rdmacm-utils", []string{"-c", "-S", "5"}},
		{"rping", "rping", "rdmacm-utils", []string{"-c", "-a", "127.0.0.1"}},
		{"rstream", "rstream", "rdmacm-utils", []string{"-x"}},
		{"rstream", "rstream", "rdmacm-utils", []string{"-T", "q"}},
		{"riostream", "riostream", "rdmacm-utils", []string{"-x"}},
		{"riostream", "riostream", "rdmacm-utils", []string{"-T", "s"}},
	}
	for _, c := range cases {
		want, wantRC := runToolCmd(inPeerRoot(t, "sid", c.ctool, c.args...))
		if c.ctool == "rping" {
			// C's rping sometimes prints a line from its main thread before its CM thread's exit(-1) ends
			// the process; goverbs' rping always ends as the CM thread's exit does (see dropRacy).
			want = dropRacy(want)
		}
		for _, form := range []struct {
			name, path string
			args       []string
		}{
			{"goverbs " + c.sub, bin, append([]string{c.sub}, c.args...)},
			{"link " + c.ctool, interop.Alias(t, c.ctool), c.args},
		} {
			// rstream and riostream print argv[0], which for the link is its full path: compare the subcommand only.
			if (c.ctool == "rstream" || c.ctool == "riostream") && form.path != bin {
				continue
			}
			if got, rc := runTool(form.path, form.args...); got != want || rc != wantRC {
				t.Errorf("%s %q: exit %d (C: %d)\n--- C:\n%s--- goverbs:\n%s", form.name, c.args, rc, wantRC, want, got)
			}
		}
	}
}
