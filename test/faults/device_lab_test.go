package faults

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// TestLabPortDownUp takes the far end of rxe0's veth down and up again (rxe0's netdev loses its carrier; its
// addresses and GIDs stay): an open device reports PORT_ERR on port 1, then PORT_ACTIVE, through
// Context.AsyncEvent, and the port state follows. Every kernel of the matrix.
func TestLabPortDownUp(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	if !labtest.InLab() {
		t.Skip("takes the lab's veth1 down: runs only in the lab VM")
	}
	c, err := uverbs.Open(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // after the port is back (cleanups run last first)
	far, err := netlink.LinkByName("veth1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkSetUp(far); err != nil {
			t.Errorf("set veth1 up again: %v", err)
		}
		waitPortState(t, c, uverbs.PortActive)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, step := range []struct {
		set   func(netlink.Link) error
		event uverbs.AsyncEventType
		state uverbs.PortState
	}{
		{netlink.LinkSetDown, uverbs.EventPortErr, uverbs.PortDown},
		{netlink.LinkSetUp, uverbs.EventPortActive, uverbs.PortActive},
	} {
		start := time.Now()
		if err := step.set(far); err != nil {
			t.Fatal(err)
		}
		ev, err := nextEvent(ctx, t, c, step.event)
		if err != nil {
			t.Fatalf("waiting for %v: %v", step.event, err)
		}
		if ev.Port != 1 {
			t.Errorf("%v on port %d, want 1", ev.Type, ev.Port)
		}
		waitPortState(t, c, step.state)
		t.Logf("%v on port %d after %v", ev.Type, ev.Port, time.Since(start).Round(time.Microsecond))
	}
}

func waitPortState(t *testing.T, c *uverbs.Context, want uverbs.PortState) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pa, err := c.QueryPort(1)
		if err != nil {
			t.Fatal(err)
		}
		if pa.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port 1 is %v, want %v", pa.State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLabDeviceRemoval deletes the peer host's rxe device (rdma link delete, from its namespace) while this
// process streams RDMA WRITEs through it: the deletion completes while the device is open (7.3 gave rxe
// disassociate_ucontext), the open context reports DEVICE_FATAL, the stream ends with an error instead of a
// hang or a panic, every later verb fails cleanly, and closing every object returns.
//
// A program learns of the removal from the DEVICE_FATAL event (as with libibverbs): rxe's rings are memory the
// process still maps, so a CQ of the removed device just stays empty, and only calls into the kernel (the
// doorbell of a post, any command) fail, with EIO. The stream here stops on the event or on such an error.
func TestLabDeviceRemoval(t *testing.T) {
	peer := labtest.TwoHosts(t)
	if k := labtest.Kernel(); !k.AtLeast(7, 3) {
		t.Skipf("rxe has no disassociate_ucontext before 7.3: rdma link delete waits until every process has closed the device (%s)", k)
	}
	const (
		size  = 64 << 10
		depth = 16
	)
	a := openEnd(t, labtest.Device(), size, 4*depth)
	var b *end
	t.Cleanup(func() { // runs after b's objects are closed
		if b != nil {
			t.Logf("closing %s's objects: %d errors %q", b.name, len(b.closeErrs), b.closeErrs)
		}
	})
	b = openEnd(t, peer.Device, size, 4*depth)
	b.removed = true // its objects die with the device: Close errors are recorded, not failures
	_, qb := rcPair(t, a, b, depth, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	streamCtx, stopStream := context.WithCancelCause(ctx)
	defer stopStream(nil)
	var (
		wg        sync.WaitGroup
		writes    int
		streamErr error
		progress  = make(chan struct{})
	)
	wg.Add(1)
	go func() { // the stream: RDMA WRITEs from the peer into rxe0's buffer, depth at a time
		defer wg.Done()
		wcs := make([]uverbs.WC, depth)
		inflight := 0
		for streamCtx.Err() == nil {
			for inflight < depth {
				if _, err := qb.PostSend([]uverbs.SendWR{{WRID: uint64(writes + inflight), Opcode: uverbs.WRRDMAWrite,
					Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{b.mr.SGE(0, 4096)},
					RemoteAddr: a.mr.Addr(), RKey: a.mr.RKey()}}); err != nil {
					streamErr = err
					return
				}
				inflight++
			}
			n, err := b.cq.Poll(wcs)
			if err != nil {
				streamErr = err
				return
			}
			if err := wcErr(wcs[:n]); err != nil {
				streamErr = err
				return
			}
			inflight -= n
			writes += n
			if writes >= 50 && progress != nil {
				close(progress)
				progress = nil
			}
			if n == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
		streamErr = context.Cause(streamCtx)
	}()
	select {
	case <-progress:
	case <-ctx.Done():
		t.Fatal("the stream made no progress")
	}

	events := make(chan uverbs.AsyncEvent, 1)
	go func() { // the program's event loop: on DEVICE_FATAL, stop using the device
		ev, err := nextEvent(ctx, t, b.ctx, uverbs.EventDeviceFatal)
		if err == nil {
			stopStream(errDeviceFatal)
			events <- ev
		}
		close(events)
	}()
	del := make(chan error, 1)
	start := time.Now()
	go func() { del <- linkDelIn(peer) }()
	select {
	case err := <-del:
		if err != nil {
			t.Fatalf("rdma link delete %s: %v", peer.Device, err)
		}
	case <-ctx.Done():
		t.Fatalf("rdma link delete %s did not return while the device was open", peer.Device)
	}
	tookDel := time.Since(start)
	ev, ok := <-events
	if !ok {
		t.Fatalf("no DEVICE_FATAL event on %s: %v", peer.Device, ctx.Err())
	}
	wg.Wait()
	if streamErr == nil || errors.Is(streamErr, context.DeadlineExceeded) {
		t.Fatalf("the stream through the deleted device ended with %v after %d writes", streamErr, writes)
	}
	if !errors.Is(streamErr, errDeviceFatal) && !errors.Is(streamErr, unix.EIO) {
		t.Errorf("the stream ended with %v, want the event or EIO", streamErr)
	}
	if _, err := os.Stat("/sys/class/infiniband/" + peer.Device); err == nil {
		t.Errorf("%s still exists after rdma link delete", peer.Device)
	}
	// Every verb on the dead device fails; none panics or hangs.
	_, postErr := qb.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{b.mr.SGE(0, 64)}, RemoteAddr: a.mr.Addr(), RKey: a.mr.RKey()}})
	_, pdErr := b.ctx.AllocPD()
	t.Logf("rdma link delete returned after %v; %v; the stream ended after %d writes with: %v; then PostSend: %v; AllocPD: %v",
		tookDel.Round(time.Millisecond), ev, writes, streamErr, postErr, pdErr)
	if !errors.Is(postErr, unix.EIO) {
		t.Errorf("PostSend on a deleted device: %v, want EIO", postErr)
	}
	if !errors.Is(pdErr, unix.EIO) {
		t.Errorf("AllocPD on a deleted device: %v, want EIO", pdErr)
	}
}

var errDeviceFatal = errors.New("DEVICE_FATAL event")

// linkDelIn deletes the peer's rxe device from inside its namespace.
func linkDelIn(peer *labtest.PeerHost) error {
	ns, err := netns.GetFromPath(peer.NetNSPath())
	if err != nil {
		return err
	}
	defer ns.Close()
	c, err := netlinkrdma.DialNetNS(ns)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.LinkDel(peer.Device)
}
