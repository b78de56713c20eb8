package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// labIP is the address of the netdev carrying rxe0 in the lab (rdma_cm needs
// it: 127.0.0.1 has no RDMA device).
var labIP = netip.MustParseAddr("10.233.0.1")

func labAddr(port uint16) netip.AddrPort { return netip.AddrPortFrom(labIP, port) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustListen listens on addr or fails the test.
func mustListen(t *testing.T, addr netip.AddrPort, o *rdmacm.Options) *rdmacm.Listener {
	t.Helper()
	l, err := rdmacm.Listen(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serveOne accepts one connection request on l in a goroutine, once check (when not nil) approves it, waits for
// the client's DISCONNECT and closes the connection; the channel carries the first error, or nil.
func serveOne(ctx context.Context, l *rdmacm.Listener, check func(*rdmacm.Request) error) <-chan error {
	errc := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			errc <- err
			return
		}
		if check != nil {
			if err := check(req); err != nil {
				errc <- err
				return
			}
		}
		c, err := req.Accept(ctx, nil)
		if err != nil {
			errc <- err
			return
		}
		_, err = c.WaitEvent(ctx) // the client's DISCONNECT
		errc <- errors.Join(err, c.Close())
	}()
	return errc
}

// waitWC polls cq until one completion arrives (bounded).
func waitWC(t *testing.T, cq *uverbs.CQ) uverbs.WC {
	t.Helper()
	wc := make([]uverbs.WC, 1)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wc) // the test's only Poll
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if wc[0].Status != uverbs.WCSuccess {
				t.Fatalf("completion status %d", wc[0].Status)
			}
			return wc[0]
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no completion in 20 s")
	return uverbs.WC{}
}

func TestLabRCConnectSend(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	l := mustListen(t, labAddr(20101), nil)
	defer l.Close()

	type result struct {
		msg, priv []byte
		err       error
	}
	done := make(chan result, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		buf := make([]byte, 64)
		var mr *uverbs.MR
		c, err := req.Accept(ctx, &rdmacm.Options{PrivateData: []byte("welcome"), Setup: func(c *rdmacm.Conn) error {
			var err error
			if mr, err = c.PD().RegMR(buf, uverbs.AccessLocalWrite); err != nil {
				return err
			}
			_, err = c.QP().PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{mr.SGE(0, len(buf))}}})
			return err
		}})
		if err != nil {
			done <- result{err: err}
			return
		}
		wc := waitWC(t, c.RecvCQ())
		msg := append([]byte(nil), buf[:wc.ByteLen]...)
		done <- result{msg: msg, priv: req.PrivateData}
		// Wait for the client's DISCONNECT, then close.
		if ev, err := c.WaitEvent(ctx); err != nil || ev.Type != rdmacm.EventDisconnected {
			t.Errorf("server: event %v, %v; want DISCONNECTED", ev, err)
		}
		mr.Close()
		if err := c.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
		close(done)
	}()

	c, err := rdmacm.Dial(ctx, labAddr(20101), &rdmacm.Options{PrivateData: []byte("hello server")})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(c.PrivateData(), []byte("welcome")) || len(c.PrivateData()) != rdmacm.MaxAcceptPrivateData {
		t.Errorf("accept private data %q (%d bytes)", c.PrivateData(), len(c.PrivateData()))
	}
	msg := []byte("ping over rdma_cm")
	mr, err := c.PD().RegMR(msg, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.QP().PostSend([]uverbs.SendWR{{WRID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{mr.SGE(0, len(msg))}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, c.SendCQ())
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !bytes.Equal(r.msg, msg) {
		t.Errorf("server got %q", r.msg)
	}
	if !bytes.HasPrefix(r.priv, []byte("hello server")) || len(r.priv) != rdmacm.MaxConnectPrivateData {
		t.Errorf("request private data %q (%d bytes)", r.priv, len(r.priv))
	}
	mr.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	<-done // the server's checks
}

func TestLabReject(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	l := mustListen(t, labAddr(20102), nil)
	defer l.Close()
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			if err := req.Reject(bytes.Repeat([]byte("x"), rdmacm.MaxRejectPrivateData+1)); !errors.Is(err, rdmacm.ErrPrivateDataTooLong) {
				t.Errorf("oversize reject: %v", err)
			}
			req.Reject([]byte("go away"))
		}
	}()
	_, err := rdmacm.Dial(ctx, labAddr(20102), nil)
	var ee *rdmacm.EventError
	if !errors.Is(err, unix.ECONNREFUSED) || !errors.As(err, &ee) {
		t.Fatalf("dial: %v, want ECONNREFUSED", err)
	}
	if ee.Event.Type != rdmacm.EventRejected || ee.Event.Status != 28 || !bytes.HasPrefix(ee.PrivateData(), []byte("go away")) {
		t.Errorf("event %v status %d data %q", ee.Event.Type, ee.Event.Status, ee.PrivateData())
	}
}

