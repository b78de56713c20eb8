package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeV2 lays out a cgroup2-like tree in a temporary directory: the root with
// cgroup.controllers and cgroup.subtree_control, and /a with the rdma files.
func fakeV2(t *testing.T) *Hierarchy {
	t.Helper()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, controllersFile), "cpu memory rdma\n")
	mustWrite(t, filepath.Join(root, subtreeControlFile), "")
	mustWrite(t, filepath.Join(root, "a", subtreeControlFile), "cpu rdma\n")
	mustWrite(t, filepath.Join(root, "a", MaxFile), "rxe0 hca_handle=1 hca_object=max \nrxe1 hca_handle=max hca_object=max \n")
	mustWrite(t, filepath.Join(root, "a", CurrentFile), "rxe0 hca_handle=1 hca_object=3 \nrxe1 hca_handle=0 hca_object=0 \n")
	mustWrite(t, filepath.Join(root, "a", procsFile), "")
	mustWrite(t, filepath.Join(root, "nordma", procsFile), "12\n34\n")
	return NewHierarchy(V2, root)
}

func readString(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCgroupPaths(t *testing.T) {
	h := fakeV2(t)
	for in, want := range map[string]string{"": "/", "/": "/", "a": "/a", "/a/": "/a", "../../a": "/a", "/a/../a": "/a"} {
		c, err := h.Cgroup(in)
		if err != nil || c.Path() != want {
			t.Errorf("Cgroup(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	if _, err := h.Cgroup("/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Cgroup(/missing) error = %v, want ErrNotExist", err)
	}
	if _, err := h.Cgroup("/a/" + MaxFile); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("Cgroup on a file: error = %v, want ENOTDIR", err)
	}
	if _, err := h.Cgroup("a\x00b"); err == nil {
		t.Error("Cgroup with NUL succeeded")
	}
	c, _ := h.Cgroup("a")
	if c.String() != "v2:/a" || c.Hierarchy() != h {
		t.Errorf("String() = %q", c.String())
	}
}

func TestCgroupRead(t *testing.T) {
	h := fakeV2(t)
	c, err := h.Cgroup("/a")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Limit{{Device: "rxe0", HCAHandle: 1, HCAObject: Max}, {Device: "rxe1", HCAHandle: Max, HCAObject: Max}}; !reflect.DeepEqual(l, want) {
		t.Fatalf("Limits:\n- want: %+v\n-  got: %+v", want, l)
	}
	u, err := c.DeviceUsage("rxe0")
	if err != nil || !reflect.DeepEqual(u, Usage{Device: "rxe0", HCAHandle: 1, HCAObject: 3}) {
		t.Fatalf("DeviceUsage(rxe0) = %+v, %v", u, err)
	}
	dl, err := c.DeviceLimit("rxe1")
	if err != nil || !dl.Unlimited() {
		t.Fatalf("DeviceLimit(rxe1) = %+v, %v", dl, err)
	}

	var ce *Error
	_, err = c.DeviceLimit("mlx5_0")
	if !errors.Is(err, unix.ENODEV) || !errors.As(err, &ce) || ce.Device != "mlx5_0" || ce.Cgroup != "/a" {
		t.Fatalf("DeviceLimit(mlx5_0) error = %v, want *Error with ENODEV", err)
	}
	if _, err = c.DeviceUsage("mlx5_0"); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("DeviceUsage(mlx5_0) error = %v, want ENODEV", err)
	}

	// A cgroup whose parent did not enable rdma has no rdma files.
	n, err := h.Cgroup("/nordma")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"Limits":   func() error { _, err := n.Limits(); return err },
		"Usage":    func() error { _, err := n.Usage(); return err },
		"SetLimit": func() error { return n.SetLimit("rxe0", ResourceValue{HCAHandle, 1}) },
	} {
		err := f()
		if !errors.Is(err, ErrNotEnabled) || !errors.Is(err, unix.ENOENT) || !errors.As(err, &ce) {
			t.Errorf("%s on /nordma: error = %v, want *Error with ErrNotEnabled and ENOENT", name, err)
		}
	}
	// The root cgroup never has them.
	r, _ := h.Cgroup("/")
	if _, err := r.Limits(); !errors.Is(err, ErrNotEnabled) {
		t.Errorf("root Limits error = %v, want ErrNotEnabled", err)
	}
	// A malformed file is a *ParseError inside an *Error.
	mustWrite(t, filepath.Join(h.Mountpoint, "a", CurrentFile), "rxe0 hca_handle=1\n")
	var pe *ParseError
	if _, err := c.Usage(); !errors.As(err, &pe) || !errors.As(err, &ce) {
		t.Errorf("Usage of malformed file: error = %v", err)
	}
}

