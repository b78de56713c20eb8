package rdmacm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// rdma_create_ep / rdma_destroy_ep: endpoints from GetAddrInfo results, on channels of their own. The
// passive one is bound and listens when told; the active one comes back resolved (no events left to read)
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
	if _, err := rdmacm.CreateEP(ctx, pai[0], &rdmacm.QPInitAttr{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("passive endpoint with QP attributes: %v, want EINVAL", err)
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
