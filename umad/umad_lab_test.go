package umad_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/umad"
)

// localGID picks the GID to address the local RoCE port with: an IPv6
// one (rxe's GID 0, the link-local fe80::) unless v4, then the first
// IPv4-mapped one. The MAD layer matches a reply to its request by
// comparing the reply's destination GID with the request's source GID in
// the receive buffer's GRH (rcv_has_same_gid in core/mad.c); for RoCE v2
// over IPv4 that buffer holds an IPv4 header instead of a GRH, so replies
// to requests sent with an IPv4-mapped GID are dropped.
func localGID(t *testing.T, dev string, v4 bool) (int, [16]byte) {
	t.Helper()
	var gid [16]byte
	for i := 0; i < 16; i++ {
		b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "ports/1/gids", strconv.Itoa(i)))
		if err != nil {
			break
		}
		ip := net.ParseIP(strings.TrimSpace(string(b)))
		if ip == nil || ip.IsUnspecified() || (ip.To4() != nil) != v4 {
			continue
		}
		copy(gid[:], ip.To16())
		return i, gid
	}
	t.Fatalf("%s port 1 has no %s GID", dev, map[bool]string{true: "IPv4", false: "IPv6"}[v4])
	return 0, gid
}

func openPMA(t *testing.T, v4 bool) (*umad.Port, umad.Agent, umad.Addr) {
	t.Helper()
	dev := labtest.Device()
	p, err := umad.Open(dev, 1)
	if err != nil {
		t.Fatalf("Open(%s, 1): %v", dev, err)
	}
	a, err := p.Register(umad.Registration{Class: umad.ClassPMA, ClassVersion: 1})
	if err != nil {
		p.Close()
		t.Fatalf("Register PMA: %v", err)
	}
	gi, gid := localGID(t, dev, v4)
	addr := umad.Addr{QPN: umad.QP1, QKey: umad.QP1QKey, GRH: true, GIDIndex: uint8(gi), GID: gid, HopLimit: 64}
	t.Logf("%s port 1 is %s; addressing own GID index %d %s", dev, p.Device().Name, gi, net.IP(gid[:]))
	return p, a, addr
}

func hwCounters(dev string) map[string]int64 {
	out := map[string]int64{}
	dir := filepath.Join("/sys/class/infiniband", dev, "ports/1/hw_counters")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 0, 64); err == nil {
			out[e.Name()] = v
		}
	}
	return out
}