func TestLabNoListener(t *testing.T) {
	labtest.Require(t)
	_, err := rdmacm.Dial(testCtx(t), labAddr(20103), nil)
	var ee *rdmacm.EventError
	if !errors.Is(err, unix.ECONNREFUSED) || !errors.As(err, &ee) || ee.Event.Status != 8 {
		t.Fatalf("dial with no listener: %v, want REJECTED status 8", err)
	}
}

func TestLabUDResolve(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	o := &rdmacm.Options{PortSpace: rdmacm.PortSpaceUDP}
	l := mustListen(t, labAddr(20104), o)
	defer l.Close()
	srv := make(chan *rdmacm.Conn, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
			srv <- nil
			return
		}
		c, err := req.Accept(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		srv <- c
	}()
	c, err := rdmacm.Dial(ctx, labAddr(20104), &rdmacm.Options{PortSpace: rdmacm.PortSpaceUDP, PrivateData: []byte("ud")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-srv
	if s == nil {
		t.FailNow()
	}
	defer s.Close()
	ud := c.UD()
	if ud.QPNum != s.QP().QPN() || ud.QKey != 0x01234567 || !ud.AHAttr.IsGlobal {
		t.Errorf("UD param %+v, server QPN %#x", ud, s.QP().QPN())
	}
	if c.QP().State() != uverbs.QPStateRTS {
		t.Errorf("UD QP state %v", c.QP().State())
	}
}

func TestLabTypedErrors(t *testing.T) {
	labtest.Require(t)
	id := newRCID(t)
	// Oversize private data: typed error, and nothing reached the kernel.
	err := id.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, rdmacm.MaxConnectPrivateData+1)})
	if !errors.Is(err, rdmacm.ErrPrivateDataTooLong) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("connect with 57 bytes: %v", err)
	}
	// Wrong state: accepting an id that is no incoming connection.
	if err := id.Accept(nil); !errors.Is(err, rdmacm.ErrState) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("accept on a fresh id: %v", err)
	}
	// The kernel's own state check: RESOLVE_ROUTE before RESOLVE_ADDR.
	if err := id.ResolveRoute(time.Second); !errors.Is(err, unix.EINVAL) {
		t.Errorf("resolve route unresolved: %v", err)
	}
	var ce *rdmacm.Error
	if err := id.ResolveRoute(time.Second); !errors.As(err, &ce) || ce.Op != "resolve route" || ce.ID != id.Num() {
		t.Errorf("error %v does not name the command and id", err)
	}
	if err := id.Close(); err != nil {
		t.Fatal(err)
	}
	if err := id.Listen(1); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("listen after destroy: %v", err)
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func resCounts(t *testing.T) map[string]uint64 { return labtest.ResourceCounts(t) }

