package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadN(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{4: "0123", 10: "0123456789", 64: "0123456789"} {
		b, err := ReadN(p, n)
		if err != nil || string(b) != want {
			t.Errorf("ReadN(%d) = %q, %v", n, b, err)
		}
	}
	if _, err := ReadN(filepath.Join(dir, "missing"), 4); !errors.Is(err, unix.ENOENT) {
		t.Errorf("missing: %v", err)
	}
	if _, err := ReadN(dir, 4); !errors.Is(err, unix.EISDIR) {
		t.Errorf("directory: %v", err)
	}
}

func TestNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "a", ".hidden"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, err := Names(dir)
	sort.Strings(names)
	if err != nil || len(names) != 3 || names[0] != ".hidden" || names[2] != "b" {
		t.Fatalf("Names = %q, %v", names, err)
	}
	if _, err := Names(filepath.Join(dir, "x")); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestPaths(t *testing.T) {
	fs := Under("/t")
	if fs.SysPath("class/infiniband") != "/t/sys/class/infiniband" || fs.DevPath("infiniband/uverbs0") != "/t/dev/infiniband/uverbs0" {
		t.Fatal(fs)
	}
	if Host.SysPath("class") != "/sys/class" {
		t.Fatal(Host)
	}
	if CString([]byte("ab\x00cd")) != "ab" || CString([]byte("ab")) != "ab" {
		t.Fatal("CString")
	}
}
