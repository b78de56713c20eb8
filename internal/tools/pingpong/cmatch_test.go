package pingpong

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"testing"
)

var tools = []struct {
	ctool string
	run   func(prog string, args []string, stdout, stderr io.Writer) int
}{
	{"ibv_rc_pingpong", MainRC},
	{"ibv_uc_pingpong", MainUC},
	{"ibv_ud_pingpong", MainUD},
	{"ibv_srq_pingpong", MainSRQ},
	{"ibv_xsrq_pingpong", MainXSRQ},
}

// Argument lists that end before a device is opened (or at the device lookup, with a name no machine has):
// option errors, usage texts, option checks.
var earlyExitArgs = [][]string{
	{"-x"},
	{"--nosuch"},
	{"-h"},
	{"a", "b"},
	{"-p", "65536"},
	{"-p", "-1"},
	{"-p", "18446744073709551615"},
	{"-i", "0"},
	{"-i", "-1"},
	{"-m", "100"},
	{"-m", "1024", "-x"},
	{"-s", "0", "-x"},
	{"-s"},
	{"--size"},
	{"--num-qp=2", "-x"},
	{"-q", "300"},
	{"-r", "4"},
	{"-q", "255", "-r", "1000"},
	{"-q", "256", "-r", "1000"},
	{"-o", "-j"},
	{"-P"},
	{"-c", "1", "-x"},
	{"-d", "nosuchdev"},
}

// The clones print what rdma-core 44's tools print, byte for byte, with the same status, wherever the run
// ends before it needs a device. Needs the C tools (Debian: ibverbs-utils).
func TestEarlyExitsMatchC(t *testing.T) {
	for _, tool := range tools {
		if _, err := exec.LookPath(tool.ctool); err != nil {
			t.Skipf("rdma-core's %s is not installed: %v", tool.ctool, err)
		}
		for _, args := range earlyExitArgs {
			cmd := exec.Command(tool.ctool, args...)
			var co, ce bytes.Buffer
			cmd.Stdout, cmd.Stderr = &co, &ce
			err := cmd.Run()
			crc := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				crc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			var gout, gerr bytes.Buffer
			grc := tool.run(tool.ctool, args, &gout, &gerr)
			if grc != crc || gout.String() != co.String() || gerr.String() != ce.String() {
				t.Errorf("%s %q:\n--- C: rc %d\n%s--- stderr:\n%s--- goverbs: rc %d\n%s--- stderr:\n%s",
					tool.ctool, args, crc, co.String(), ce.String(), grc, gout.String(), gerr.String())
			}
		}
	}
}