func TestLabConnectLoopLeaksNothing(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	n := 100
	if testing.Short() {
		n = 10
	}
	l := mustListen(t, labAddr(20105), nil)
	// Warm up once so that lazily created process state (netlink sockets,
	// runtime poller fds) is not counted as a leak.
	loopOnce := func(i int) error {
		errc := serveOne(ctx, l, nil)
		c, err := rdmacm.Dial(ctx, labAddr(20105), nil)
		if err != nil {
			return fmt.Errorf("dial %d: %w", i, err)
		}
		if err := c.Close(); err != nil {
			return fmt.Errorf("close %d: %w", i, err)
		}
		if err := <-errc; err != nil {
			return fmt.Errorf("server %d: %w", i, err)
		}
		return nil
	}
	if err := loopOnce(-1); err != nil {
		t.Fatal(err)
	}
	fds, res := countFDs(t), resCounts(t)
	for i := range n {
		if err := loopOnce(i); err != nil {
			t.Fatal(err)
		}
	}
	if got := countFDs(t); got > fds {
		t.Errorf("%d fds open after %d connections, %d before", got, n, fds)
	}
	l.Close()
	after := resCounts(t)
	checked := 0
	for k, v := range after {
		switch path.Base(k) {
		case "pd", "cq", "qp", "cm_id", "mr", "ctx":
			checked++
			if before := res[k]; v > before {
				t.Errorf("%s: %d after %d connections, %d before", k, v, n, before)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no resource counts in %v", after)
	}
}

// Multicast: two UD ids join 239.1.1.1 (the sender send-only), the sender
// SENDs to the group (QPN 0xFFFFFF, AH and QKey from MULTICAST_JOIN), the
// receiver's QP, attached on MULTICAST_JOIN, gets it.
func TestLabMulticast(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	group := netip.MustParseAddrPort("239.1.1.1:0")
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	type member struct {
		id *rdmacm.ID
		m  *rdmacm.Multicast
		ud rdmacm.UDParam
	}
	join := func(sendOnly bool) *member {
		id, err := ch.CreateID(rdmacm.PortSpaceUDP, uverbs.QPTypeUD)
		if err != nil {
			t.Fatal(err)
		}
		if err := id.ResolveAddr(labAddr(0), group, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if ev, err := ch.GetEvent(ctx); err != nil || ev.Type != rdmacm.EventAddrResolved || ev.ID != id {
			t.Fatalf("resolve %v: %v %v", group, ev, err)
		}
		if _, err := id.CreateQP(rdmacm.QPInitAttr{}); err != nil {
			t.Fatal(err)
		}
		m, err := id.JoinMulticast(group, sendOnly)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := ch.GetEvent(ctx)
		if err != nil || ev.Type != rdmacm.EventMulticastJoin || ev.Multicast != m || ev.ID != id {
			t.Fatalf("join: %v %v", ev, err)
		}
		return &member{id, m, ev.UD}
	}
	rcv := join(false)
	snd := join(true)
	if snd.ud.QPNum != 0xFFFFFF || snd.ud.AHAttr.GRH.DGID != uverbs.GID(netip.MustParseAddr("::ffff:239.1.1.1").As16()) {
		t.Errorf("MULTICAST_JOIN param %+v", snd.ud)
	}
	_, pd, err := rcv.id.Device()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 40+64)
	mr, err := pd.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	if _, err := rcv.id.QP().PostRecv([]uverbs.RecvWR{{SGL: []uverbs.SGE{mr.SGE(0, len(buf))}}}); err != nil {
		t.Fatal(err)
	}
	ah, err := pd.CreateAH(snd.ud.AHAttr)
	if err != nil {
		t.Fatal(err)
	}
	defer ah.Close()
	copy(buf[40:], "to the group")
	if _, err := snd.id.QP().PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		AH: ah.Data(), RemoteQPN: snd.ud.QPNum, RemoteQKey: snd.ud.QKey, SGL: []uverbs.SGE{mr.SGE(40, 12)}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, snd.id.SendCQ())
	wc := waitWC(t, rcv.id.RecvCQ())
	if wc.ByteLen != 40+12 || string(buf[40:52]) != "to the group" {
		t.Errorf("received %d bytes %q", wc.ByteLen, buf[40:52])
	}
	for _, mb := range []*member{snd, rcv} {
		if err := mb.m.Leave(); err != nil {
			t.Error(err)
		}
		if err := mb.id.Close(); err != nil {
			t.Error(err)
		}
	}
}

// Migrating an id moves its events: the resolve is started on one channel
// and its ADDR_RESOLVED read from another.
func TestLabMigrate(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	ch1, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch1.Close()
	ch2, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch2.Close()
	id, err := ch1.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveAddr(netip.AddrPort{}, labAddr(20106), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := id.Migrate(ch2); err != nil {
		t.Fatal(err)
	}
	if id.Channel() != ch2 {
		t.Fatal("id still on the old channel")
	}
	ev, err := ch2.GetEvent(ctx)
	if err != nil || ev.Type != rdmacm.EventAddrResolved || ev.ID != id {
		t.Fatalf("event on the new channel: %v %v", ev, err)
	}
	// The old channel must still wait in the poller (not block) and honour its context.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := ch1.GetEvent(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("old channel: %v, want deadline exceeded", err)
	}
	if id.LocalAddr().Addr() != labIP {
		t.Errorf("local address %v", id.LocalAddr())
	}
}

// GetEvent honours cancellation while it waits.
func TestLabGetEventCancel(t *testing.T) {
	labtest.Require(t)
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := ch.GetEvent(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// And the channel still works afterwards.
	id, err := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	id.ResolveAddr(netip.AddrPort{}, labAddr(20107), 2*time.Second)
	if ev, err := ch.GetEvent(testCtx(t)); err != nil || ev.Type != rdmacm.EventAddrResolved {
		t.Fatalf("after cancel: %v %v", ev, err)
	}
}

// IPv6: connect over the link-local address of the rxe netdev (sockaddr_in6
// with a scope id).
func TestLabIPv6(t *testing.T) {
	labtest.Require(t)
	a6 := labtest.IPv6Addr(t)
	ctx := testCtx(t)
	addr := netip.AddrPortFrom(a6, 20108)
	l := mustListen(t, addr, nil)
	defer l.Close()
	errc := serveOne(ctx, l, func(req *rdmacm.Request) error {
		if !req.Remote.Addr().Is6() {
			return fmt.Errorf("request from %v", req.Remote)
		}
		return nil
	})
	c, err := rdmacm.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteAddr() != addr {
		t.Errorf("remote %v, want %v", c.RemoteAddr(), addr)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// SET_OPTION and NOTIFY reach the kernel with the right sizes: every option
// librdmacm sets is accepted, and NOTIFY without a device is EINVAL.
func TestLabOptionsAndNotify(t *testing.T) {
	labtest.Require(t)
	id := newRCID(t)
	if err := id.Notify(uverbs.EventCommEst); !errors.Is(err, unix.EINVAL) { // on an id without a device
		t.Errorf("notify: %v, want EINVAL", err)
	}
	for name, set := range map[string]func() error{
		"reuseaddr":   func() error { return id.SetReuseAddr(true) },
		"afonly":      func() error { return id.SetAFOnly(true) },
		"tos":         func() error { return id.SetTOS(32) },
		"ack timeout": func() error { return id.SetAckTimeout(14) },
	} {
		if err := set(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := id.SetOption(0, 1, []byte{1}); !errors.Is(err, unix.EINVAL) { // REUSEADDR with optlen 1
		t.Errorf("reuseaddr with 1 byte: %v, want EINVAL", err)
	}
	if err := id.SetOption(0, 99, []byte{1, 0, 0, 0}); !errors.Is(err, unix.ENOSYS) {
		t.Errorf("unknown option: %v, want ENOSYS", err)
	}
	// Bound to the device but with no IB CM id yet (no connection): still EINVAL.
	if err := id.Bind(labAddr(20109)); err != nil {
		t.Fatal(err)
	}
	if err := id.Notify(uverbs.EventCommEst); !errors.Is(err, unix.EINVAL) {
		t.Errorf("notify on a bound id: %v, want EINVAL", err)
	}
}

// newRCID is a TCP port space RC id on a channel of its own, closed when the test ends.
func newRCID(t *testing.T) *rdmacm.ID {
	t.Helper()
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	id, err := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
