// Package labtest gates tests that need a real RDMA device: the lab VM (test/lab), or a host with a device.
//
// Require skips the test when there is no device, unless GOVERBS_LAB_REQUIRED=1, in which case it fails: `make
// test` sets that, so the lab can never be skipped silently.
package labtest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var device = flag.String("device", "", "RDMA device for tests that need one (default $GOVERBS_DEVICE, else rxe0 in the lab (siw0 with GOVERBS_LAB_PROVIDER=siw), else the first device)")

// ProviderEnv names the variable that says which software RDMA provider the lab runs: "rxe" (the default,
// rxe0) or "siw" (soft-iWARP, siw0). The lab sets it in the VM when it runs siw (labsuite -provider siw).
const ProviderEnv = "GOVERBS_LAB_PROVIDER"

// Provider is the lab's software RDMA provider: "siw" when GOVERBS_LAB_PROVIDER=siw, else "rxe".
func Provider() string {
	if os.Getenv(ProviderEnv) == "siw" {
		return "siw"
	}
	return "rxe"
}

// RequireProvider skips t unless the lab runs provider p ("rxe" or "siw"): a test of one provider's own
// behaviour skips on the other, even with GOVERBS_LAB_REQUIRED=1 (the device is there, it is another kind).
// Then it requires the device, as Require does.
func RequireProvider(t testing.TB, p string) {
	t.Helper()
	if got := Provider(); got != p {
		t.Skipf("runs on the lab's %s device only; this lab runs %s (%s): go run ./test/lab/cmd/labsuite -provider %s", p, got, Device(), p)
	}
	Require(t)
}

// InLab reports whether the test runs inside the goverbs lab VM.
func InLab() bool { return os.Getenv("GOVERBS_LAB") == "1" }

// Required reports whether a missing device must fail the test instead of skipping it.
func Required() bool { return os.Getenv("GOVERBS_LAB_REQUIRED") == "1" }

// Device is the device the tests use: -device, $GOVERBS_DEVICE, "rxe0" in the lab ("siw0" when the lab runs
// siw, see Provider), else the first device in /sys/class/infiniband.
func Device() string {
	if *device != "" {
		return *device
	}
	if d := os.Getenv("GOVERBS_DEVICE"); d != "" {
		return d
	}
	if InLab() {
		if Provider() == "siw" {
			return "siw0"
		}
		return "rxe0"
	}
	if ents, err := os.ReadDir("/sys/class/infiniband"); err == nil && len(ents) > 0 {
		return ents[0].Name()
	}
	return "rxe0"
}

// Netdev is the lab's netdev carrying rxe0 (or siw0).
func Netdev() string { return "veth0" }

// HasDevice reports whether the device exists on this machine.
func HasDevice() bool {
	_, err := os.Stat(filepath.Join("/sys/class/infiniband", Device()))
	return err == nil
}

// Require skips t unless an RDMA device is available (in the lab, or on a host with one); with
// GOVERBS_LAB_REQUIRED=1 a missing device is a failure.
func Require(t testing.TB) {
	t.Helper()
	if HasDevice() {
		return
	}
	if Required() {
		t.Fatalf("labtest: RDMA device %s not found, and GOVERBS_LAB_REQUIRED=1 (run the test in the lab: go run ./test/lab/cmd/labsuite)", Device())
	}
	t.Skipf("needs an RDMA device (%s): run in the lab (go run ./test/lab/cmd/labsuite) or on a host with one", Device())
}

// RequireRoot skips (or, with GOVERBS_LAB_REQUIRED=1, fails) unless running as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if Required() {
		t.Fatal("labtest: test needs root")
	}
	t.Skip("needs root")
}

// NoteMarker starts every line Note logs; labsuite collects the lines that contain it.
const NoteMarker = "lab-note: "

// Note logs a line that labsuite keeps in its summary whether the test passes or not (go test drops a passing
// test's log): a rerun of a peer's known race, a step that took far longer than it should. It is the evidence an
// intermittent problem leaves in a run that passed.
func Note(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf(NoteMarker+format, args...)
}
