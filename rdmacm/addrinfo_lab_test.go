package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// aiInput is one line of test/cpeer/aipeer.c's input: node, service ("-" for NULL), flags ("nil" for NULL
// hints), family, QP type, port space.
type aiInput struct {
	node, service, flags string
	fam, qp, ps          int
	named                bool // uses a service name (/etc/services) or a host name (/etc/hosts)
}

func (in aiInput) line() string {
	return fmt.Sprintf("%s %s %s %d %d %#x", in.node, in.service, in.flags, in.fam, in.qp, in.ps)
}

// goLine is GetAddrInfo's answer for in, printed as aipeer prints rdma_getaddrinfo's.
func (in aiInput) goLine() string {
	arg := func(s string) string { return map[bool]string{true: "", false: s}[s == "-"] }
	var h *rdmacm.AddrInfoHints
	if in.flags != "nil" {
		f, _ := strconv.ParseUint(in.flags, 0, 32)
		h = &rdmacm.AddrInfoHints{Flags: rdmacm.AIFlags(f), Family: rdmacm.Family(in.fam), QPType: uverbs.QPType(in.qp),
			PortSpace: rdmacm.PortSpace(in.ps)}
	}
	ai, err := rdmacm.GetAddrInfo(arg(in.node), arg(in.service), h)
	var g rdmacm.GAIError
	switch {
	case errors.As(err, &g):
		return fmt.Sprintf("eai=%d", int(g))
	case errors.Is(err, rdmacm.ErrNotSupported):
		return fmt.Sprintf("errno=%d", unix.EOPNOTSUPP)
	case errors.Is(err, unix.EINVAL):
		return fmt.Sprintf("errno=%d", unix.EINVAL)
	case err != nil:
		return "error " + err.Error()
	}
	a := ai[0]
	ap := func(s string) string { return map[bool]string{true: "-", false: s}[s == "invalid AddrPort"] }
	canon := func(s string) string { return map[bool]string{true: "-", false: s}[s == ""] }
	return fmt.Sprintf("ok flags=%d fam=%d qp=%d ps=%d src=%s dst=%s srccanon=%s dstcanon=%s route=0 connect=0 next=%d",
		a.Flags, a.Family, a.QPType, a.PortSpace, ap(a.SrcAddr.String()), ap(a.DstAddr.String()),
		canon(a.SrcCanonName), canon(a.DstCanonName), len(ai)-1)
}

