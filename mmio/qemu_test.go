package mmio

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestArm64UnderQEMU runs this package's functional tests as an arm64 binary under qemu-user when the host is
// amd64 and qemu-aarch64 is installed (Debian: qemu-user), so the arm64 assembly is executed, not only
// disassembled. It skips otherwise, and in -short mode.
func TestArm64UnderQEMU(t *testing.T) {
	if runtime.GOARCH != "amd64" || testing.Short() {
		t.Skip("runs on amd64 hosts outside -short mode")
	}
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		t.Skip("qemu-aarch64 not installed (Debian package qemu-user); arm64 code is checked by disassembly only")
	}
	bin := filepath.Join(t.TempDir(), "mmio.arm64.test")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=arm64 go test -c: %v\n%s", err, out)
	}
	run := exec.Command(qemu, bin, "-test.run", "TestBarriersRun|TestWrite64|TestCopy64|TestWCStores|TestRegChecks|TestWCLock",
		"-test.v")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("arm64 tests under qemu: %v\n%s", err, out)
	}
	t.Logf("arm64 under qemu:\n%s", out)
}
