package uverbs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseKB(t *testing.T) {
	meminfo := []byte("MemTotal:        2030000 kB\nMemFree:  100 kB\nMemAvailable:    1875480 kB\n")
	if v, ok := parseKB(meminfo, "MemAvailable:"); !ok || v != 1875480*1024 {
		t.Fatalf("MemAvailable = %d, %v", v, ok)
	}
	if _, ok := parseKB(meminfo, "VmPin:"); ok {
		t.Fatal("found a key that is not there")
	}
	if _, ok := parseKB([]byte("MemAvailable: lots kB\n"), "MemAvailable:"); ok {
		t.Fatal("parsed a non-number")
	}
}

func FuzzParseKB(f *testing.F) {
	f.Add([]byte("MemAvailable:    1875480 kB\n"))
	f.Add([]byte("MemAvailable:\n"))
	f.Add([]byte("MemAvailable: 99999999999999999999 kB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, ok := parseKB(b, "MemAvailable:"); ok && v%1024 != 0 {
			t.Fatalf("%d is not whole kB", v)
		}
	})
}

// The memory cgroup's headroom: v2 walks the process's cgroup and its ancestors, the smallest room wins;
// page cache counts as room.
func TestCgroupHeadroom(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "a", "memory.max"), "max\n")
	write(filepath.Join(root, "a", "b", "memory.max"), "1000000\n")
	write(filepath.Join(root, "a", "b", "memory.current"), "600000\n")
	write(filepath.Join(root, "a", "b", "memory.stat"), "anon 400000\nfile 200000\n")
	proc := filepath.Join(root, "cgroup")
	write(proc, "0::/a/b\n")
	room, where, ok := cgroupHeadroom(proc, root, 500000)
	if !ok || room != 600000 || where != "memory.max of cgroup /a/b" {
		t.Fatalf("headroom %d %q %v, want 600000 in /a/b", room, where, ok)
	}
	// A length the limit leaves room for without the page cache: memory.stat is not read, the room is
	// reported without the cache.
	if room, _, ok = cgroupHeadroom(proc, root, 1000); !ok || room != 400000 {
		t.Fatalf("headroom for 1000 bytes %d %v, want 400000 (memory.stat not read)", room, ok)
	}
	write(filepath.Join(root, "a", "memory.max"), "500000\n")
	write(filepath.Join(root, "a", "memory.current"), "400000\n")
	if room, where, _ = cgroupHeadroom(proc, root, 500000); room != 100000 || where != "memory.max of cgroup /a" {
		t.Fatalf("headroom %d %q, want 100000 in /a (the parent's limit binds)", room, where)
	}
	// v1
	write(filepath.Join(root, "memory", "x", "memory.limit_in_bytes"), "300000\n")
	write(filepath.Join(root, "memory", "x", "memory.usage_in_bytes"), "250000\n")
	write(filepath.Join(root, "memory", "x", "memory.stat"), "total_cache 50000\n")
	write(proc, "12:cpu,memory:/x\n")
	if room, where, _ = cgroupHeadroom(proc, root, 500000); room != 100000 || where != "memory.limit_in_bytes of cgroup /x" {
		t.Fatalf("v1 headroom %d %q, want 100000", room, where)
	}
	write(proc, "0::/\n")
	if _, _, ok := cgroupHeadroom(proc, root, 500000); ok {
		t.Fatal("the root cgroup has no limit")
	}
}

func TestCheckPin(t *testing.T) {
	if err := CheckPin("rxe0", 0); err != nil {
		t.Fatal(err)
	}
	avail, ok := memAvailable("/proc/meminfo")
	if !ok {
		t.Skip("no MemAvailable")
	}
	err := CheckPin("rxe0", avail+1<<30)
	var me *MemoryError
	var ml *MemlockError
	if !errors.Is(err, unix.ENOMEM) || !(errors.As(err, &me) || errors.As(err, &ml)) {
		t.Fatalf("CheckPin(MemAvailable + 1 GiB) = %v, want a *MemoryError or *MemlockError", err)
	}
}
