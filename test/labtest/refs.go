package labtest

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// RefsEnv names the directory of the lab cache that holds reference outputs recorded by earlier runs
// (read-only in the VM; labsuite sets it). RefsOutDir, under $GOVERBS_LAB_OUT, is where a run writes the
// references it made, for labsuite to add to that directory when the VM has ended.
const (
	RefsEnv    = "GOVERBS_LAB_REFS"
	RefsOutDir = "refs"
)

// refsLayout is part of every reference's key: change it when the lab changes what a C tool prints about it (the
// device's name, MTU or GID table, the addresses), so that references recorded before are not used.
const refsLayout = "lab-v1"

// RefKey is where a reference of era's C tool (a Debian release whose root labsuite built) lives for the
// calling test on this kernel: the kernel's release, the lab's layout, a digest of the tool's binary with
// libibverbs and the rxe provider it loads, and the test's name. A reference is a deterministic function of those
// (the same binaries on the same kernel in the same lab), so an earlier run's output stands in for a new run of
// the C pair; numbers differ from run to run, and the tests compare shapes and line counts, never figures. It
// returns "" (no reference: run the C pair) when a file cannot be read.
func RefKey(t testing.TB, era, tool string) string {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	root := PeerRoot(t, era)
	h := sha256.New()
	for _, pattern := range []string{"usr/bin/" + tool, "usr/lib/*/libibverbs.so.1", "usr/lib/*/libibverbs/librxe-*.so"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		if len(files) != 1 {
			t.Logf("reference key: %d files match %s in %s's root", len(files), pattern, era)
			return ""
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Logf("reference key: %v", err)
			return ""
		}
		fmt.Fprintf(h, "%s %d\n", pattern, len(b))
		h.Write(b)
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return filepath.Join(unix.ByteSliceToString(u.Release[:]), refsLayout, fmt.Sprintf("%s-%s-%x", era, tool, h.Sum(nil)[:8]), name)
}

// LoadRef returns the files of the reference at key recorded by an earlier run (nil if there is none, or no
// cache: the caller then runs the C tools and calls SaveRef).
func LoadRef(key string, files ...string) [][]byte {
	dir := os.Getenv(RefsEnv)
	if dir == "" || key == "" {
		return nil
	}
	var r [][]byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, key, f))
		if err != nil {
			return nil
		}
		r = append(r, b)
	}
	return r
}

// SaveRef writes the files of a reference the test just made (both C tools succeeded) under
// $GOVERBS_LAB_OUT/refs/key, which labsuite copies into the cache after the run.
func SaveRef(t testing.TB, key string, files map[string][]byte) {
	t.Helper()
	out := os.Getenv("GOVERBS_LAB_OUT")
	if out == "" || key == "" {
		return
	}
	dir := filepath.Join(out, RefsOutDir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Log(err)
		return
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Log(err)
		}
	}
}
