package netlinkrdma_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/labtest"
)

// labLink describes the lab's software device and the links the tests add beside it: rxe0 (Soft-RoCE) or, in
// the lab run with -provider siw, siw0 (Soft-iWARP), both on veth0 with veth1 free.
type labLink struct {
	dev      string               // the lab's device
	typ      string               // its link type
	extra    string               // the name of a link the tests add on veth1 and delete
	nodeType netlinkrdma.NodeType // what the kernel reports
	protocol string               // the device's protocol
	driver   netlinkrdma.DriverID // its uverbs driver
	abi      uint64               // the driver's uverbs ABI version
}

func lab() labLink {
	if labtest.Provider() == "siw" {
		return labLink{labtest.Device(), netlinkrdma.LinkTypeSIW, "siw9", netlinkrdma.NodeTypeRNIC, "iw", netlinkrdma.DriverSIW, 1}
	}
	return labLink{labtest.Device(), netlinkrdma.LinkTypeRXE, "rxe9", netlinkrdma.NodeTypeCA, "roce", netlinkrdma.DriverRXE, 2}
}

// TestLabLibrary checks netlinkrdma against the lab's kernel (rxe0 or siw0 on
// veth0, veth1 free): discovery against sysfs and /dev, typed errors for
// what the kernel refuses, link add and delete.
func TestLabLibrary(t *testing.T) {
	c := dialLinkLab(t)
	l := lab()
	d, err := c.Device(l.dev)
	if err != nil {
		t.Fatal(err)
	}
	if d.NodeType != l.nodeType || d.NumPorts != 1 || d.Protocol != l.protocol {
		t.Errorf("%s: %+v", l.dev, d)
	}
	guid, err := os.ReadFile("/sys/class/infiniband/" + l.dev + "/node_guid")
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
	if cd.DriverID != l.driver || cd.ABI != l.abi {
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
	if err != nil || len(sum) == 0 || sum[0].DevName != l.dev {
		t.Errorf("resource summaries: %+v, %v", sum, err)
	}
	qps, err := c.QPs(netlinkrdma.ResQuery{DevIndex: d.Index})
	if l.typ == netlinkrdma.LinkTypeSIW {
		// iWARP has no management datagrams: ib_core creates no GSI QP (QP1) on siw0, and nothing else holds one.
		if err != nil || len(qps) != 0 {
			t.Errorf("qps on %s: want none (no GSI QP on iWARP), got %+v, %v", l.dev, qps, err)
		}
	} else if err != nil || len(qps) == 0 || qps[0].Type.String() != "GSI" || qps[0].KernelName == "" {
		t.Errorf("qps: %+v, %v", qps, err)
	}
	if _, err := c.PortStats(d.Index, 1); l.typ == netlinkrdma.LinkTypeSIW {
		// siw has no hardware counters (no alloc_hw_port_stats): the kernel refuses the port's statistics.
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("port statistics of %s/1: want EINVAL (siw keeps no port counters), got %v", l.dev, err)
		}
	} else if err != nil {
		t.Error(err)
	}

	for _, tc := range []struct {
		name, typ, netdev string
		want              error
	}{
		{l.extra, l.typ, "veth0", unix.EEXIST}, // rxe and siw both take a netdev once
		{l.extra, l.typ, "nosuch0", unix.ENODEV},
		{l.extra, "bogus", "veth1", unix.EINVAL},
	} {
		err := c.LinkAdd(tc.name, tc.typ, tc.netdev)
		if !errors.Is(err, tc.want) {
			t.Errorf("LinkAdd(%s, %s, %s): want %v, got %v", tc.name, tc.typ, tc.netdev, tc.want, err)
		}
	}
	if err := c.LinkAdd(l.extra, l.typ, "veth1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Device(l.extra); err != nil {
		t.Error(err)
	}
	if err := c.LinkDel(l.extra); err != nil {
		t.Fatal(err)
	}
	if err := c.LinkDel(l.extra); !errors.Is(err, unix.ENODEV) {
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
		l := lab()
		if _, err := c.Device(l.dev); err != nil {
			t.Errorf("listing devices needs no privilege: %v", err)
		}
		if err := c.LinkAdd(l.extra, l.typ, "veth1"); !errors.Is(err, unix.EPERM) {
			t.Errorf("LinkAdd without CAP_NET_ADMIN: want EPERM, got %v", err)
		}
		if err := c.LinkDel(l.dev); !errors.Is(err, unix.EPERM) {
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
	// nobody runs a copy it can reach whatever the modes above the checkout, from /.
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		"--bounding-set=-all", labtest.ReachableCopy(t, self), "-test.run=^TestLabUnprivileged$", "-test.v")
	cmd.Env = append(os.Environ(), "NETLINKRDMA_UNPRIVILEGED=1")
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLabUnprivileged") {
		t.Fatalf("unprivileged run: %v\n%s", err, out)
	}
}

