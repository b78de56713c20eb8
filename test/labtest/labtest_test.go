package labtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDeviceDefaults(t *testing.T) {
	t.Setenv("GOVERBS_DEVICE", "")
	if got := Device(); got != DefaultDevice && *deviceFlag == "" {
		t.Errorf("Device() = %q, want %q", got, DefaultDevice)
	}
	t.Setenv("GOVERBS_DEVICE", "mlx5_0")
	if got := Device(); got != "mlx5_0" && *deviceFlag == "" {
		t.Errorf("Device() with GOVERBS_DEVICE=mlx5_0 = %q", got)
	}
	t.Setenv("GOVERBS_NETDEV", "eth7")
	if got := Netdev(); got != "eth7" {
		t.Errorf("Netdev() with GOVERBS_NETDEV=eth7 = %q", got)
	}
}

// TestRequireInLab runs only in the lab: there Require must not skip, and
// the lab's device and netdev must be what the design promises.
func TestRequireInLab(t *testing.T) {
	Require(t)
	if !InLab() {
		return // GOVERBS_LAB_REQUIRED=1 on a host with a device: nothing lab-specific to check
	}
	if got := Netdev(); got != DefaultNetdev {
		t.Errorf("Netdev() = %q, want %q", got, DefaultNetdev)
	}
	state, err := os.ReadFile(filepath.Join(sysClass, Device(), "ports", "1", "state"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(state), "ACTIVE") {
		t.Errorf("port 1 of %s is %q, want ACTIVE", Device(), state)
	}
	if wd, _ := os.Getwd(); !strings.HasSuffix(wd, "test/labtest") {
		t.Errorf("working directory %q is not the package directory", wd)
	}
}
