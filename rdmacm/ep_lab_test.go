package rdmacm_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// rdma_create_ep / rdma_destroy_ep: endpoints from GetAddrInfo results, on channels of their own. The
// passive one (no QP attributes: TestLabCreateEPPassive has them) is bound and listens when told, its
// requests read with GetEvent; the active one comes back resolved (no events left to read)
// with its QP in INIT, connects when told, and both see ESTABLISHED. Close closes each endpoint's channel;
// a failed CreateEP (a context already cancelled) leaves nothing behind either.
func TestLabCreateEP(t *testing.T) {
	labtest.Require(t)
	checkNoLeak(t)
	ctx := testCtx(t)
	pai, err := rdmacm.GetAddrInfo("10.233.0.1", "20112", &rdmacm.AddrInfoHints{Flags: rdmacm.AIPassive | rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	lep, err := rdmacm.CreateEP(ctx, pai[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lep.Close() })
	if lep.LocalAddr() != labAddr(20112) || lep.QP() != nil {
		t.Errorf("passive endpoint bound to %v, QP %v", lep.LocalAddr(), lep.QP())
	}
	if err := lep.Listen(1); err != nil {
		t.Fatal(err)
	}

	aai, err := rdmacm.GetAddrInfo("10.233.0.1", "20112", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := rdmacm.CreateEP(cancelled, aai[0], &rdmacm.QPInitAttr{}); !errors.Is(err, context.Canceled) {
		t.Errorf("create ep with a cancelled context: %v, want context.Canceled", err)
	}
	ep, err := rdmacm.CreateEP(ctx, aai[0], &rdmacm.QPInitAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	if ep.RemoteAddr() != labAddr(20112) || ep.LocalAddr().Addr() != labIP || ep.QP() == nil || ep.QP().State() != uverbs.QPStateInit {
		t.Fatalf("active endpoint %v -> %v, QP %v", ep.LocalAddr(), ep.RemoteAddr(), ep.QP())
	}
	if paths, err := ep.QueryPath(); err != nil || len(paths) == 0 {
		t.Errorf("route of the endpoint: %d paths, %v", len(paths), err)
	}
	if ep.Channel() == lep.Channel() {
		t.Error("the endpoints share a channel")
	}
	if err := ep.Connect(nil); err != nil {
		t.Fatal(err)
	}
	srv := nextEvent(t, ctx, lep.Channel(), rdmacm.EventConnectRequest).ID
	if _, err := srv.CreateQP(rdmacm.QPInitAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Accept(nil); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ctx, ep.Channel(), rdmacm.EventEstablished); ev.ID != ep || ep.QP().State() != uverbs.QPStateRTS {
		t.Errorf("ESTABLISHED for id %d, QP %v", ev.ID.Num(), ep.QP().State())
	}
	nextEvent(t, ctx, lep.Channel(), rdmacm.EventEstablished)
	if err := ep.Close(); err != nil { // DREQ; the endpoint's channel goes with it
		t.Fatal(err)
	}
	if _, err := ep.Channel().GetEvent(ctx); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("endpoint's channel after Close: %v, want ErrClosed", err)
	}
	nextEvent(t, ctx, lep.Channel(), rdmacm.EventDisconnected)
	if err := lep.Close(); err != nil { // and the request's id on its channel
		t.Fatal(err)
	}
	if err := srv.Close(); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("request's id after the passive endpoint's Close: %v, want ErrClosed", err)
	}

	// An endpoint that migrates leaves its own channel closed behind.
	mep, err := rdmacm.CreateEP(ctx, pai[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	own := mep.Channel()
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if err := mep.Migrate(ch); err != nil {
		t.Fatal(err)
	}
	if _, err := own.GetEvent(ctx); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("endpoint's own channel after Migrate: %v, want ErrClosed", err)
	}
	if err := mep.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC); err != nil { // the new channel stays open
		t.Errorf("channel migrated to, after the endpoint's Close: %v", err)
	}
}

// rdma_create_ep with QP attributes on a passive endpoint, and rdma_get_request: GetRequest returns the
// active endpoint's request as an endpoint of its own (its own channel, its QP made from the listener's
// attributes), which accepts; ESTABLISHED arrives on both endpoints' channels and a SEND crosses. The
// failures: ids that are not listening CreateEP endpoints (EINVAL), a cancelled context (the listener
// stays usable), another event on the listener's channel (an *EventError holding it), and a request whose
// QP cannot be made, which is rejected (REJECTED on the active side) and leaves nothing behind.
func TestLabCreateEPPassive(t *testing.T) {
	labtest.Require(t)
	checkNoLeak(t)
	ctx := testCtx(t)
	pai, err := rdmacm.GetAddrInfo("10.233.0.1", "20114", &rdmacm.AddrInfoHints{Flags: rdmacm.AIPassive | rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	attr := &rdmacm.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}}
	lep, err := rdmacm.CreateEP(ctx, pai[0], attr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lep.Close() })
	attr.Cap.MaxRecvWR = 1 // CreateEP kept a copy
	if lep.QP() != nil {
		t.Errorf("passive endpoint has QP %v", lep.QP())
	}
	if _, err := lep.GetRequest(ctx); !errors.Is(err, rdmacm.ErrState) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("GetRequest before Listen: %v, want ErrState and EINVAL", err)
	}
	if err := lep.Listen(2); err != nil {
		t.Fatal(err)
	}
	plain, err := rdmacm.NewChannel() // a listening id, but on a shared channel: not an endpoint
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	pid, err := plain.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	if err := pid.Bind(labAddr(20115)); err != nil {
		t.Fatal(err)
	}
	if err := pid.Listen(1); err != nil {
		t.Fatal(err)
	}
	if _, err := pid.GetRequest(ctx); !errors.Is(err, rdmacm.ErrState) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("GetRequest on a listening id of a shared channel: %v, want ErrState and EINVAL", err)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := lep.GetRequest(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("GetRequest with a cancelled context: %v, want context.Canceled", err)
	}
	waiting, stop := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() { _, err := lep.GetRequest(waiting); got <- err }()
	stop()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("GetRequest cancelled while waiting: %v, want context.Canceled", err)
	}

	aai, err := rdmacm.GetAddrInfo("10.233.0.1", "20114", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := rdmacm.CreateEP(ctx, aai[0], &rdmacm.QPInitAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	if _, err := ep.GetRequest(ctx); !errors.Is(err, unix.EINVAL) {
		t.Errorf("GetRequest on an active endpoint: %v, want EINVAL", err)
	}
	if err := ep.Connect(nil); err != nil {
		t.Fatal(err)
	}
	req, err := lep.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { req.Close() })
	if req.Channel() == lep.Channel() || req.Channel() == ep.Channel() {
		t.Error("the request's endpoint shares a channel")
	}
	if req.RemoteAddr() != ep.LocalAddr() || req.LocalAddr() != labAddr(20114) {
		t.Errorf("request %v -> %v, want %v -> %v", req.RemoteAddr(), req.LocalAddr(), ep.LocalAddr(), labAddr(20114))
	}
	qp := req.QP()
	if qp == nil || qp.State() != uverbs.QPStateInit || req.RecvCQ() == nil {
		t.Fatalf("request's QP %v", qp)
	}
	_, spd, err := req.Device()
	if err != nil {
		t.Fatal(err)
	}
	rbuf := make([]byte, 64)
	rmr, err := spd.RegMR(rbuf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rmr.Close() })
	recvs := make([]uverbs.RecvWR, 8) // the stored MaxRecvWR, not the caller's later 1
	for i := range recvs {
		recvs[i] = uverbs.RecvWR{WRID: uint64(10 + i), SGL: []uverbs.SGE{rmr.SGE(0, len(rbuf))}}
	}
	if _, err := qp.PostRecv(recvs); err != nil {
		t.Fatalf("posting the QP's 8 receives: %v", err)
	}
	if err := req.Accept(nil); err != nil {
		t.Fatal(err)
	}
	// The active side's GetEvent turns CONNECT_RESPONSE into ESTABLISHED by sending the RTU, which the
	// passive side's ESTABLISHED waits for.
	if ev := nextEvent(t, ctx, ep.Channel(), rdmacm.EventEstablished); ev.ID != ep {
		t.Errorf("ESTABLISHED for id %d", ev.ID.Num())
	}
	if ev := nextEvent(t, ctx, req.Channel(), rdmacm.EventEstablished); ev.ID != req || qp.State() != uverbs.QPStateRTS {
		t.Errorf("ESTABLISHED for id %d, QP %v", ev.ID.Num(), qp.State())
	}
	_, cpd, err := ep.Device()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("through rdma_get_request")
	smr, err := cpd.RegMR(msg, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { smr.Close() })
	if _, err := ep.QP().PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{smr.SGE(0, len(msg))}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, ep.SendCQ())
	if wc := waitWC(t, req.RecvCQ()); wc.WRID != 10 || string(rbuf[:wc.ByteLen]) != string(msg) {
		t.Errorf("received WR %d %q", wc.WRID, rbuf[:wc.ByteLen])
	}
	// The device context is the process's: the MRs go before the last id using it.
	if err := errors.Join(smr.Close(), rmr.Close()); err != nil {
		t.Fatal(err)
	}
	if err := ep.Close(); err != nil { // DREQ
		t.Fatal(err)
	}
	nextEvent(t, ctx, req.Channel(), rdmacm.EventDisconnected)
	own := req.Channel()
	if err := req.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := own.GetEvent(ctx); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("request's channel after Close: %v, want ErrClosed", err)
	}

	// Another id's event on the listener's channel fails GetRequest with the event.
	other, err := lep.Channel().CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.ResolveAddr(netip.AddrPort{}, labAddr(20114), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	var evErr *rdmacm.EventError
	if _, err := lep.GetRequest(ctx); !errors.As(err, &evErr) || evErr.Event.Type != rdmacm.EventAddrResolved ||
		evErr.Event.ID != other {
		t.Errorf("GetRequest with ADDR_RESOLVED of another id queued: %v", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}

	// A request whose QP cannot be made from the stored attributes (one CQ of two) is rejected and destroyed.
	dev, _, err := lep.Device()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(uverbs.CQAttr{CQE: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cq.Close() })
	bai, err := rdmacm.GetAddrInfo("10.233.0.1", "20115", &rdmacm.AddrInfoHints{Flags: rdmacm.AIPassive | rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := rdmacm.CreateEP(ctx, bai[0], &rdmacm.QPInitAttr{SendCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Close() })
	if err := bad.Listen(1); err != nil {
		t.Fatal(err)
	}
	cai, err := rdmacm.GetAddrInfo("10.233.0.1", "20115", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	ep2, err := rdmacm.CreateEP(ctx, cai[0], &rdmacm.QPInitAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep2.Close() })
	if err := ep2.Connect(nil); err != nil {
		t.Fatal(err)
	}
	if r, err := bad.GetRequest(ctx); !errors.Is(err, unix.EINVAL) || r != nil {
		t.Errorf("GetRequest whose QP cannot be made: %v, %v, want EINVAL", r, err)
	}
	nextEvent(t, ctx, ep2.Channel(), rdmacm.EventRejected)
	if err := ep2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bad.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
}

// rdma_create_qp_ex's send_ops_flags: an id's QP made with SendOps posts through the work-request builder
// (a SEND with immediate data over the connection); one made without refuses the builder (EINVAL), and
// operations rxe does not build for RC are refused at creation (ErrNotSupported), as libibverbs refuses them.
func TestLabCreateQPEx(t *testing.T) {
	labtest.Require(t)
	checkNoLeak(t)
	ctx := testCtx(t)
	sch := listenRaw(t, 20113)
	ai, err := rdmacm.GetAddrInfo("10.233.0.1", "20113", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := rdmacm.CreateEP(ctx, ai[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	if _, err := ep.CreateQP(rdmacm.QPInitAttr{SendOps: uverbs.SendOpTSO}); !errors.Is(err, rdmacm.ErrNotSupported) {
		t.Errorf("RC QP with TSO: %v, want ErrNotSupported", err)
	}
	if _, err := ep.CreateQP(rdmacm.QPInitAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := ep.QP().StartWR().Send(1, uverbs.SendSignaled).Complete(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("builder on a QP without SendOps: %v, want EINVAL", err)
	}
	if err := ep.DestroyQP(); err != nil {
		t.Fatal(err)
	}
	qp, err := ep.CreateQP(rdmacm.QPInitAttr{SendOps: uverbs.SendOpSend | uverbs.SendOpSendWithImm})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Connect(nil); err != nil {
		t.Fatal(err)
	}
	srv := nextEvent(t, ctx, sch, rdmacm.EventConnectRequest).ID
	if _, err := srv.CreateQP(rdmacm.QPInitAttr{}); err != nil {
		t.Fatal(err)
	}
	_, spd, err := srv.Device()
	if err != nil {
		t.Fatal(err)
	}
	rbuf := make([]byte, 64)
	rmr, err := spd.RegMR(rbuf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rmr.Close() })
	if _, err := srv.QP().PostRecv([]uverbs.RecvWR{{WRID: 9, SGL: []uverbs.SGE{rmr.SGE(0, len(rbuf))}}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Accept(nil); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ctx, ep.Channel(), rdmacm.EventEstablished)
	nextEvent(t, ctx, sch, rdmacm.EventEstablished)
	_, cpd, err := ep.Device()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("built, not posted")
	smr, err := cpd.RegMR(msg, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { smr.Close() })
	if err := qp.StartWR().SendImm(5, uverbs.SendSignaled, 0xC0FFEE).SetSGE(smr.LKey(), smr.Addr(), uint32(len(msg))).Complete(); err != nil {
		t.Fatal(err)
	}
	if wc := waitWC(t, ep.SendCQ()); wc.WRID != 5 || wc.Opcode != uverbs.WCSend {
		t.Errorf("send completion WR %d opcode %v", wc.WRID, wc.Opcode)
	}
	wc := waitWC(t, srv.RecvCQ())
	if wc.WRID != 9 || wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != 0xC0FFEE || string(rbuf[:wc.ByteLen]) != string(msg) {
		t.Errorf("received WR %d flags %v imm %#x %q", wc.WRID, wc.Flags, wc.Imm, rbuf[:wc.ByteLen])
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ctx, sch, rdmacm.EventDisconnected)
}