// TestLabGetAddrInfoMatchesLibrdmacm: for a table of inputs (numeric IPv4 in inet_aton's forms, IPv6, the
// rxe netdev's address, passive with and without node, service numbers and names, RAI_NUMERICHOST with a
// name, bad and AF_IB families, every port space and QP type, their conflicts, NULL hints), rdmacm.GetAddrInfo
// gives what rdma_getaddrinfo gives, field by field (flags, family, QP type, port space, source and
// destination, canonical names, route and connect lengths, further results): sid's librdmacm (rdma-core 65,
// run from its root by chroot, with that root's /etc/services and /etc/hosts) and the VM's own. The one
// difference is by design: AF_IB with RAI_FAMILY|RAI_NUMERICHOST, where librdmacm returns a sockaddr_ib and
// GetAddrInfo refuses with ErrNotSupported (EOPNOTSUPP).
func TestLabGetAddrInfoMatchesLibrdmacm(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	ip := labIP.String()
	ins := []aiInput{
		{node: ip, service: "7471", flags: "nil"},
		{node: ip, service: "7471", flags: "0"},
		{node: ip, service: "echo", flags: "0", named: true},
		{node: ip, service: "echo", flags: "nil", named: true},
		{node: ip, service: "bootps", flags: "0", named: true},
		{node: ip, service: "ssh", flags: "0", qp: 4, named: true},
		{node: ip, service: "no-such-service-x", flags: "0", named: true},
		{node: ip, service: "7", flags: "0", qp: 4},
		{node: ip, service: "7", flags: "0", qp: 3},
		{node: ip, service: "7", flags: "0", qp: 2},
		{node: ip, service: "7", flags: "0", qp: 8},
		{node: ip, service: "7", flags: "0", ps: 0x106},
		{node: ip, service: "7", flags: "0", ps: 0x111},
		{node: ip, service: "7", flags: "0", ps: 0x13f},
		{node: ip, service: "7", flags: "0", qp: 4, ps: 0x13f},
		{node: ip, service: "7", flags: "0", ps: 0x2},
		{node: ip, service: "7", flags: "0", ps: 0x1234},
		{node: ip, service: "7", flags: "0", qp: 4, ps: 0x106},
		{node: ip, service: "7", flags: "0", qp: 2, ps: 0x111},
		{node: ip, service: "7", flags: "0", fam: 99},
		{node: ip, service: "7", flags: "0", fam: 27},
		{node: ip, service: "7", flags: "0x8", fam: 27},
		{node: ip, service: "7", flags: "0x4"},
		{node: ip, service: "-", flags: "0"},
		{node: ip, service: "70000", flags: "0"},
		{node: ip, service: "4294967296", flags: "0"},
		{node: ip, service: "2147483648", flags: "0"},
		{node: ip, service: "-1", flags: "0"},
		{node: ip, service: "0x10", flags: "0"},
		{node: ip, service: "7471", flags: "0x1"},
		{node: ip, service: "7471", flags: "0x7"},
		{node: "-", service: "7471", flags: "0x1"},
		{node: "-", service: "7471", flags: "0x1", fam: 10},
		{node: "-", service: "7471", flags: "0x1", fam: 2},
		{node: "-", service: "7471", flags: "0x1", qp: 4},
		{node: "-", service: "7471", flags: "0"},
		{node: "-", service: "7471", flags: "nil"},
		{node: "-", service: "7471", flags: "0", fam: 2},
		{node: "*", service: "7471", flags: "0x1"},
		{node: "-", service: "-", flags: "0x4", fam: 2, qp: 4, ps: 0x111},
		{node: "-", service: "-", flags: "nil"},
		{node: "::1", service: "7", flags: "0"},
		{node: "fe80::1", service: "7", flags: "0x2"},
		{node: "::ffff:10.0.0.1", service: "7", flags: "0"},
		{node: "::ffff:10.0.0.1", service: "7", flags: "0", fam: 2},
		{node: "::1", service: "7", flags: "0", fam: 2},
		{node: "10.0.0.1", service: "7", flags: "0", fam: 10},
		{node: "10.1", service: "7", flags: "0x2"},
		{node: "0x0a.010.0.1", service: "7", flags: "0"},
		{node: "localhost", service: "7", flags: "0x2"},
		{node: "localhost", service: "7", flags: "0", fam: 2, named: true},
		{node: "fe80::1", service: "7", flags: "0xa", fam: 27}, // AF_IB sockaddr: refused by design
	}
	var input strings.Builder
	for _, in := range ins {
		input.WriteString(in.line() + "\n")
	}
	bin := labtest.BuildCPeer(t, "aipeer", "rdmacm")
	run := func(t *testing.T, root string) []string {
		cmd := exec.Command(bin)
		if root != "" {
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "tmp", "aipeer"), b, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd = exec.Command("/tmp/aipeer")
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
			cmd.Dir = "/"
		}
		cmd.Stdin = strings.NewReader(input.String())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("aipeer: %v\n%s", err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(ins) {
			t.Fatalf("aipeer printed %d lines for %d inputs:\n%s", len(lines), len(ins), out)
		}
		return lines
	}
	for _, era := range []string{"sid", "vm"} {
		t.Run(era, func(t *testing.T) {
			root := ""
			if era != "vm" {
				root = labtest.PeerRoot(t, era)
			}
			_, errServices := os.Stat(filepath.Join(root, "/etc/services"))
			for i, c := range run(t, root) {
				in := ins[i]
				if in.named && errServices != nil {
					t.Logf("%s: skipped, %s's root has no /etc/services (C: %s)", in.line(), era, c)
					continue
				}
				g := in.goLine()
				if in.fam == 27 && strings.HasPrefix(in.flags, "0xa") {
					if !strings.Contains(c, "fam=27") || g != fmt.Sprintf("errno=%d", unix.EOPNOTSUPP) {
						t.Errorf("%s: C %q, goverbs %q; want AF_IB from C and the refusal from goverbs", in.line(), c, g)
					}
					continue
				}
				if c != g {
					t.Errorf("%s:\n  librdmacm %s\n  goverbs   %s", in.line(), c, g)
				} else {
					t.Logf("%s: %s", in.line(), c)
				}
			}
		})
	}
}

// waitEvent fetches the next event of ch and fails unless it is want.
func waitEvent(t *testing.T, ctx context.Context, ch *rdmacm.Channel, want rdmacm.EventType) *rdmacm.Event {
	t.Helper()
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("waiting for %v: %v", want, err)
	}
	if ev.Type != want {
		t.Fatalf("got %v, want %v", ev, want)
	}
	return ev
}

