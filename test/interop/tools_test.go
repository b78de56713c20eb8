package interop

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

func runTool(path string, args ...string) (string, int) {
	cmd := exec.Command(path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	rc := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		rc = ee.ExitCode()
	} else if err != nil {
		rc = -1
	}
	return out.String(), rc
}

// TestToolsMatchRdmaCore runs goverbs' devices/devinfo/ibstat (as subcommands and through links named like the
// C tools) and rdma-core's tools on the same device and demands identical output and exit status.
func TestToolsMatchRdmaCore(t *testing.T) {
	labtest.Require(t)
	bin := Binary(t)
	dev := labtest.Device()
	cases := []struct {
		ctool, sub string
		pkg        string
		args       []string
	}{
		{"ibv_devices", "devices", "ibverbs-utils", nil},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", nil},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-v"}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-d", dev}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-d", dev, "-i", "1", "-v"}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-l"}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-d", "nosuchdev"}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-i", "9"}},
		{"ibv_devinfo", "devinfo", "ibverbs-utils", []string{"-i", "0"}},
		{"ibstat", "ibstat", "infiniband-diags", nil},
		{"ibstat", "ibstat", "infiniband-diags", []string{"-l"}},
		{"ibstat", "ibstat", "infiniband-diags", []string{"-s"}},
		{"ibstat", "ibstat", "infiniband-diags", []string{"-p"}},
		{"ibstat", "ibstat", "infiniband-diags", []string{dev}},
		{"ibstat", "ibstat", "infiniband-diags", []string{dev, "1"}},
		{"ibstat", "ibstat", "infiniband-diags", []string{"nosuchdev"}},
		{"ibstat", "ibstat", "infiniband-diags", []string{dev, "7"}},
	}
	for _, c := range cases {
		NeedTool(t, c.ctool, c.pkg)
		want, wantRC := runTool(c.ctool, c.args...)
		alias := Alias(t, c.ctool)
		for _, form := range []struct {
			name string
			path string
			args []string
		}{
			{"goverbs " + c.sub, bin, append([]string{c.sub}, c.args...)},
			{"link " + c.ctool, alias, c.args},
		} {
			got, gotRC := runTool(form.path, form.args...)
			if got != want || gotRC != wantRC {
				t.Errorf("%s %q: exit %d, C tool exit %d\n--- C:\n%s--- goverbs:\n%s", form.name, c.args, gotRC, wantRC, want, got)
			}
		}
	}
}
