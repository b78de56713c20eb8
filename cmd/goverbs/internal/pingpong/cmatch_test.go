package pingpong

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
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
	{"-U", "-o"},
	{"-U", "-j"},
	{"-U", "-h"},
}

// The clones print what rdma-core 65's tools print (golden.Reference, run from sid's root against a sysfs
// without RDMA, like this host's), byte for byte, with the same status, wherever the run ends before it needs a
// device.
func TestEarlyExitsMatchC(t *testing.T) {
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "sys", "class"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if why := golden.CAvailable(tool.ctool); why != "" {
			if os.Getenv("GOVERBS_REQUIRE_GOLDEN") == "1" {
				t.Fatalf("GOVERBS_REQUIRE_GOLDEN=1 but %s", why)
			}
			t.Skip(why)
		}
		for _, args := range earlyExitArgs {
			c, err := golden.Run{Tree: tree}.C(tool.ctool, args...)
			if err != nil {
				t.Fatal(err)
			}
			var gout, gerr bytes.Buffer
			grc := tool.run(tool.ctool, args, &gout, &gerr)
			if grc != c.Status || gout.String() != c.Stdout || gerr.String() != c.Stderr {
				t.Errorf("%s %q:\n--- C: rc %d\n%s--- stderr:\n%s--- goverbs: rc %d\n%s--- stderr:\n%s",
					tool.ctool, args, c.Status, c.Stdout, c.Stderr, grc, gout.String(), gerr.String())
			}
		}
	}
}
