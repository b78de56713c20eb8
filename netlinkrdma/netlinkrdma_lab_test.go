package netlinkrdma_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabLibrary checks netlinkrdma against the lab's kernel (rxe0 on
// veth0, veth1 free): discovery against sysfs and /dev, typed errors for
// what the kernel refuses, link add and delete.
func TestLabLibrary(t *testing.T) {
	labtest.Require(t)
	if !labtest.InLab() {
		t.Skip("adds and deletes rxe links on the lab's veth pair; runs only in the lab VM")
	}
	c, err := netlinkrdma.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	if d.NodeType != netlinkrdma.NodeTypeCA || d.NumPorts != 1 || d.Protocol != "roce" {
		t.Errorf("rxe0: %+v", d)
	}
	guid, err := os.ReadFile("/sys/class/infiniband/rxe0/node_guid")
	if err != nil {
		t.Fatal(err)
	}
	if want, got := strings.TrimSpace(string(guid)), d.NodeGUID.String(); want != got {
		t.Errorf("node GUID:\n- want: %s\n-  got: %s", want, got)
	}
	cd, err := c.Chardev(d.Index, "uverbs")
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/infiniband/"+cd.Name, &st); err != nil {
		t.Fatal(err)
	}
	if unix.Major(st.Rdev) != cd.Major || unix.Minor(st.Rdev) != cd.Minor {
		t.Errorf("%s: stat says %d:%d, netlink %d:%d", cd.Name, unix.Major(st.Rdev), unix.Minor(st.Rdev), cd.Major, cd.Minor)
	}
	if cd.DriverID != netlinkrdma.DriverRXE || cd.ABI != 2 {
		t.Errorf("uverbs chardev: %+v", cd)
	}
	if _, err := c.Chardev(d.Index, "bogus"); err == nil {
		t.Error("bogus chardev type accepted")
	}
	ports, err := c.Ports(d.Index)
	if err != nil || len(ports) != 1 || ports[0].State != netlinkrdma.PortStateActive || ports[0].NetdevName != "veth0" ||
		ports[0].IB != nil {
		t.Errorf("ports: %+v, %v", ports, err)
	}
	s, err := c.System()
	if err != nil || !s.CopyOnFork || s.NetNSMode != netlinkrdma.NetNSShared {
		t.Errorf("system: %+v, %v", s, err)
	}
	sum, err := c.ResourceSummaries()
	if err != nil || len(sum) == 0 || sum[0].DevName != "rxe0" {
		t.Errorf("resource summaries: %+v, %v", sum, err)
	}
	qps, err := c.QPs(netlinkrdma.ResQuery{DevIndex: d.Index})
	if err != nil || len(qps) == 0 || qps[0].Type.String() != "GSI" || qps[0].KernelName == "" {
		t.Errorf("qps: %+v, %v", qps, err)
	}
	if _, err := c.PortStats(d.Index, 1); err != nil {
		t.Error(err)
	}

	for _, tc := range []struct {
		name, typ, netdev string
		want              error
	}{
		{"rxe9", "rxe", "veth0", unix.EEXIST},
		{"rxe9", "rxe", "nosuch0", unix.ENODEV},
		{"rxe9", "bogus", "veth1", unix.EINVAL},
	} {
		err := c.LinkAdd(tc.name, tc.typ, tc.netdev)
		if !errors.Is(err, tc.want) {
			t.Errorf("LinkAdd(%s, %s, %s): want %v, got %v", tc.name, tc.typ, tc.netdev, tc.want, err)
		}
	}
	if err := c.LinkAdd("rxe9", "rxe", "veth1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Device("rxe9"); err != nil {
		t.Error(err)
	}
	if err := c.LinkDel("rxe9"); err != nil {
		t.Fatal(err)
	}
	if err := c.LinkDel("rxe9"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("deleting a deleted link: want ENODEV, got %v", err)
	}
}

// TestLabUnprivileged checks the errors of a caller without CAP_NET_ADMIN:
// it re-runs itself under setpriv as nobody with no capabilities.
func TestLabUnprivileged(t *testing.T) {
	if os.Getenv("NETLINKRDMA_UNPRIVILEGED") == "1" {
		c, err := netlinkrdma.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Device("rxe0"); err != nil {
			t.Errorf("listing devices needs no privilege: %v", err)
		}
		if err := c.LinkAdd("rxe9", netlinkrdma.LinkTypeRXE, "veth1"); !errors.Is(err, unix.EPERM) {
			t.Errorf("LinkAdd without CAP_NET_ADMIN: want EPERM, got %v", err)
		}
		if err := c.LinkDel("rxe0"); !errors.Is(err, unix.EPERM) {
			t.Errorf("LinkDel without CAP_NET_ADMIN: want EPERM, got %v", err)
		}
		if err := c.SetDeviceName(0, "foo"); !errors.Is(err, unix.EPERM) {
			t.Errorf("SetDeviceName without CAP_NET_ADMIN: want EPERM, got %v", err)
		}
		return
	}
	labtest.Require(t)
	if !labtest.InLab() {
		t.Skip("runs only in the lab VM")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		"--bounding-set=-all", self, "-test.run=^TestLabUnprivileged$", "-test.v")
	cmd.Env = append(os.Environ(), "NETLINKRDMA_UNPRIVILEGED=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLabUnprivileged") {
		t.Fatalf("unprivileged run: %v\n%s", err, out)
	}
}
