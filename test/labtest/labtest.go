// Package labtest gates tests that need a real RDMA device (the goverbs lab VM, or real hardware).
//
// Inside the lab GOVERBS_LAB=1 is set and the device rxe0 exists. A test that needs a device calls Require
// first: outside the lab it skips, unless GOVERBS_LAB_REQUIRED=1, in which case it fails, so a `make test`
// that is meant to run the lab tests can never pass by silently skipping them.
package labtest

import (
	"os"
	"testing"
)

// DefaultDevice is the RDMA device the lab creates.
const DefaultDevice = "rxe0"

// InLab reports whether the process runs with a device available: GOVERBS_LAB=1 (the lab VM) or
// GOVERBS_DEVICE set (real hardware).
func InLab() bool { return os.Getenv("GOVERBS_LAB") == "1" || os.Getenv("GOVERBS_DEVICE") != "" }

// Required reports whether GOVERBS_LAB_REQUIRED=1: lab tests must run, not skip.
func Required() bool { return os.Getenv("GOVERBS_LAB_REQUIRED") == "1" }

// Require skips t outside the lab, or fails it when GOVERBS_LAB_REQUIRED=1.
func Require(t testing.TB) {
	t.Helper()
	if InLab() {
		return
	}
	if Required() {
		t.Fatal("GOVERBS_LAB_REQUIRED=1 but no RDMA device: run inside the lab (GOVERBS_LAB=1) or set GOVERBS_DEVICE")
	}
	t.Skip("needs an RDMA device: run in the lab (go run ./test/lab/cmd/lab) or set GOVERBS_DEVICE")
}

// Device is the RDMA device lab tests use: GOVERBS_DEVICE, or rxe0.
func Device() string {
	if d := os.Getenv("GOVERBS_DEVICE"); d != "" {
		return d
	}
	return DefaultDevice
}
