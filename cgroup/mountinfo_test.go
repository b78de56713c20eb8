package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// hostMountinfo is a cgroup v1 host without an rdma hierarchy (cgroup2 in
// hybrid mode at .../unified).
const hostMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw
`

// labMountinfo has cgroup2 at /sys/fs/cgroup and a v1 rdma hierarchy whose
// mount point has a space in it.
const labMountinfo = `22 1 0:21 / / rw - 9p host ro,trans=virtio
25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
60 22 0:40 /sub /tmp/rdma\040v1 rw,relatime - cgroup none rw,rdma
`

func TestParseMountinfo(t *testing.T) {
	ms, err := parseMountinfo([]byte(labMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{root: "/", mountpoint: "/", fsType: "9p", superOpts: []string{"ro", "trans=virtio"}},
		{root: "/", mountpoint: "/sys/fs/cgroup", fsType: "cgroup2", superOpts: []string{"rw", "nsdelegate"}},
		{root: "/sub", mountpoint: "/tmp/rdma v1", fsType: "cgroup", superOpts: []string{"rw", "rdma"}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("- want: %+v\n-  got: %+v", want, ms)
	}
	for _, bad := range []string{
		"1 2 3\n",
		"1 2 0:1 / /x rw cgroup cgroup rw\n",         // no separator
		"1 2 0:1 / /x rw - cgroup cgroup\n",          // no super options
		"1 2 0:1 / /x\\04 rw - cgroup cgroup rw\n",   // truncated escape
		"1 2 0:1 / /x\\777 rw - cgroup cgroup rw\n",  // escape above 0xff
		"1 2 0:1 / /x\\0a9 rw - cgroup cgroup rw\n",  // not octal
		"1 2 0:1 / /x rw - cgroup cgroup rw extra\n", // too many fields
	} {
		if _, err := parseMountinfo([]byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("parseMountinfo(%q) error = %v, want ErrSyntax", bad, err)
		}
	}
}

func TestProcCgroupPath(t *testing.T) {
	data := []byte("13:rdma:/goverbs/a:b\n12:cpu,cpuacct:/\n0::/user.slice/x\n")
	if p, err := procCgroupPath(data, V1); err != nil || p != "/goverbs/a:b" {
		t.Errorf("v1 = %q, %v", p, err)
	}
	if p, err := procCgroupPath(data, V2); err != nil || p != "/user.slice/x" {
		t.Errorf("v2 = %q, %v", p, err)
	}
	if _, err := procCgroupPath([]byte("0::/\n"), V1); !errors.Is(err, ErrNoController) {
		t.Errorf("v1 without rdma line: %v", err)
	}
	if _, err := procCgroupPath([]byte("garbage\n"), V2); !errors.Is(err, ErrSyntax) {
		t.Errorf("garbage: %v", err)
	}
}

// fakeProc writes a procfs with self/mountinfo and PID/cgroup files.
func fakeProc(t *testing.T, mountinfo string, cgroups map[string]string) string {
	t.Helper()
	proc := t.TempDir()
	mustWrite(t, filepath.Join(proc, "self", "mountinfo"), mountinfo)
	for pid, c := range cgroups {
		mustWrite(t, filepath.Join(proc, pid, "cgroup"), c)
	}
	return proc
}

func mustWrite(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	v2root := t.TempDir()
	mustWrite(t, filepath.Join(v2root, controllersFile), "cpuset cpu io memory hugetlb pids rdma misc\n")
	v2nordma := t.TempDir()
	mustWrite(t, filepath.Join(v2nordma, controllersFile), "cpu memory\n")
	line := func(mp, typ, opts string) string {
		return "25 22 0:23 / " + strings.ReplaceAll(mp, " ", `\040`) + " rw - " + typ + " " + typ + " " + opts + "\n"
	}

	tests := []struct {
		name      string
		mountinfo string
		want      *Hierarchy
		err       error
	}{
		{"v2 with rdma", line(v2root, "cgroup2", "rw"), &Hierarchy{Version: V2, Mountpoint: v2root, Root: "/"}, nil},
		{"v1 rdma preferred", line(v2root, "cgroup2", "rw") + line("/x/rdma", "cgroup", "rw,rdma"),
			&Hierarchy{Version: V1, Mountpoint: "/x/rdma", Root: "/"}, nil},
		{"v2 without rdma", line(v2nordma, "cgroup2", "rw"), nil, ErrNoController},
		{"v1 host without rdma", hostMountinfo, nil, ErrNoController},
		{"nothing", "", nil, ErrNoController},
		{"garbage", "x\n", nil, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc := fakeProc(t, tt.mountinfo, nil)
			h, err := find(proc)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("find error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.proc = proc
			if !reflect.DeepEqual(h, tt.want) {
				t.Fatalf("- want: %+v\n-  got: %+v", tt.want, h)
			}
		})
	}
}

func TestCgroupOf(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	proc := fakeProc(t, "", map[string]string{
		"10": "5:rdma:/a/b\n0::/elsewhere\n",
		"11": "5:rdma:/sub/a\n",
		"12": "5:rdma:/other\n",
	})
	h := &Hierarchy{Version: V1, Mountpoint: root, Root: "/", proc: proc}
	c, err := h.CgroupOf(10)
	if err != nil || c.Path() != "/a/b" || c.Dir() != filepath.Join(root, "a", "b") {
		t.Fatalf("CgroupOf(10) = %v, %v", c, err)
	}
	// A subtree mount strips the mount's root.
	hs := &Hierarchy{Version: V1, Mountpoint: root, Root: "/sub", proc: proc}
	if c, err := hs.CgroupOf(11); err != nil || c.Path() != "/a" {
		t.Fatalf("CgroupOf(11) under /sub = %v, %v", c, err)
	}
	if _, err := hs.CgroupOf(12); err == nil || !strings.Contains(err.Error(), "outside the mounted subtree") {
		t.Fatalf("CgroupOf(12) under /sub error = %v", err)
	}
	if _, err := h.CgroupOf(99); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CgroupOf(99) error = %v, want ErrNotExist", err)
	}
}