func TestCgroupWrite(t *testing.T) {
	h := fakeV2(t)
	c, err := h.Cgroup("/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetLimit("rxe0", ResourceValue{HCAHandle, 2}, ResourceValue{HCAObject, Max}); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(c.Dir(), MaxFile)); got != "rxe0 hca_handle=2 hca_object=max" {
		t.Fatalf("rdma.max written as %q", got)
	}
	if err := c.RemoveLimit("rxe1"); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(c.Dir(), MaxFile)); got != "rxe1 hca_handle=max hca_object=max" {
		t.Fatalf("rdma.max written as %q", got)
	}
	if err := c.SetLimit("bad dev"); err == nil {
		t.Fatal("SetLimit with a space in the device name succeeded")
	}
	if err := c.AddProcess(4242); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(c.Dir(), procsFile)); got != "4242" {
		t.Fatalf("cgroup.procs written as %q", got)
	}
	n, _ := h.Cgroup("/nordma")
	if pids, err := n.Processes(); err != nil || !reflect.DeepEqual(pids, []int{12, 34}) {
		t.Fatalf("Processes = %v, %v", pids, err)
	}
	mustWrite(t, filepath.Join(n.Dir(), procsFile), "12\nx\n")
	if _, err := n.Processes(); !errors.Is(err, ErrSyntax) {
		t.Fatalf("Processes of malformed file: %v", err)
	}
}

func TestCreateEnablesController(t *testing.T) {
	h := fakeV2(t)
	// /a already has rdma enabled; the root does not yet.
	c, err := h.Create("/a/b")
	if err != nil {
		t.Fatal(err)
	}
	if c.Path() != "/a/b" {
		t.Fatalf("Path = %q", c.Path())
	}
	if got := readString(t, filepath.Join(h.Mountpoint, subtreeControlFile)); got != "+rdma" {
		t.Fatalf("root subtree_control written as %q", got)
	}
	if got := readString(t, filepath.Join(h.Mountpoint, "a", subtreeControlFile)); got != "cpu rdma\n" {
		t.Fatalf("/a subtree_control changed to %q", got)
	}
	// The fake /a/b has no cgroup.subtree_control, so going deeper fails
	// with the open's ENOENT, naming the cgroup.
	var ce *Error
	if _, err := h.Create("/a/b/c"); !errors.Is(err, os.ErrNotExist) || !errors.As(err, &ce) || ce.Cgroup != "/a/b" {
		t.Fatalf("Create(/a/b/c) error = %v", err)
	}
	// On v1 nothing is enabled, directories are just made.
	v1 := NewHierarchy(V1, t.TempDir())
	if _, err := v1.Create("x/y"); err != nil {
		t.Fatal(err)
	}
	if err := v1.EnableController("/x"); err != nil {
		t.Fatal(err)
	}
	y, _ := v1.Cgroup("/x/y")
	if err := y.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Cgroup("/x/y"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	x, _ := v1.Cgroup("/")
	if err := x.Remove(); err == nil {
		t.Fatal("removing the root succeeded")
	}
}

func TestResolve(t *testing.T) {
	h := fakeV2(t)
	mustWrite(t, filepath.Join(h.Mountpoint, "usr", procsFile), "") // a cgroup named like a top-level directory
	outside := t.TempDir()
	for in, want := range map[string]string{
		// Paths in the hierarchy, as Cgroup takes them.
		"": "/", "/": "/", "a": "/a", "/a": "/a", "/a/b/..": "/a", "sys/fs/x": "/sys/fs/x",
		"/new/x": "/new/x", // not there yet (create): no such top-level directory either
		"/usr/x": "/usr/x", // the hierarchy has a cgroup /usr, so /usr/x is in it
		// Directories at or below the mount point.
		h.Mountpoint:                        "/",
		h.Mountpoint + "/":                  "/",
		h.Mountpoint + "/a":                 "/a",
		h.Mountpoint + "/a/../nordma":       "/nordma",
		filepath.Join(h.Mountpoint, "x/y"):  "/x/y",
		h.Mountpoint + "//a///":             "/a",
		filepath.Join(h.Mountpoint, "usr"):  "/usr",
		filepath.Join(h.Mountpoint, "../a"): "", // climbs out: outside
	} {
		got, err := h.Resolve(in)
		if want == "" {
			if !errors.Is(err, ErrOutsideHierarchy) {
				t.Errorf("Resolve(%q) = %q, %v; want ErrOutsideHierarchy", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// A directory elsewhere is an error naming it and the mount point.
	_, err := h.Resolve(outside)
	if !errors.Is(err, ErrOutsideHierarchy) || !strings.Contains(err.Error(), outside) || !strings.Contains(err.Error(), h.Mountpoint) {
		t.Errorf("Resolve(%q) error = %v", outside, err)
	}
	// A mount prefix that is not a path prefix ("/sys/fs/cgroupX") is not below the mount.
	if got, err := h.Resolve(h.Mountpoint + "X/a"); err == nil {
		t.Errorf("Resolve(mount+\"X/a\") = %q, want an error", got)
	}
	// Mounted at "/", every absolute path is in the hierarchy.
	if got, err := NewHierarchy(V2, "/").Resolve("/tmp/x"); err != nil || got != "/tmp/x" {
		t.Errorf("mounted at /: Resolve = %q, %v", got, err)
	}
	if _, err := h.Resolve("/a\x00"); err == nil {
		t.Error("Resolve accepted a NUL")
	}
}