// warmUp sends GETs until the kernel accepts one: the first MAD to a
// link-local GID waits for neighbour resolution and its write(2) fails
// with ETIMEDOUT.
func warmUp(t *testing.T, p *umad.Port, a umad.Agent, addr umad.Addr) {
	t.Helper()
	for i := 0; ; i++ {
		err := p.Send(a, addr, umad.NewPMAGet(uint64(1000+i), umad.AttrClassPortInfo, 1), 100*time.Millisecond, 0)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.ETIMEDOUT) || i == 20 {
			t.Fatalf("send: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLabPortCountersRoundTrip sends PerfMgt GETs for PortCounters to
// rxe's own port over QP1, addressed by GRH to its IPv6 GID (RoCE has no
// LIDs; rxe's port LID is 0).
//
// Without rxe PMA (before 7.2) a second umad file registers a PerfMgt
// server agent: the MAD layer hands it the GET, it answers with counters
// of its own, and the client's Call decodes them — a round trip through
// the kernel's user MAD interface in both directions. Without that agent
// the MAD layer itself answers "unsupported" (status 0x000c).
//
// With rxe PMA (7.2+) the driver's process_mad takes every PerfMgt GET
// before any agent and replies — rxe's counters show a request and a reply
// per attempt — but the reply never reaches the requester: rxe_process_mad
// fills only the attribute data and leaves the MAD header (class, method,
// TID) zero, so the MAD layer has nothing to route it by. The kernel
// reports the request as timed out; the test records that.
func TestLabPortCountersRoundTrip(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	dev := labtest.Device()
	p, a, addr := openPMA(t, false)
	defer p.Close()
	warmUp(t, p, a, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Drain the warm-up's reply or timeout report.
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	for {
		if _, err := p.Recv(dctx); err != nil {
			break
		}
	}
	dcancel()

	k := labtest.Kernel()
	if k.AtLeast(7, 2) {
		before := hwCounters(dev)
		resp, err := p.Call(ctx, a, addr, umad.NewPMAGet(0, umad.AttrPortCounters, 1), time.Second, 1)
		after := hwCounters(dev)
		sent, rcvd := after["sent_pkts"]-before["sent_pkts"], after["rcvd_pkts"]-before["rcvd_pkts"]
		t.Logf("kernel %s: PortCounters GET: %v; rxe sent %d, received %d packets", k, err, sent, rcvd)
		if err == nil {
			pc, _ := umad.ParsePortCounters(resp)
			t.Logf("rxe answered: %+v (the kernel's reply routing works now: make this the expected path)", pc)
			return
		}
		if !errors.Is(err, umad.ErrTimeout) {
			t.Fatalf("want the kernel's timeout report, got %v", err)
		}
		if sent != 4 || rcvd != 4 {
			t.Errorf("want 2 requests and 2 rxe replies on the wire (4 sent, 4 received), got %d, %d", sent, rcvd)
		}
		return
	}

	// The MAD layer's own answer when no agent serves PerfMgt GET.
	_, err := p.Call(ctx, a, addr, umad.NewPMAGet(0, umad.AttrPortCounters, 1), time.Second, 2)
	var se *umad.StatusError
	if !errors.Is(err, umad.ErrMADStatus) || !errors.As(err, &se) || se.Status != 0x000c ||
		!strings.HasSuffix(err.Error(), "MAD status 0x000c (Method/Attribute combo not supported)") {
		t.Fatalf("without a PerfMgt server: want MAD status 0x000c, got %v", err)
	}

	srv, err := umad.Open(dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sa, err := srv.Register(umad.Registration{Class: umad.ClassPMA, ClassVersion: 1, MethodMask: [2]uint64{1 << umad.MethodGet}})
	if err != nil {
		t.Fatalf("server agent: %v", err)
	}
	want := umad.PortCounters{PortSelect: 1, CounterSelect: 0xffff, LinkDownedCounter: 42, PortXmitData: 0x01020304, PortRcvPkts: 7}
	served := make(chan error, 1)
	go func() {
		pkt, err := srv.Recv(ctx)
		if err != nil {
			served <- err
			return
		}
		h, err := umad.ParseMADHdr(pkt.MAD)
		if err != nil || h.Method != umad.MethodGet || h.AttrID != umad.AttrPortCounters || pkt.MAD[umad.PMADataOffset+1] != 1 {
			served <- fmt.Errorf("server got %+v %v", h, err)
			return
		}
		resp := append([]byte(nil), pkt.MAD...)
		h.Method = umad.MethodGetResp
		h.Put(resp)
		want.Put(resp)
		back := pkt.Addr
		back.QKey = umad.QP1QKey
		back.GIDIndex = addr.GIDIndex
		served <- srv.Send(sa, back, resp, 0, 0)
	}()
	resp, err := p.Call(ctx, a, addr, umad.NewPMAGet(0, umad.AttrPortCounters, 1), 2*time.Second, 2)
	if serr := <-served; serr != nil {
		t.Fatalf("server: %v", serr)
	}
	if err != nil {
		t.Fatalf("PortCounters GET: %v", err)
	}
	got, err := umad.ParsePortCounters(resp)
	if err != nil || got != want {
		t.Fatalf("PortCounters reply %+v (%v), want %+v", got, err, want)
	}
	t.Logf("kernel %s: PortCounters GET answered through a user-space PerfMgt agent: %+v", k, got)
}

func fdCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestLabAgentsReleased proves that Unregister frees an agent slot (the
// kernel allows 32 per file), that Close frees the file and its agents, and
// that a Recv blocked when Close runs returns.
func TestLabAgentsReleased(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	dev := labtest.Device()
	before := fdCount(t)
	for round := 0; round < 50; round++ {
		p, err := umad.Open(dev, 1)
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		var agents []umad.Agent
		for i := 0; ; i++ {
			a, err := p.Register(umad.Registration{Class: umad.ClassPMA, ClassVersion: 1})
			if err != nil {
				if i != 32 {
					t.Fatalf("round %d: agent %d: %v", round, i, err)
				}
				break
			}
			agents = append(agents, a)
		}
		if round == 0 {
			// Freed slots are usable again.
			for _, a := range agents[:4] {
				if err := p.Unregister(a); err != nil {
					t.Fatal(err)
				}
			}
			for range 4 {
				if _, err := p.Register(umad.Registration{Class: umad.ClassPMA, ClassVersion: 1}); err != nil {
					t.Fatalf("re-register after Unregister: %v", err)
				}
			}
			if err := p.Unregister(agents[0]); err != nil {
				// agents[0]'s id was reused by the re-registration
				t.Logf("unregister reused id: %v", err)
			}
			done := make(chan error, 1)
			go func() { _, err := p.Recv(context.Background()); done <- err }()
			time.Sleep(20 * time.Millisecond)
			p.Close()
			select {
			case err := <-done:
				if !errors.Is(err, umad.ErrClosed) {
					t.Fatalf("Recv after Close: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not wake a blocked Recv")
			}
			continue
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if p.Agents() != 0 {
			t.Fatalf("Agents() = %d after Close", p.Agents())
		}
	}
	if after := fdCount(t); after != before {
		t.Fatalf("fds: %d before, %d after 50 open/register/close rounds", before, after)
	}
}

// TestLabSyscallConn: the port's descriptor (umad_get_fd) is the umad character device the port opened, and
// after Close it is refused as closed.
func TestLabSyscallConn(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	p, err := umad.Open(labtest.Device(), 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := p.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st, want unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		t.Fatalf("control: %v, fstat: %v", err, serr)
	}
	if err := unix.Stat(p.Device().Path, &want); err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != want.Rdev {
		t.Errorf("descriptor is mode %#o rdev %#x, want the character device %s (rdev %#x)", st.Mode, st.Rdev, p.Device().Path, want.Rdev)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SyscallConn(); !errors.Is(err, umad.ErrClosed) {
		t.Errorf("SyscallConn after Close: %v, want ErrClosed", err)
	}
}
