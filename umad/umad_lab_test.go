package umad_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/umad"
)

// localGID picks the GID to address the local RoCE port with: the first
// IPv4-mapped one (rxe's RoCE v2 GID of veth0's address), else index 0.
func localGID(t *testing.T, dev string) (int, [16]byte) {
	t.Helper()
	var gid [16]byte
	idx := -1
	for i := 0; i < 16; i++ {
		b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "ports/1/gids", strconv.Itoa(i)))
		if err != nil {
			break
		}
		ip := net.ParseIP(strings.TrimSpace(string(b)))
		if ip == nil || ip.IsUnspecified() {
			continue
		}
		if ip.To4() != nil || idx < 0 {
			idx = i
			copy(gid[:], ip.To16())
			if ip.To4() != nil {
				break
			}
		}
	}
	if idx < 0 {
		t.Fatalf("%s port 1 has no GID", dev)
	}
	return idx, gid
}

func openPMA(t *testing.T) (*umad.Port, umad.Agent, umad.Addr) {
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
	gi, gid := localGID(t, dev)
	addr := umad.Addr{QPN: umad.QP1, QKey: umad.QP1QKey, GRH: true, GIDIndex: uint8(gi), GID: gid, HopLimit: 64}
	t.Logf("%s port 1 is %s; addressing own GID index %d %s", dev, p.Device().Name, gi, net.IP(gid[:]))
	return p, a, addr
}

// TestLabPortCountersRoundTrip sends PerfMgt GETs to rxe's own port over
// QP1 with a GRH (RoCE has no LIDs; rxe's port LID is 0). Linux 7.2+ rxe
// answers ClassPortInfo, PortCounters and PortCountersExtended in its
// process_mad; older kernels have no rxe PMA, the request finds no agent
// and the kernel reports the send timed out.
func TestLabPortCountersRoundTrip(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	p, a, addr := openPMA(t)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	k := labtest.Kernel()
	resp, err := p.Call(ctx, a, addr, umad.NewPMAGet(0, umad.AttrClassPortInfo, 1), time.Second, 2)
	if !k.AtLeast(7, 2) {
		if !errors.Is(err, umad.ErrTimeout) {
			t.Fatalf("kernel %s has no rxe PMA: want a timeout, got %v (%x)", k, err, resp)
		}
		t.Logf("kernel %s: ClassPortInfo GET timed out as expected: %v", k, err)
		return
	}
	if err != nil {
		t.Fatalf("ClassPortInfo: %v", err)
	}
	cpi, err := umad.ParsePMAClassPortInfo(resp)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := umad.ParseMADHdr(resp)
	t.Logf("ClassPortInfo reply hdr %+v cap %+v", h, cpi)
	if h.Method != umad.MethodGetResp || h.MgmtClass != umad.ClassPMA || h.AttrID != umad.AttrClassPortInfo {
		t.Errorf("reply header %+v", h)
	}
	if cpi.CapMask != 1<<9 {
		t.Errorf("rxe ClassPortInfo CapMask 0x%x, want 0x200 (IB_PMA_CLASS_CAP_EXT_WIDTH only)", cpi.CapMask)
	}
	resp, err = p.Call(ctx, a, addr, umad.NewPMAGet(0, umad.AttrPortCounters, 1), time.Second, 2)
	if err != nil {
		t.Fatalf("PortCounters: %v", err)
	}
	pc, err := umad.ParsePortCounters(resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PortCounters %+v", pc)
	resp, err = p.Call(ctx, a, addr, umad.NewPMAGet(0, umad.AttrPortCountersExtended, 1), time.Second, 2)
	if err != nil {
		t.Fatalf("PortCountersExtended: %v", err)
	}
	pce, err := umad.ParsePortCountersExtended(resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PortCountersExtended %+v", pce)
	// Our own GETs and replies went through rxe: the packet counters count them.
	if pce.PortXmitPkts == 0 || pce.PortRcvPkts == 0 {
		t.Errorf("rxe counted no packets after three MAD round trips: %+v", pce)
	}
	// An attribute rxe does not implement: a reply with a MAD status.
	_, err = p.Call(ctx, a, addr, umad.NewPMAGet(0, 0x0016 /* PortXmitDataSL... */, 1), time.Second, 1)
	t.Logf("unsupported attribute: %v", err)
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
