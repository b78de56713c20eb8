package labtest

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/netlinkrdma"
)

// PeerHost is the lab's second host: a network namespace that holds the far end of the lab's veth pair
// (veth1, 10.233.0.2/24) with an rxe device of its own on it. Traffic between rxe0 (veth0, 10.233.0.1, the
// initial namespace) and the peer's device crosses the veth as real RoCEv2 packets, each end with its own
// GIDs, UDP socket and routes: two hosts in one VM, as the kernel's own selftest
// rxe_rping_between_netns.sh builds them.
type PeerHost struct {
	NetNS  string // the namespace's name: /run/netns/NetNS
	Device string // its rxe device
	Netdev string // its netdev, the lab's veth1
	Addr   string // the netdev's IPv4 address (GID index 1 of Device is its RoCEv2 GID)
}

// The lab's peer host (test/lab sets up veth1 with this address).
const (
	peerNetNS  = "goverbs-peer"
	peerDevice = "rxe1"
	peerNetdev = "veth1"
	peerAddr   = "10.233.0.2"
	peerPrefix = "/24"
)

// rxeNetNSVersion is the first kernel whose rxe works in a network namespace other than the initial one
// (per-namespace UDP sockets and routes: "RDMA/rxe: Add net namespace support for IPv4/IPv6 sockets", 7.1).
// Before it, an rxe device on a netdev of another namespace receives nothing there.
var rxeNetNSVersion = [2]int{7, 1}