// TestLabMonitor subscribes to device events and adds and deletes an rxe
// (or siw) link: on kernels with monitor mode (6.12+) the events name the device,
// its port and its netdev; on 6.1 the kernel reports no monitor mode and
// sends nothing. Cancellation and Close end a waiting Next.
func TestLabMonitor(t *testing.T) {
	c := dialLinkLab(t)
	s, err := c.System()
	if err != nil {
		t.Fatal(err)
	}
	m, err := netlinkrdma.NewMonitor()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := m.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing to report: want DeadlineExceeded, got %v", err)
	}
	cancel()

	l := lab()
	t.Cleanup(func() { c.LinkDel(l.extra) })
	if err := c.LinkAdd(l.extra, l.typ, "veth1"); err != nil {
		t.Fatal(err)
	}
	d, err := c.Device(l.extra)
	if err != nil {
		t.Fatal(err)
	}
	veth1, err := net.InterfaceByName("veth1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LinkDel(l.extra); err != nil {
		t.Fatal(err)
	}
	if !s.Monitor {
		if s.Present.Has(abi.RDMA_NLDEV_SYS_ATTR_MONITOR_MODE) {
			t.Errorf("kernel %s sends monitor mode off", labtest.Kernel())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if e, err := m.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Linux %s reports no monitor mode but sent %+v (%v)", labtest.Kernel(), e, err)
		}
		t.Skipf("Linux %s reports no RDMA monitor mode (RDMA_NLDEV_SYS_ATTR_MONITOR_MODE absent): no events to check",
			labtest.Kernel())
	}

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen []netlinkrdma.Event
	for len(seen) == 0 || seen[len(seen)-1].Type != netlinkrdma.EventUnregister {
		e, err := m.Next(ctx)
		if err != nil {
			t.Fatalf("after %+v: %v", seen, err)
		}
		if e.DevName == l.extra || e.DevIndex == d.Index {
			seen = append(seen, e)
		}
	}
	types := make(map[netlinkrdma.EventType]netlinkrdma.Event)
	for _, e := range seen {
		types[e.Type] = e
		if e.DevIndex != d.Index {
			t.Errorf("%v event for device %d, want %d", e.Type, e.DevIndex, d.Index)
		}
	}
	if _, ok := types[netlinkrdma.EventRegister]; !ok {
		t.Errorf("no REGISTER event in %+v", seen)
	}
	att, ok := types[netlinkrdma.EventNetdevAttach]
	if !ok || att.Port != 1 || att.NetdevName != "veth1" || att.NetdevIndex != uint32(veth1.Index) {
		t.Errorf("NETDEV_ATTACH: got %+v, want port 1 on veth1 (index %d)", att, veth1.Index)
	}
	t.Logf("events on Linux %s: %+v", labtest.Kernel(), seen)

	// Close from another goroutine ends a waiting Next.
	done := make(chan error, 1)
	go func() { _, err := m.Next(context.Background()); done <- err }()
	time.Sleep(20 * time.Millisecond)
	m.Close()
	select {
	case err := <-done:
		if !errors.Is(err, netlinkrdma.ErrClosed) || !errors.Is(err, net.ErrClosed) || !errors.Is(err, os.ErrClosed) {
			t.Errorf("Next after Close: want ErrClosed (net.ErrClosed, os.ErrClosed), got %v", err)
		}
		if _, err := m.Next(context.Background()); !errors.Is(err, netlinkrdma.ErrClosed) {
			t.Errorf("second Next after Close: want ErrClosed, got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a waiting Next")
	}
}

// dialLinkLab is the start of a test that adds and deletes rxe (or siw) links: it
// runs only in the lab VM, and gets a Conn closed at the test's end.
func dialLinkLab(t *testing.T) *netlinkrdma.Conn {
	t.Helper()
	labtest.Require(t)
	if !labtest.InLab() {
		t.Skip("adds and deletes rxe or siw links on the lab's veth pair; runs only in the lab VM")
	}
	c, err := netlinkrdma.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
