// Package cgrouptest holds helpers for lab tests of the RDMA cgroup
// controller: getting the controller onto cgroup v2 or a v1 hierarchy,
// creating throw-away cgroups and running the test process inside one.
//
// The RDMA controller can be bound to only one hierarchy at a time: it moves
// to a v1 hierarchy only while no v2 cgroup below the root has it enabled
// (dying cgroups included), and back to v2 when the v1 hierarchy is unmounted
// with no children left. UseV1 and UseV2 handle both directions, so tests
// using them run in either order in one lab boot, with one exception: on
// Linux 6.1 a failed ioctl GET_CONTEXT (a context refused by hca_handle, as
// rdma-core's tools and goverbs open contexts) leaks a task reference that
// pins the cgroup it ran in for the rest of the boot, so such tests must run
// after every test that rebinds the controller.
package cgrouptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cgroup"
	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/sys/unix"
)

// Device returns the RDMA device under test: labtest.Device(), rxe0 in the
// lab.
func Device() string { return labtest.Device() }

// Settle retries fn while it fails with one of the errnos the kernel gives
// while a cgroup hierarchy is still being released asynchronously (css
// offlining runs from a workqueue). It bounds the number of attempts, not a
// time, and returns the last error.
func Settle(fn func() error, errnos ...unix.Errno) error {
	var err error
	for range 500 {
		if err = fn(); err == nil || !slices.ContainsFunc(errnos, func(e unix.Errno) bool { return errors.Is(err, e) }) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// UseV2 returns the v2 hierarchy once the RDMA controller is bound to it.
func UseV2(t testing.TB) *cgroup.Hierarchy {
	t.Helper()
	var h *cgroup.Hierarchy
	err := Settle(func() error {
		var err error
		h, err = cgroup.Find()
		if err == nil && h.Version != cgroup.V2 {
			err = fmt.Errorf("rdma is on a %v hierarchy at %s: %w", h.Version, h.Mountpoint, unix.EBUSY)
		}
		if errors.Is(err, cgroup.ErrNoController) {
			err = fmt.Errorf("%w: %w", err, unix.EAGAIN) // v1 hierarchy still being destroyed
		}
		return err
	}, unix.EBUSY, unix.EAGAIN)
	if err != nil {
		t.Fatalf("cgroup v2 with rdma: %v", err)
	}
	return h
}

// UseV1 mounts a v1 rdma hierarchy (after taking rdma out of the v2 root's
// cgroup.subtree_control) and unmounts it at cleanup.
func UseV1(t testing.TB) *cgroup.Hierarchy {
	t.Helper()
	if h, err := cgroup.Find(); err == nil && h.Version == cgroup.V1 {
		return h
	}
	const v2root = "/sys/fs/cgroup"
	ctl, err := os.ReadFile(filepath.Join(v2root, "cgroup.subtree_control"))
	if err == nil && slices.Contains(strings.Fields(string(ctl)), "rdma") {
		if err := os.WriteFile(filepath.Join(v2root, "cgroup.subtree_control"), []byte("-rdma"), 0); err != nil {
			t.Fatalf("disable rdma on cgroup v2: %v", err)
		}
	}
	dir := t.TempDir()
	err = Settle(func() error { return unix.Mount("none", dir, "cgroup", 0, "rdma") }, unix.EBUSY)
	if err != nil {
		cgroups, _ := os.ReadFile("/proc/cgroups")
		t.Fatalf("mount -t cgroup -o rdma none %s: %v (a dying v2 cgroup still holds the controller; "+
			"did TestLab/RefusedContext (package cgroup) or another refused ioctl GET_CONTEXT run earlier in this boot?)\n/proc/cgroups:\n%s",
			dir, err, cgroups)
	}
	t.Cleanup(func() {
		// Unmounting destroys the hierarchy, and gives the controller back
		// to v2, only if the root has no children then, dying ones included:
		// wait until the removed cgroups are released.
		err := Settle(func() error {
			if n := rdmaCgroups(t); n != 1 {
				return fmt.Errorf("the v1 rdma hierarchy still has %d cgroups: %w", n, unix.EBUSY)
			}
			return nil
		}, unix.EBUSY)
		if err != nil {
			t.Errorf("before umount: %v", err)
		}
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	h, err := cgroup.Find()
	if err != nil || h.Version != cgroup.V1 || h.Mountpoint != dir {
		t.Fatalf("Find after mounting v1 at %s = %+v, %v", dir, h, err)
	}
	return h
}

// rdmaCgroups returns num_cgroups of the rdma controller's hierarchy from
// /proc/cgroups, dying cgroups included.
func rdmaCgroups(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "rdma" {
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("/proc/cgroups: %q", line)
			}
			return n
		}
	}
	t.Fatalf("/proc/cgroups has no rdma line:\n%s", b)
	return 0
}

// NewCgroup creates /goverbs-lab/NAME (enabling rdma on v2) and removes it
// and, on v2, the rdma enablement it added, at cleanup.
func NewCgroup(t testing.TB, h *cgroup.Hierarchy, name string) *cgroup.Cgroup {
	t.Helper()
	rootCtl := filepath.Join(h.Mountpoint, "cgroup.subtree_control")
	before, _ := os.ReadFile(rootCtl)
	c, err := h.Create("/goverbs-lab/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range []string{c.Path(), "/goverbs-lab"} {
			g, err := h.Cgroup(p)
			if err == nil {
				err = Settle(g.Remove, unix.EBUSY)
			}
			if err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		if h.Version == cgroup.V2 && !slices.Contains(strings.Fields(string(before)), "rdma") {
			if err := os.WriteFile(rootCtl, []byte("-rdma"), 0); err != nil {
				t.Errorf("cleanup: disable rdma in the v2 root: %v", err)
			}
		}
	})
	return c
}

// Enter moves the test process into c until the end of the (sub)test, so
// that what it creates is charged there.
func Enter(t testing.TB, c *cgroup.Cgroup) {
	t.Helper()
	prev, err := c.Hierarchy().CgroupOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddProcess(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := prev.AddProcess(os.Getpid()); err != nil {
			t.Errorf("move back to %s: %v", prev.Path(), err)
		}
	})
}
