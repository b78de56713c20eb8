package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// listenRaw is a listening TCP id on labAddr(port), on a channel of its own closed when the test ends.
func listenRaw(t *testing.T, port uint16) *rdmacm.Channel {
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
	if err := id.Bind(labAddr(port)); err != nil {
		t.Fatal(err)
	}
	if err := id.Listen(1); err != nil {
		t.Fatal(err)
	}
	return ch
}

// nextEvent is the channel's next event, which must be of type want.
func nextEvent(t *testing.T, ctx context.Context, ch *rdmacm.Channel, want rdmacm.EventType) *rdmacm.Event {
	t.Helper()
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("waiting for %v: %v", want, err)
	}
	if ev.Type != want {
		t.Fatalf("event %v (status %d), want %v", ev.Type, ev.Status, want)
	}
	return ev
}

// manualActive is an active RC id whose QP the application made and moves itself, as rping -q does: GetEvent
// hands its CONNECT_RESPONSE over untouched, and the RTU leaves only when the test calls Establish.
type manualActive struct {
	ch *rdmacm.Channel
	id *rdmacm.ID
	pd *uverbs.PD
	cq *uverbs.CQ
	qp *uverbs.QP
}

// dialManual resolves labAddr(port), makes a CQ and an RC QP on the id's PD, moves the QP to INIT and
// sends the REQ.
func dialManual(t *testing.T, ctx context.Context, port uint16) *manualActive {
	t.Helper()
	a := &manualActive{}
	var err error
	if a.ch, err = rdmacm.NewChannel(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.ch.Close() })
	if a.id, err = a.ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC); err != nil {
		t.Fatal(err)
	}
	if err := a.id.ResolveAddr(labAddr(0), labAddr(port), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ctx, a.ch, rdmacm.EventAddrResolved)
	if err := a.id.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ctx, a.ch, rdmacm.EventRouteResolved)
	dctx, pd, err := a.id.Device()
	if err != nil {
		t.Fatal(err)
	}
	a.pd = pd
	if a.cq, err = dctx.CreateCQ(uverbs.CQAttr{CQE: 16}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.cq.Close() })
	if a.qp, err = pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: a.cq, RecvCQ: a.cq,
		Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.qp.Close() })
	a.move(t, uverbs.QPStateInit)
	if err := a.id.Connect(&rdmacm.ConnParam{QPNum: a.qp.QPN(), ResponderResources: 1, InitiatorDepth: 1,
		RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	return a
}

// move takes the QP through states with the attributes rdma_init_qp_attr gives.
func (a *manualActive) move(t *testing.T, states ...uverbs.QPState) {
	t.Helper()
	for _, s := range states {
		attr, mask, err := a.id.InitQPAttr(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.qp.Modify(*attr, mask); err != nil {
			t.Fatalf("modify to %v: %v", s, err)
		}
	}
}

// send posts one signaled SEND of msg and waits for its completion.
func (a *manualActive) send(t *testing.T, msg string) {
	t.Helper()
	buf := []byte(msg)
	mr, err := a.pd.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	if _, err := a.qp.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{mr.SGE(0, len(buf))}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, a.cq)
}

// disconnect flushes the application's QP and sends the DREQ (rdma_disconnect on an id without a QP of
// its own moves nothing).
func (a *manualActive) disconnect(t *testing.T) {
	t.Helper()
	if err := a.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	if err := a.id.Disconnect(); err != nil {
		t.Fatal(err)
	}
}

// rdma_notify on a connecting id: the passive side has accepted (its IB CM id sent the REP), the active
// side holds its RTU back but sends data from its RTS QP; the passive side receives it and tells the CM
// with IB_EVENT_COMM_EST, which establishes the connection: ESTABLISHED follows without any RTU. The
// kernel's ib_cm_notify answers EINVAL before the REP is sent or received and EISCONN once established,
// and the RTU sent afterwards is dropped (the passive side's next event is the DISCONNECTED of the DREQ).
func TestLabNotifyCommEst(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	sch := listenRaw(t, 20110)
	a := dialManual(t, ctx, 20110)
	srv := nextEvent(t, ctx, sch, rdmacm.EventConnectRequest).ID
	if err := srv.Notify(uverbs.EventCommEst); !errors.Is(err, unix.EINVAL) { // IB CM: REQ received
		t.Errorf("notify before accept: %v, want EINVAL", err)
	}
	if _, err := srv.CreateQP(rdmacm.QPInitAttr{}); err != nil {
		t.Fatal(err)
	}
	_, pd, err := srv.Device()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	mr, err := pd.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })
	if _, err := srv.QP().PostRecv([]uverbs.RecvWR{{WRID: 7, SGL: []uverbs.SGE{mr.SGE(0, len(buf))}}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Accept(nil); err != nil {
		t.Fatal(err)
	}
	resp := nextEvent(t, ctx, a.ch, rdmacm.EventConnectResponse)
	if resp.ID != a.id || resp.Conn.QPNum != srv.QP().QPN() {
		t.Errorf("CONNECT_RESPONSE for id %v, QPN %#x; want QPN %#x", resp.ID.Num(), resp.Conn.QPNum, srv.QP().QPN())
	}
	if err := a.id.Notify(uverbs.EventCommEst); !errors.Is(err, unix.EINVAL) { // IB CM: REP received
		t.Errorf("notify on the active side before the RTU: %v, want EINVAL", err)
	}
	a.move(t, uverbs.QPStateRTR, uverbs.QPStateRTS)
	a.send(t, "before the RTU")
	wc := waitWC(t, srv.RecvCQ())
	if wc.WRID != 7 || string(buf[:wc.ByteLen]) != "before the RTU" {
		t.Fatalf("passive side received WR %d %q", wc.WRID, buf[:wc.ByteLen])
	}
	if err := srv.Notify(uverbs.EventCommEst); err != nil {
		t.Fatalf("notify COMM_EST after the REP: %v", err)
	}
	est := nextEvent(t, ctx, sch, rdmacm.EventEstablished)
	if est.ID != srv || est.Status != 0 {
		t.Errorf("ESTABLISHED for id %d status %d, want id %d status 0", est.ID.Num(), est.Status, srv.Num())
	}
	if err := srv.Notify(uverbs.EventCommEst); !errors.Is(err, unix.EISCONN) {
		t.Errorf("second notify: %v, want EISCONN", err)
	}
	if err := a.id.Establish(); err != nil { // the late RTU
		t.Fatal(err)
	}
	if err := a.id.Notify(uverbs.EventCommEst); !errors.Is(err, unix.EISCONN) { // IB CM: RTU sent
		t.Errorf("notify on the active side after the RTU: %v, want EISCONN", err)
	}
	a.disconnect(t)
	nextEvent(t, ctx, sch, rdmacm.EventDisconnected) // not a second ESTABLISHED: the RTU was dropped
	if err := srv.Disconnect(); err != nil {         // the DREP
		t.Fatal(err)
	}
	nextEvent(t, ctx, a.ch, rdmacm.EventDisconnected)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkNoLeak registers a check, run after every other cleanup of the test, that the device's resource
// counts (contexts, PDs, CQs, QPs, SRQs, MRs, cm ids) are back where they are now.
func checkNoLeak(t *testing.T) {
	before := resCounts(t)
	t.Cleanup(func() {
		after := resCounts(t)
		checked := 0
		for k, v := range after {
			switch path.Base(k) {
			case "pd", "cq", "qp", "srq", "cm_id", "mr", "ctx":
				checked++
				if v > before[k] {
					t.Errorf("%s: %d after the test, %d before", k, v, before[k])
				}
			}
		}
		if checked == 0 {
			t.Errorf("no resource counts in %v", after)
		}
		if t.Failed() {
			dumpCMIDs(t)
		}
	})
}

// rdma_create_srq / rdma_destroy_srq: the passive id makes an SRQ on its device's PD, CreateQP gives it to
// the id's QP, the REP tells the peer so (CONNECT_RESPONSE's srq), the peer's SENDs land in receives posted
// to the SRQ, and Close destroys QP and SRQ; nothing is left on the device.
func TestLabIDSRQ(t *testing.T) {
	labtest.Require(t)
	checkNoLeak(t)
	ctx := testCtx(t)
	sch := listenRaw(t, 20111)
	a := dialManual(t, ctx, 20111)
	srv := nextEvent(t, ctx, sch, rdmacm.EventConnectRequest).ID
	if srv.SRQ() != nil {
		t.Fatal("new id has an SRQ")
	}
	if err := srv.DestroySRQ(); err != nil {
		t.Errorf("destroy SRQ without one: %v", err)
	}
	srq, err := srv.CreateSRQ(rdmacm.SRQInitAttr{Attr: uverbs.SRQAttr{MaxWR: 8, MaxSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if srv.SRQ() != srq {
		t.Error("SRQ() is not what CreateSRQ made")
	}
	if _, err := srv.CreateSRQ(rdmacm.SRQInitAttr{Attr: uverbs.SRQAttr{MaxWR: 8, MaxSGE: 1}}); !errors.Is(err, rdmacm.ErrState) {
		t.Errorf("second SRQ: %v, want ErrState", err)
	}
	_, pd, err := srv.Device()
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 3, 64
	buf := make([]byte, n*size)
	mr, err := pd.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })
	for i := range n {
		if _, err := srq.PostRecv([]uverbs.RecvWR{{WRID: uint64(100 + i), SGL: []uverbs.SGE{mr.SGE(i*size, size)}}}); err != nil {
			t.Fatal(err)
		}
	}
	qp, err := srv.CreateQP(rdmacm.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Accept(nil); err != nil {
		t.Fatal(err)
	}
	resp := nextEvent(t, ctx, a.ch, rdmacm.EventConnectResponse)
	if resp.Conn.SRQ != 1 || resp.Conn.QPNum != qp.QPN() {
		t.Errorf("CONNECT_RESPONSE srq %d QPN %#x, want srq 1 QPN %#x", resp.Conn.SRQ, resp.Conn.QPNum, qp.QPN())
	}
	a.move(t, uverbs.QPStateRTR, uverbs.QPStateRTS)
	if err := a.id.Establish(); err != nil {
		t.Fatal(err)
	}
	if est := nextEvent(t, ctx, sch, rdmacm.EventEstablished); est.ID != srv {
		t.Errorf("ESTABLISHED for id %d, want %d", est.ID.Num(), srv.Num())
	}
	for i := range n {
		a.send(t, fmt.Sprintf("message %d through the SRQ", i))
	}
	for i := range n {
		wc := waitWC(t, srv.RecvCQ())
		want := fmt.Sprintf("message %d through the SRQ", i)
		got := string(buf[i*size : i*size+int(wc.ByteLen)])
		if wc.WRID != uint64(100+i) || wc.QPNum != qp.QPN() || got != want {
			t.Errorf("receive %d: WR %d QP %#x %q, want WR %d QP %#x %q", i, wc.WRID, wc.QPNum, got, 100+i, qp.QPN(), want)
		}
	}
	if err := srv.DestroySRQ(); !errors.Is(err, unix.EBUSY) || srv.SRQ() != srq {
		t.Errorf("destroy SRQ under a QP: %v, want EBUSY and the SRQ kept", err)
	}
	if err := srv.Close(); err != nil { // the QP, then the SRQ
		t.Fatal(err)
	}
	if _, err := srq.PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{mr.SGE(0, size)}}}); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("post to the SRQ after Close: %v, want ErrClosed", err)
	}
	nextEvent(t, ctx, a.ch, rdmacm.EventDisconnected)
}