// TwoHosts builds the two-host topology for t and tears it down when t ends: it moves veth1 into a new network
// namespace, gives it its address there and creates an rxe device on it (with goverbs' own RDMA netlink, in
// that namespace). On kernels older than 7.1 it skips t, naming the kernel; outside the lab it skips (or
// fails, with GOVERBS_LAB_REQUIRED=1). The test must not run in parallel with tests that need veth1 or that
// list every device: the topology adds one.
func TwoHosts(t testing.TB) *PeerHost {
	t.Helper()
	Require(t)
	RequireRoot(t)
	if !InLab() {
		t.Skip("the two-host topology moves the lab's veth1 into a namespace: it runs only in the lab VM")
	}
	if k := Kernel(); !k.AtLeast(rxeNetNSVersion[0], rxeNetNSVersion[1]) {
		t.Skipf("rxe in a network namespace needs Linux %d.%d; this is %s", rxeNetNSVersion[0], rxeNetNSVersion[1], k)
	}
	p := &PeerHost{NetNS: peerNetNS, Device: peerDevice, Netdev: peerNetdev, Addr: peerAddr}
	undo, err := p.setUp()
	t.Cleanup(func() {
		if err := undo(); err != nil {
			t.Errorf("tear down the peer host: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("set up the peer host (%s in namespace %s): %v", p.Device, p.NetNS, err)
	}
	return p
}

// NetNSPath is the namespace's file, for nsenter --net or setns(2).
func (p *PeerHost) NetNSPath() string { return "/run/netns/" + p.NetNS }

// Enter rewrites cmd (not yet started) so that it runs in the peer's network namespace: it runs through
// nsenter(1), and a chroot the command asked for (SysProcAttr.Chroot, the other Debian releases' tools) is
// made by chroot(8) after entering, since nsenter is not inside that root. The process nsenter execs keeps
// the pid cmd.Process reports, so /proc/PID/net names the peer's sockets.
func (p *PeerHost) Enter(cmd *exec.Cmd) {
	argv := []string{"nsenter", "--net=" + p.NetNSPath(), "--"}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Chroot != "" {
		argv = append(argv, "chroot", cmd.SysProcAttr.Chroot)
		cmd.SysProcAttr.Chroot = ""
	}
	argv = append(argv, cmd.Path)
	argv = append(argv, cmd.Args[1:]...)
	path, err := exec.LookPath("nsenter")
	if err != nil {
		cmd.Err = fmt.Errorf("run %s in namespace %s: %w (nsenter is in util-linux)", cmd.Path, p.NetNS, err)
		return
	}
	cmd.Path, cmd.Args = path, argv
}

// setUp builds the topology; undo reverses whatever part of it was built.
func (p *PeerHost) setUp() (undo func() error, err error) {
	var steps []func() error
	undo = func() error {
		var errs []error
		for i := len(steps) - 1; i >= 0; i-- {
			errs = append(errs, steps[i]())
		}
		steps = nil
		return errors.Join(errs...)
	}
	if _, err := os.Stat(p.NetNSPath()); err == nil {
		return undo, fmt.Errorf("namespace %s exists already (left over by an earlier test?)", p.NetNS)
	}
	host, err := currentNetNS()
	if err != nil {
		return undo, fmt.Errorf("open this namespace: %w", err)
	}
	steps = append(steps, host.Close)
	ns, err := newNamedNetNS(p.NetNS)
	if err != nil {
		return undo, fmt.Errorf("create namespace %s: %w", p.NetNS, err)
	}
	steps = append(steps, func() error {
		ns.Close()
		return netns.DeleteNamed(p.NetNS)
	})
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return undo, fmt.Errorf("netlink in namespace %s: %w", p.NetNS, err)
	}
	steps = append(steps, func() error { h.Close(); return nil })
	addr, err := netlink.ParseAddr(p.Addr + peerPrefix)
	if err != nil {
		return undo, err
	}

	// veth1 into the namespace; back home (with its address, up) when done.
	l, err := netlink.LinkByName(p.Netdev)
	if err != nil {
		return undo, fmt.Errorf("find %s: %w", p.Netdev, err)
	}
	if err := netlink.LinkSetNsFd(l, int(ns)); err != nil {
		return undo, fmt.Errorf("move %s into namespace %s: %w", p.Netdev, p.NetNS, err)
	}
	steps = append(steps, func() error {
		l, err := h.LinkByName(p.Netdev)
		if err != nil {
			return fmt.Errorf("find %s in namespace %s: %w", p.Netdev, p.NetNS, err)
		}
		if err := h.LinkSetNsFd(l, int(host)); err != nil {
			return fmt.Errorf("move %s back: %w", p.Netdev, err)
		}
		if l, err = netlink.LinkByName(p.Netdev); err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, addr); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("address %s on %s: %w", addr, p.Netdev, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		return waitActive(Device())
	})
	for _, name := range []string{"lo", p.Netdev} {
		l, err := h.LinkByName(name)
		if err != nil {
			return undo, fmt.Errorf("find %s in namespace %s: %w", name, p.NetNS, err)
		}
		if name == p.Netdev {
			if err := h.AddrAdd(l, addr); err != nil {
				return undo, fmt.Errorf("address %s on %s: %w", addr, name, err)
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			return undo, fmt.Errorf("set %s up in namespace %s: %w", name, p.NetNS, err)
		}
	}

	// The rxe device, created from inside the namespace (its netdev is looked up there).
	rc, err := netlinkrdma.DialNetNS(ns)
	if err != nil {
		return undo, fmt.Errorf("RDMA netlink in namespace %s: %w", p.NetNS, err)
	}
	steps = append(steps, rc.Close)
	if err := rc.LinkAdd(p.Device, netlinkrdma.LinkTypeRXE, p.Netdev); err != nil {
		return undo, err
	}
	steps = append(steps, func() error {
		if _, err := os.Stat("/sys/class/infiniband/" + p.Device); errors.Is(err, os.ErrNotExist) {
			return nil // the test deleted it
		}
		return rc.LinkDel(p.Device)
	})
	for _, dev := range []string{p.Device, Device()} { // moving veth1 took veth0's carrier away for a moment
		if err := waitActive(dev); err != nil {
			return undo, err
		}
	}
	if err := waitGID(p.Device, 1, "0000:0000:0000:0000:0000:ffff:"+hexIPv4(p.Addr)); err != nil {
		return undo, err
	}
	return undo, nil
}

// newNamedNetNS creates a named network namespace from a locked thread and moves the thread back. (A thread
// left in the namespace would be dropped by the runtime when its goroutine ends, except the main thread, which
// the runtime keeps wedged: /proc/self/ns/net and /proc/net would then name the namespace.)
func newNamedNetNS(name string) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{netns.None(), err}
			return
		}
		defer orig.Close()
		ns, err := netns.NewNamed(name)
		if err := netns.Set(orig); err != nil {
			ch <- result{ns, fmt.Errorf("return to the original namespace: %w", err)} // the thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		ch <- result{ns, err}
	}()
	r := <-ch
	return r.ns, r.err
}

// currentNetNS opens this goroutine's thread's network namespace (not /proc/self's, the main thread's).
func currentNetNS() (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return netns.Get()
}

const topologyWait = 60 * time.Second

func waitActive(dev string) error {
	return waitFile("/sys/class/infiniband/"+dev+"/ports/1/state", func(s string) bool {
		return strings.HasSuffix(s, "ACTIVE")
	}, dev+" port 1 ACTIVE")
}

func waitGID(dev string, index int, gid string) error {
	return waitFile(fmt.Sprintf("/sys/class/infiniband/%s/ports/1/gids/%d", dev, index), func(s string) bool {
		return s == gid
	}, fmt.Sprintf("%s GID %d = %s", dev, index, gid))
}

func waitFile(path string, ok func(string) bool, what string) error {
	deadline := time.Now().Add(topologyWait)
	for {
		b, err := os.ReadFile(path)
		s := strings.TrimSpace(string(b))
		if err == nil && ok(s) {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
			return fmt.Errorf("waiting for %s: %s is %q after %v", what, path, s, topologyWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hexIPv4 writes a.b.c.d as sysfs prints the low 32 bits of an IPv4-mapped GID: "0ae9:0002".
func hexIPv4(addr string) string {
	b := netip.MustParseAddr(addr).As4()
	return fmt.Sprintf("%02x%02x:%02x%02x", b[0], b[1], b[2], b[3])
}