// TestLabECE: ECE over a real rdma_cm connection between two goverbs ids on rxe, ids without a QP (librdmacm's
// condition for rdma_set_local_ece): the REQ carries the client's SetLocalECE (CONNECT_REQUEST's Event.ECE and
// the incoming id's RemoteECE), the REP the requester's vendor id with the server's options (CONNECT_RESPONSE,
// and the client's RemoteECE); RejectECE reaches the client as REJECTED with status 35 and the private data.
// SetLocalECE refuses vendor id 0 (EINVAL) and an id with a CreateQP QP (ErrState), RemoteECE that id too.
func TestLabECE(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	const port = 20141
	srvCh, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer srvCh.Close()
	cliCh, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer cliCh.Close()
	l, err := srvCh.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(labAddr(port)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	cp := func(qpn uint32) *rdmacm.ConnParam {
		return &rdmacm.ConnParam{QPNum: qpn, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	}
	connect := func(ece rdmacm.ECE) *rdmacm.ID {
		c, err := cliCh.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetLocalECE(ece); err != nil {
			t.Fatal(err)
		}
		if err := c.ResolveAddr(netip.AddrPort{}, labAddr(port), 2*time.Second); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, ctx, cliCh, rdmacm.EventAddrResolved)
		if err := c.ResolveRoute(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, ctx, cliCh, rdmacm.EventRouteResolved)
		if err := c.Connect(cp(0x123)); err != nil {
			t.Fatal(err)
		}
		return c
	}

	cliECE := rdmacm.ECE{VendorID: 0x15b3, AttrMod: 0x5}
	c := connect(cliECE)
	defer c.Close()
	req := waitEvent(t, ctx, srvCh, rdmacm.EventConnectRequest)
	got, err := req.ID.RemoteECE()
	t.Logf("CONNECT_REQUEST: Event.ECE %+v, RemoteECE %+v, %v", req.ECE, got, err)
	if req.ECE != cliECE || got != cliECE || err != nil {
		t.Errorf("server: event ECE %+v, RemoteECE %+v, %v; want %+v", req.ECE, got, err, cliECE)
	}
	if err := req.ID.SetLocalECE(rdmacm.ECE{VendorID: 0x15b3, AttrMod: 0x7}); err != nil {
		t.Fatal(err)
	}
	if err := req.ID.Accept(cp(0x456)); err != nil {
		t.Fatal(err)
	}
	resp := waitEvent(t, ctx, cliCh, rdmacm.EventConnectResponse)
	got, err = c.RemoteECE()
	t.Logf("CONNECT_RESPONSE: Event.ECE %+v, RemoteECE %+v, %v", resp.ECE, got, err)
	if want := (rdmacm.ECE{VendorID: 0x15b3, AttrMod: 0x7}); resp.ECE != want || got != want || err != nil {
		t.Errorf("client: event ECE %+v, RemoteECE %+v, %v; want %+v", resp.ECE, got, err, want)
	}
	if err := c.Establish(); err != nil {
		t.Fatal(err)
	}
	est := waitEvent(t, ctx, srvCh, rdmacm.EventEstablished)
	t.Logf("ESTABLISHED (server): Event.ECE %+v", est.ECE)
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, srvCh, rdmacm.EventDisconnected)
	req.ID.Close() // sends the DREP
	waitEvent(t, ctx, cliCh, rdmacm.EventDisconnected)

	// RejectECE.
	c2 := connect(rdmacm.ECE{VendorID: 0x1234, AttrMod: 1})
	defer c2.Close()
	req = waitEvent(t, ctx, srvCh, rdmacm.EventConnectRequest)
	if err := req.ID.RejectECE([]byte("no such option")); err != nil {
		t.Fatal(err)
	}
	rej := waitEvent(t, ctx, cliCh, rdmacm.EventRejected)
	t.Logf("REJECTED: status %d, ECE %+v, data %q...", rej.Status, rej.ECE, rej.PrivateData()[:16])
	if rej.Status != rdmacm.RejectReasonVendorOptionNotSupported || !bytes.HasPrefix(rej.PrivateData(), []byte("no such option")) {
		t.Errorf("REJECTED status %d data %q, want 35 and the private data", rej.Status, rej.PrivateData())
	}
	if err := req.ID.RejectECE(nil); !errors.Is(err, rdmacm.ErrState) {
		t.Errorf("second reject: %v", err)
	}
	req.ID.Close()

	// Refusals.
	q, err := cliCh.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.SetLocalECE(rdmacm.ECE{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("vendor id 0: %v", err)
	}
	if err := q.Bind(labAddr(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.CreateQP(rdmacm.QPInitAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLocalECE(cliECE); !errors.Is(err, rdmacm.ErrState) || !strings.Contains(err.Error(), "set local ECE") {
		t.Errorf("with a QP: %v", err)
	}
	if _, err := q.RemoteECE(); !errors.Is(err, rdmacm.ErrState) {
		t.Errorf("RemoteECE with a QP: %v", err)
	}
}