// rdma_get_devices / rdma_free_devices: the list holds the process's shared contexts, the ids on a device
// use the list's context and PD, and the contexts close when the last of lists, ids and channels lets go.
func TestLabDevices(t *testing.T) {
	labtest.Require(t)
	checkNoLeak(t)
	before := resCounts(t)
	l, err := rdmacm.Devices()
	if err != nil {
		t.Fatal(err)
	}
	var lab *uverbs.Context
	for _, c := range l.Contexts() {
		if c.Name() == labtest.Device() {
			lab = c
		}
	}
	if lab == nil {
		t.Fatalf("no context of %s among %d", labtest.Device(), len(l.Contexts()))
	}
	if l.PD(lab) == nil {
		t.Fatal("no PD for the lab device's context")
	}
	key := labtest.Device() + "/"
	opened := resCounts(t)
	if opened[key+"ctx"] != before[key+"ctx"]+1 || opened[key+"pd"] != before[key+"pd"]+1 {
		t.Errorf("ctx %d pd %d with the list, %d and %d before", opened[key+"ctx"], opened[key+"pd"],
			before[key+"ctx"], before[key+"pd"])
	}
	l2, err := rdmacm.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if got := l2.Contexts(); len(got) != len(l.Contexts()) || l2.PD(lab) != l.PD(lab) {
		t.Errorf("second list: %d contexts, not the first's %d and its PD", len(got), len(l.Contexts()))
	}
	id := newRCID(t)
	if err := id.Bind(labAddr(0)); err != nil {
		t.Fatal(err)
	}
	ictx, ipd, err := id.Device()
	if err != nil {
		t.Fatal(err)
	}
	if ictx != lab || ipd != l.PD(lab) {
		t.Error("the id's context and PD are not the list's")
	}
	if got := resCounts(t); got[key+"ctx"] != opened[key+"ctx"] {
		t.Errorf("ctx %d with the id, %d with the lists alone", got[key+"ctx"], opened[key+"ctx"])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if _, err := ictx.QueryDevice(); err != nil { // the id still holds it
		t.Errorf("context after the lists' Close: %v", err)
	}
	if err := id.Channel().Close(); err != nil {
		t.Fatal(err)
	}
	if got := resCounts(t); got[key+"ctx"] != before[key+"ctx"] || got[key+"pd"] != before[key+"pd"] {
		t.Errorf("ctx %d pd %d after the last user let go, %d and %d before", got[key+"ctx"], got[key+"pd"],
			before[key+"ctx"], before[key+"pd"])
	}
}

// dumpCMIDs logs the cm ids the kernel still has (what a leak check's failure is about).
func dumpCMIDs(t *testing.T) {
	c, err := netlinkrdma.Dial()
	if err != nil {
		t.Log(err)
		return
	}
	defer c.Close()
	ss, _ := c.ResourceSummaries()
	for _, s := range ss {
		ids, err := c.CMIDs(netlinkrdma.ResQuery{DevIndex: s.DevIndex})
		t.Logf("dev %d: %v", s.DevIndex, err)
		for _, id := range ids {
			t.Logf("  %+v", id)
		}
	}
}
