package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// Binary returns the goverbs binary under test ($GOVERBS_BIN, set by labsuite; else bin/goverbs at the
// root of the repository the test runs in), failing the test when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("GOVERBS_BIN"); b != "" {
		return b
	}
	// else the repository's bin/goverbs: the nearest directory above the test's with a go.mod
	if dir, err := os.Getwd(); err == nil {
		for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if b := filepath.Join(dir, "bin", "goverbs"); fileExists(b) {
					return b
				}
				break
			}
		}
	}
	if labtest.Required() {
		t.Fatal("no goverbs binary: set GOVERBS_BIN or run `make build`")
	}
	t.Skip("no goverbs binary: set GOVERBS_BIN or run `make build`")
	return ""
}

// Alias makes a symlink named name to the goverbs binary in a temporary directory and returns its path, so
// the binary runs as that C tool (multi-call).
func Alias(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(Binary(t), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// NeedTool fails the test when a C peer tool is missing.
func NeedTool(t testing.TB, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is needed (apt-get install %s): %v", name, pkg, err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
