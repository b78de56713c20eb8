// Package labtest gates tests that need a real RDMA device.
//
// A test that talks to the kernel's RDMA stack starts with
//
//	labtest.Require(t)
//
// which skips the test on an ordinary host, runs it inside the lab VM
// (test/lab sets GOVERBS_LAB=1 there; rxe0 exists on veth0), and, when
// GOVERBS_LAB_REQUIRED=1, fails instead of skipping if there is no device,
// so that "make test" can never pass by silently skipping the lab.
// On a host with real hardware, set GOVERBS_LAB_REQUIRED=1 and pick the
// device with -device or GOVERBS_DEVICE.
//
// labtest registers the test flag -device; test packages must use Device()
// rather than define their own.
package labtest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DefaultDevice and DefaultNetdev are what the lab VM creates.
const (
	DefaultDevice = "rxe0"
	DefaultNetdev = "veth0"
)

var deviceFlag = flag.String("device", "", "RDMA device for tests that need one (default $GOVERBS_DEVICE, else "+DefaultDevice+")")

// InLab reports whether the process runs inside the lab VM.
func InLab() bool { return os.Getenv("GOVERBS_LAB") == "1" }

// Required reports whether GOVERBS_LAB_REQUIRED=1: device tests must run.
func Required() bool { return os.Getenv("GOVERBS_LAB_REQUIRED") == "1" }

// Require skips t unless it runs in the lab or GOVERBS_LAB_REQUIRED=1, and
// fails t if it should run but Device() does not exist.
func Require(t testing.TB) {
	t.Helper()
	if !InLab() && !Required() {
		t.Skip("labtest: needs an RDMA device: run in the lab (go test -exec labexec) or set GOVERBS_LAB_REQUIRED=1 on a host with one")
	}
	dev := Device()
	if _, err := os.Stat(filepath.Join(sysClass, dev)); err != nil {
		where := "this host"
		if InLab() {
			where = "the lab VM (was it started with GOVERBS_LAB_NO_RXE=1?)"
		}
		t.Fatalf("labtest: RDMA device %q not found in %s (GOVERBS_LAB_REQUIRED=%q, GOVERBS_LAB=%q): %v",
			dev, where, os.Getenv("GOVERBS_LAB_REQUIRED"), os.Getenv("GOVERBS_LAB"), err)
	}
}

// sysClass is where the kernel lists RDMA devices.
const sysClass = "/sys/class/infiniband"

// Device returns the RDMA device tests use: the -device flag, else
// $GOVERBS_DEVICE, else "rxe0".
func Device() string {
	if *deviceFlag != "" {
		return *deviceFlag
	}
	if d := os.Getenv("GOVERBS_DEVICE"); d != "" {
		return d
	}
	return DefaultDevice
}

// Netdev returns the network device under Device(): $GOVERBS_NETDEV, else
// the netdev of the device's port 1 as sysfs reports it, else "veth0".
func Netdev() string {
	if n := os.Getenv("GOVERBS_NETDEV"); n != "" {
		return n
	}
	b, err := os.ReadFile(filepath.Join(sysClass, Device(), "ports", "1", "gid_attrs", "ndevs", "0"))
	if n := strings.TrimSpace(string(b)); err == nil && n != "" {
		return n
	}
	return DefaultNetdev
}
