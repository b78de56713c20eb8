package labtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDeviceFromEnv(t *testing.T) {
	if *device != "" {
		t.Skip("-device given")
	}
	t.Setenv("GOVERBS_DEVICE", "mlx5_0")
	if got := Device(); got != "mlx5_0" {
		t.Errorf("Device() with GOVERBS_DEVICE=mlx5_0 = %q", got)
	}
	t.Setenv("GOVERBS_DEVICE", "")
	t.Setenv("GOVERBS_LAB", "1")
	if got := Device(); got != "rxe0" {
		t.Errorf("Device() in the lab = %q, want rxe0", got)
	}
}

// TestRequireInLab checks, inside the lab, that Require does not skip and
// that the lab's device and netdev are what the design promises.
func TestRequireInLab(t *testing.T) {
	if !InLab() {
		t.Skip("checks the lab VM itself")
	}
	Require(t)
	state, err := os.ReadFile(filepath.Join("/sys/class/infiniband", Device(), "ports", "1", "state"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(state), "ACTIVE") {
		t.Errorf("port 1 of %s is %q, want ACTIVE", Device(), state)
	}
	ndev, err := os.ReadFile(filepath.Join("/sys/class/infiniband", Device(), "ports", "1", "gid_attrs", "ndevs", "1"))
	if err != nil || strings.TrimSpace(string(ndev)) != Netdev() {
		t.Errorf("netdev of %s = %q, %v; want %s", Device(), ndev, err, Netdev())
	}
	if wd, _ := os.Getwd(); !strings.HasSuffix(wd, "test/labtest") {
		t.Errorf("working directory %q is not the package directory", wd)
	}
}

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		rel          string
		major, minor int
	}{{"6.1.0-56-amd64", 6, 1}, {"6.12.117+deb13-amd64", 6, 12}, {"7.3.4+deb13-amd64", 7, 3}} {
		k := parseRelease(tc.rel)
		if k.Major != tc.major || k.Minor != tc.minor {
			t.Errorf("parseRelease(%q) = %d.%d, want %d.%d", tc.rel, k.Major, k.Minor, tc.major, tc.minor)
		}
	}
	if k := parseRelease("6.12.117"); !k.AtLeast(6, 4) || k.AtLeast(6, 13) || !k.AtLeast(6, 12) || k.AtLeast(7, 0) {
		t.Errorf("AtLeast wrong for %+v", k)
	}
	if k := Kernel(); k.Major == 0 {
		t.Errorf("Kernel() = %+v", k)
	}
}
