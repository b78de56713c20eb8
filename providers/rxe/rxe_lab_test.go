package rxe_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	_ "github.com/goverbs/goverbs/providers/rxe"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// These tests run the provider against the kernel's rdma_rxe: in the lab VM (test/lab), e.g.
//
//	go run ./test/lab/cmd/labsuite ./providers/rxe
//
// or on a host with an rxe device (-device / $GOVERBS_DEVICE). They skip on other devices.

// labEnv is an open rxe device with a PD and one registered 1 MiB buffer.
type labEnv struct {
	ctx      *uverbs.Context
	pd       *uverbs.PD
	buf      []byte
	mr       *uverbs.MR
	gid      uverbs.GID
	gidIndex uint8
}

func newLab(t *testing.T) *labEnv {
	labtest.Require(t)
	e := &labEnv{}
	var err error
	if e.ctx, err = uverbs.Open(labtest.Device()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, e.ctx.Close()) })
	if id := e.ctx.DriverID(); id != abi.RDMA_DRIVER_RXE {
		t.Skipf("%s is not an rxe device (driver id %d)", labtest.Device(), id)
	}
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, e.pd.Close()) })
	b, err := uverbs.AllocBuffer(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, b.Close()) })
	e.buf = b.Bytes()
	e.mr, err = e.pd.RegMR(e.buf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead|
		uverbs.AccessRemoteAtomic|uverbs.AccessMWBind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, e.mr.Close()) })
	gids, err := e.ctx.QueryGIDTable()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range gids {
		if g.Port == 1 && g.Type == uverbs.GIDTypeRoCEv2 && bytes.HasPrefix(g.GID[:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}) {
			e.gid, e.gidIndex, found = g.GID, uint8(g.Index), true
			break
		}
	}
	if !found {
		t.Fatalf("no IPv4 RoCE v2 GID on %s port 1: %+v", labtest.Device(), gids)
	}
	return e
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

func (e *labEnv) cq(t *testing.T, cqe int, ch *uverbs.CompChannel) *uverbs.CQ {
	cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: cqe, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, cq.Close()) })
	return cq
}

func (e *labEnv) qp(t *testing.T, typ uverbs.QPType, send, recv *uverbs.CQ, srq *uverbs.SRQ, c uverbs.QPCap) *uverbs.QP {
	qp, err := e.pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: send, RecvCQ: recv, SRQ: srq, Cap: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, qp.Close()) })
	return qp
}

// connectRC connects qp to remote on this device (loopback) with Endpoint and Connect: rdma-core's defaults,
// with four outstanding RDMA READs/atomics each way and the shortest RNR timer.
func (e *labEnv) connectRC(t *testing.T, qp, remote *uverbs.QP) {
	t.Helper()
	eo := &uverbs.EndpointOptions{Port: 1, GIDIndex: int(e.gidIndex)}
	ep, err := remote.Endpoint(eo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qp.Endpoint(eo); err != nil {
		t.Fatal(err)
	}
	o := uverbs.DefaultConnectOptions()
	o.MTU, o.MaxRdAtomic, o.MaxDestRdAtomic, o.MinRNRTimer = uverbs.MTU1024, 4, 4, 1
	if err := qp.Connect(ep, &o); err != nil {
		t.Fatal(err)
	}
}

// poll waits for n completions on cq; the deadline only keeps a broken run from hanging.
func poll(t *testing.T, cq *uverbs.CQ, n int) []uverbs.WC {
	t.Helper()
	wc := make([]uverbs.WC, n)
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for got < n {
		k, err := cq.Poll(wc[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += k
		if got < n && time.Now().After(deadline) {
			t.Fatalf("%d of %d completions after 30s", got, n)
		}
	}
	for i, w := range wc {
		if w.Status != uverbs.WCSuccess {
			t.Fatalf("completion %d: status %d (wr_id %d, opcode %d, vendor_err %#x)", i, w.Status, w.WRID, w.Opcode, w.VendorErr)
		}
	}
	return wc
}

// rcPair is two connected RC QPs on rxe0, each with its own CQ.
type rcPair struct {
	a, b     *uverbs.QP
	cqA, cqB *uverbs.CQ
}

func (e *labEnv) rcPair(t *testing.T, c uverbs.QPCap, ch *uverbs.CompChannel) rcPair {
	var p rcPair
	p.cqA, p.cqB = e.cq(t, 64, nil), e.cq(t, 64, ch)
	p.a = e.qp(t, uverbs.QPTypeRC, p.cqA, p.cqA, nil, c)
	p.b = e.qp(t, uverbs.QPTypeRC, p.cqB, p.cqB, nil, c)
	e.connectRC(t, p.a, p.b)
	e.connectRC(t, p.b, p.a)
	return p
}

var labCap = uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}

// Every RC opcode against the kernel: data lands where it should and completions carry what rdma-core's would.
func TestLabRCOpcodes(t *testing.T) {
	e := newLab(t)
	p := e.rcPair(t, labCap, nil)
	buf := e.buf
	src, dst := 0, 4096 // A's area and B's area in the one MR
	copy(buf[src:], "send with immediate")

	// SEND_WITH_IMM A -> B.
	if _, err := p.b.PostRecv([]uverbs.RecvWR{{WRID: 100, SGL: []uverbs.SGE{e.mr.SGE(dst, 512)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 1, SGL: []uverbs.SGE{e.mr.SGE(src, 19)},
		Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled, Imm: 0xcafe0001}}); err != nil {
		t.Fatal(err)
	}
	ws, wr := poll(t, p.cqA, 1)[0], poll(t, p.cqB, 1)[0]
	if ws.WRID != 1 || ws.Opcode != uverbs.WCSend {
		t.Errorf("send completion %+v", ws)
	}
	if wr.WRID != 100 || wr.Opcode != uverbs.WCRecv || wr.ByteLen != 19 || wr.Flags&uverbs.WCWithImm == 0 ||
		wr.Imm != 0xcafe0001 || wr.QPNum != p.b.QPN() {
		t.Errorf("receive completion %+v", wr)
	}
	if got := string(buf[dst : dst+19]); got != "send with immediate" {
		t.Errorf("received %q", got)
	}

	// RDMA_WRITE_WITH_IMM consumes a receive and carries the immediate; RDMA_WRITE does not.
	copy(buf[src:], "written by RDMA")
	if _, err := p.b.PostRecv([]uverbs.RecvWR{{WRID: 101}}); err != nil {
		t.Fatal(err)
	}
	remote := e.mr.Addr() + uint64(dst+1024)
	if _, err := p.a.PostSend([]uverbs.SendWR{
		{WRID: 2, SGL: []uverbs.SGE{e.mr.SGE(src, 7)}, Opcode: uverbs.WRRDMAWrite, RemoteAddr: remote, RKey: e.mr.RKey()},
		{WRID: 3, SGL: []uverbs.SGE{e.mr.SGE(src+7, 8)}, Opcode: uverbs.WRRDMAWriteWithImm, Flags: uverbs.SendSignaled,
			RemoteAddr: remote + 7, RKey: e.mr.RKey(), Imm: 0x01020304},
	}); err != nil {
		t.Fatal(err)
	}
	ws, wr = poll(t, p.cqA, 1)[0], poll(t, p.cqB, 1)[0]
	if ws.WRID != 3 || ws.Opcode != uverbs.WCRDMAWrite {
		t.Errorf("RDMA write completion %+v (the unsignaled write must not complete)", ws)
	}
	if wr.WRID != 101 || wr.Opcode != uverbs.WCRecvRDMAWithImm || wr.Imm != 0x01020304 || wr.Flags&uverbs.WCWithImm == 0 {
		t.Errorf("write-with-imm receive completion %+v", wr)
	}
	if got := string(buf[dst+1024 : dst+1024+15]); got != "written by RDMA" {
		t.Errorf("RDMA write landed %q", got)
	}

	// RDMA_READ back from B into A.
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 4, SGL: []uverbs.SGE{e.mr.SGE(src+2048, 15)},
		Opcode: uverbs.WRRDMARead, Flags: uverbs.SendSignaled, RemoteAddr: remote, RKey: e.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := poll(t, p.cqA, 1)[0]; w.WRID != 4 || w.Opcode != uverbs.WCRDMARead || w.ByteLen != 15 {
		t.Errorf("RDMA read completion %+v", w)
	}
	if got := string(buf[src+2048 : src+2048+15]); got != "written by RDMA" {
		t.Errorf("RDMA read returned %q", got)
	}

	// Atomics on an 8-byte word of B's area.
	word := dst + 3072
	binary.NativeEndian.PutUint64(buf[word:], 40)
	atomic := e.mr.Addr() + uint64(word)
	if _, err := p.a.PostSend([]uverbs.SendWR{
		{WRID: 5, SGL: []uverbs.SGE{e.mr.SGE(src+3000, 8)}, Opcode: uverbs.WRAtomicFetchAndAdd, Flags: uverbs.SendSignaled,
			RemoteAddr: atomic, RKey: e.mr.RKey(), CompareAdd: 2},
		{WRID: 6, SGL: []uverbs.SGE{e.mr.SGE(src+3008, 8)}, Opcode: uverbs.WRAtomicCmpAndSwp, Flags: uverbs.SendSignaled,
			RemoteAddr: atomic, RKey: e.mr.RKey(), CompareAdd: 42, Swap: 7},
	}); err != nil {
		t.Fatal(err)
	}
	wcs := poll(t, p.cqA, 2)
	if wcs[0].Opcode != uverbs.WCFetchAdd || wcs[1].Opcode != uverbs.WCCompSwap {
		t.Errorf("atomic completions %+v", wcs)
	}
	if old := binary.NativeEndian.Uint64(buf[src+3000:]); old != 40 {
		t.Errorf("fetch-and-add returned %d, want 40", old)
	}
	if old := binary.NativeEndian.Uint64(buf[src+3008:]); old != 42 {
		t.Errorf("compare-and-swap returned %d, want 42", old)
	}
	if v := binary.NativeEndian.Uint64(buf[word:]); v != 7 {
		t.Errorf("word is %d after the atomics, want 7", v)
	}

	// An inline send from Go memory that is not registered (pinned: the SGE holds only its address, and a
	// slice that does not escape would live on this goroutine's stack, which moves when it grows).
	msg := []byte("inline, from an unregistered Go slice")
	var pin runtime.Pinner
	pin.Pin(&msg[0])
	defer pin.Unpin()
	if _, err := p.b.PostRecv([]uverbs.RecvWR{{WRID: 102, SGL: []uverbs.SGE{e.mr.SGE(dst, 512)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 7, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled | uverbs.SendInline,
		SGL: []uverbs.SGE{{Addr: uint64(uintptr(unsafe.Pointer(&msg[0]))), Length: uint32(len(msg))}}}}); err != nil {
		t.Fatal(err)
	}
	poll(t, p.cqA, 1)
	if w := poll(t, p.cqB, 1)[0]; w.ByteLen != uint32(len(msg)) || !bytes.Equal(buf[dst:dst+len(msg)], msg) {
		t.Errorf("inline send: completion %+v, data %q", w, buf[dst:dst+len(msg)])
	}
}

// Many more messages than the queues hold: the rings wrap around many times, and a full send queue reports
// ENOMEM until completions are reaped.
func TestLabWrapAround(t *testing.T) {
	e := newLab(t)
	c := uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	p := e.rcPair(t, c, nil)
	// A batch larger than the send ring: the doorbell is rung after the batch, so the ring fills up. Its
	// capacity is 2^k-1 slots, at least the max_send_wr the kernel reported (rxe rounds the ring up and reports
	// the requested size).
	capSQ := int(p.a.Cap().MaxSendWR)
	batch := make([]uverbs.SendWR, 64)
	for i := range batch {
		batch[i] = uverbs.SendWR{WRID: uint64(i), Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{e.mr.SGE(0, 8)}, RemoteAddr: e.mr.Addr() + 16384, RKey: e.mr.RKey()}
	}
	n, err := p.a.PostSend(batch)
	if n < capSQ || n >= len(batch) || (n+1)&n != 0 || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("PostSend of %d into a %d-entry queue = %d, %v; want a full 2^k-1 ring and ENOMEM", len(batch), capSQ, n, err)
	}
	poll(t, p.cqA, n)

	const total = 300
	// One receive buffer per receive the window allows outstanding, so a buffer is posted again only after its
	// message was checked. (rxe rounds the ring to 2^k-1 slots and reports that: 7 for 4 asked. With four
	// buffers, message 4 overwrote message 0 whenever the responder ran ahead of the poll loop, as 6.5+'s
	// workqueue tasks do.)
	window := int(p.b.Cap().MaxRecvWR)
	sent, recvd, posted := 0, 0, 0
	wc := make([]uverbs.WC, 8)
	deadline := time.Now().Add(60 * time.Second)
	for recvd < total {
		for posted < total && posted-recvd < window {
			if _, err := p.b.PostRecv([]uverbs.RecvWR{{WRID: uint64(posted), SGL: []uverbs.SGE{e.mr.SGE(8192+posted%window*64, 64)}}}); err != nil {
				t.Fatal(err)
			}
			posted++
		}
		for sent < posted {
			binary.NativeEndian.PutUint64(e.buf[sent%8*8:], uint64(sent))
			_, err := p.a.PostSend([]uverbs.SendWR{{WRID: uint64(sent), Opcode: uverbs.WRSend,
				Flags: uverbs.SendSignaled | uverbs.SendInline, SGL: []uverbs.SGE{e.mr.SGE(sent%8*8, 8)}}})
			if errors.Is(err, unix.ENOMEM) {
				break // reap completions first
			}
			if err != nil {
				t.Fatal(err)
			}
			sent++
		}
		mustPoll(t, p.cqA, wc)
		n := mustPoll(t, p.cqB, wc)
		for _, w := range wc[:n] {
			if w.Status != uverbs.WCSuccess || w.WRID != uint64(recvd) {
				t.Fatalf("receive %d: %+v", recvd, w)
			}
			if v := binary.NativeEndian.Uint64(e.buf[8192+recvd%window*64:]); v != uint64(recvd) {
				t.Fatalf("message %d carried %d", recvd, v)
			}
			recvd++
		}
		if time.Now().After(deadline) {
			t.Fatalf("sent %d received %d of %d after 60s", sent, recvd, total)
		}
	}
}

// Completion events: arm, send, get the event on the channel; solicited-only arming is accepted. Both ways
// of waiting: Go's poller and the kernel's (CompChannelOptions.Wait), each with a context.
func TestLabArmAndEvent(t *testing.T) {
	for _, mode := range waitModes {
		t.Run(fmt.Sprintf("wait=%v", mode), func(t *testing.T) { armAndEvent(t, mode) })
	}
}

func armAndEvent(t *testing.T, mode uverbs.WaitMode) {
	e := newLab(t)
	ch, err := e.ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, ch.Close()) })
	p := e.rcPair(t, labCap, ch)
	if err := p.cqB.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if err := p.cqB.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	if _, err := p.b.PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{e.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled | uverbs.SendSolicited,
		SGL: []uverbs.SGE{e.mr.SGE(64, 64)}}}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		cq  *uverbs.CQ
		err error
	}
	got := make(chan result, 1)
	go func() {
		cq, err := ch.GetEvent(ctx)
		got <- result{cq, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no completion event in 30 s")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.cq != p.cqB {
		t.Fatalf("event for CQ %#x, want %#x", r.cq.Handle(), p.cqB.Handle())
	}
	r.cq.AckEvents(1)
	poll(t, p.cqB, 1)
	poll(t, p.cqA, 1)
}

// UD through an address handle: the AH number from CREATE_AH goes into the WQE; the receive starts with the
// 40-byte GRH.
func TestLabUD(t *testing.T) {
	e := newLab(t)
	cq := e.cq(t, 16, nil)
	c := uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}
	a := e.qp(t, uverbs.QPTypeUD, cq, cq, nil, c)
	b := e.qp(t, uverbs.QPTypeUD, cq, cq, nil, c)
	const qkey = 0x11111111
	for _, qp := range []*uverbs.QP{a, b} {
		for _, s := range []struct {
			attr uverbs.QPAttr
			mask uverbs.QPAttrMask
		}{
			{uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: 1, QKey: qkey},
				uverbs.QPAttrState | uverbs.QPAttrPKeyIndex | uverbs.QPAttrPort | uverbs.QPAttrQKey},
			{uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState},
			{uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState | uverbs.QPAttrSQPSN},
		} {
			if err := qp.Modify(s.attr, s.mask); err != nil {
				t.Fatal(err)
			}
		}
	}
	ah, err := e.pd.CreateAH(uverbs.AHAttr{IsGlobal: true, PortNum: 1,
		GRH: uverbs.GlobalRoute{DGID: e.gid, SGIDIndex: e.gidIndex, HopLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, ah.Close()) })
	if ah.Data().Num == 0 {
		t.Fatal("AH has no kernel AH number")
	}
	copy(e.buf[0:], "datagram")
	if _, err := b.PostRecv([]uverbs.RecvWR{{WRID: 9, SGL: []uverbs.SGE{e.mr.SGE(4096, 40+64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend([]uverbs.SendWR{{WRID: 8, Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{e.mr.SGE(0, 8)}, AH: ah.Data(), RemoteQPN: b.QPN(), RemoteQKey: qkey, Imm: 77}}); err != nil {
		t.Fatal(err)
	}
	wcs := poll(t, cq, 2)
	var recv uverbs.WC
	for _, w := range wcs {
		if w.WRID == 9 {
			recv = w
		}
	}
	if recv.ByteLen != 40+8 || recv.SrcQP != a.QPN() || recv.Imm != 77 || recv.Flags&uverbs.WCWithGRH == 0 {
		t.Errorf("UD receive %+v (want byte_len 48, src_qp %#x, imm 77, GRH flag)", recv, a.QPN())
	}
	if got := string(e.buf[4096+40 : 4096+48]); got != "datagram" {
		t.Errorf("UD payload %q", got)
	}
}

// An SRQ feeds an RC QP; resizing it (MODIFY_SRQ with max_wr) remaps the ring and receiving goes on.
func TestLabSRQResize(t *testing.T) {
	e := newLab(t)
	cqA, cqB := e.cq(t, 64, nil), e.cq(t, 64, nil)
	srq, err := e.pd.CreateSRQ(uverbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, srq.Close()) })
	a := e.qp(t, uverbs.QPTypeRC, cqA, cqA, nil, labCap)
	b := e.qp(t, uverbs.QPTypeRC, cqB, cqB, srq, uverbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1})
	e.connectRC(t, a, b)
	e.connectRC(t, b, a)
	if _, err := b.PostRecv([]uverbs.RecvWR{{}}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv on a QP with an SRQ: %v, want EINVAL", err)
	}
	exchange := func(id uint64) {
		t.Helper()
		if _, err := srq.PostRecv([]uverbs.RecvWR{{WRID: id, SGL: []uverbs.SGE{e.mr.SGE(4096, 64)}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.PostSend([]uverbs.SendWR{{WRID: id, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{e.mr.SGE(0, 16)}}}); err != nil {
			t.Fatal(err)
		}
		poll(t, cqA, 1)
		if w := poll(t, cqB, 1)[0]; w.WRID != id {
			t.Fatalf("SRQ receive %+v, want wr_id %d", w, id)
		}
	}
	exchange(1)
	if err := srq.Modify(uverbs.SRQAttr{MaxWR: 64}, uverbs.SRQAttrMaxWR); err != nil {
		t.Fatal(err)
	}
	if q, err := srq.Query(); err != nil || q.MaxWR < 64 {
		t.Fatalf("SRQ after resize: %+v, %v", q, err)
	}
	// Fill well past the old size, then receive through the new ring.
	wrs := make([]uverbs.RecvWR, 40)
	for i := range wrs {
		wrs[i] = uverbs.RecvWR{WRID: uint64(1000 + i), SGL: []uverbs.SGE{e.mr.SGE(4096, 64)}}
	}
	if n, err := srq.PostRecv(wrs); n != len(wrs) || err != nil {
		t.Fatalf("PostRecv after resize = %d, %v", n, err)
	}
	if _, err := a.PostSend([]uverbs.SendWR{{WRID: 5, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{e.mr.SGE(0, 16)}}}); err != nil {
		t.Fatal(err)
	}
	poll(t, cqA, 1)
	if w := poll(t, cqB, 1)[0]; w.WRID != 1000 {
		t.Fatalf("first receive after resize %+v, want wr_id 1000", w)
	}
}

// Resizing a CQ with completions pending keeps them (the kernel copies them into the new ring): a completion
// event proves at least one is in the ring when the resize runs.
func TestLabCQResize(t *testing.T) {
	e := newLab(t)
	ch, err := e.ctx.CreateCompChannel(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, ch.Close()) })
	cq := e.cq(t, 8, ch)
	peer := e.cq(t, 8, nil)
	a := e.qp(t, uverbs.QPTypeRC, cq, cq, nil, labCap)
	b := e.qp(t, uverbs.QPTypeRC, peer, peer, nil, labCap)
	e.connectRC(t, a, b)
	e.connectRC(t, b, a)
	if err := cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := a.PostSend([]uverbs.SendWR{{WRID: uint64(i), Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{e.mr.SGE(0, 8)}, RemoteAddr: e.mr.Addr() + 8192, RKey: e.mr.RKey()}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got.AckEvents(1)
	if err := cq.Resize(256); err != nil {
		t.Fatal(err)
	}
	if cq.CQE() < 256 {
		t.Fatalf("CQE %d after resize to 256", cq.CQE())
	}
	for i, w := range poll(t, cq, 3) {
		if w.WRID != uint64(i) || w.Opcode != uverbs.WCRDMAWrite {
			t.Errorf("completion %d after resize: %+v", i, w)
		}
	}
}

// Before RTS a send is refused without touching the ring; a receive is refused in RESET.
func TestLabStateGates(t *testing.T) {
	e := newLab(t)
	cq := e.cq(t, 8, nil)
	qp := e.qp(t, uverbs.QPTypeRC, cq, cq, nil, labCap)
	if _, err := qp.PostRecv([]uverbs.RecvWR{{}}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv in RESET: %v, want EINVAL", err)
	}
	if _, err := qp.PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend}}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostSend in RESET: %v, want EINVAL", err)
	}
	attr := uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: 1}
	if err := qp.Modify(attr, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostRecv([]uverbs.RecvWR{{}}); err != nil {
		t.Fatalf("PostRecv in INIT: %v", err)
	}
	if _, err := qp.PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend}}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostSend in INIT: %v, want EINVAL", err)
	}
	// In ERR, sends are accepted and flushed with an error completion.
	attr = uverbs.QPAttr{State: uverbs.QPStateErr}
	if err := qp.Modify(attr, uverbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostSend([]uverbs.SendWR{{WRID: 42, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled}}); err != nil {
		t.Fatalf("PostSend in ERR: %v", err)
	}
	wc := make([]uverbs.WC, 4)
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := mustPoll(t, cq, wc)
		found := false
		for _, w := range wc[:n] {
			if w.WRID == 42 {
				if w.Status != uverbs.WCWRFlushErr {
					t.Errorf("flushed send status %d, want WR_FLUSH_ERR", w.Status)
				}
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no flush completion for a send posted in ERR")
		}
	}
	// Back to RESET: receives are refused again; the kernel keeps the ring indices across the reset (it only
	// clears the slots), so after reconnecting (to itself) the rings go on from where they were.
	attr = uverbs.QPAttr{State: uverbs.QPStateReset}
	if err := qp.Modify(attr, uverbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostRecv([]uverbs.RecvWR{{}}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv after RESET: %v, want EINVAL", err)
	}
	e.connectRC(t, qp, qp)
	for i := 0; i < 3; i++ {
		copy(e.buf[100:], []byte{byte('a' + i)})
		if _, err := qp.PostRecv([]uverbs.RecvWR{{WRID: uint64(200 + i), SGL: []uverbs.SGE{e.mr.SGE(200, 1)}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := qp.PostSend([]uverbs.SendWR{{WRID: uint64(300 + i), Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{e.mr.SGE(100, 1)}}}); err != nil {
			t.Fatal(err)
		}
		// Wait for both completions; flushes of the requests posted before the RESET may still trail in.
		var sent, recvd bool
		deadline := time.Now().Add(30 * time.Second)
		for !sent || !recvd {
			n := mustPoll(t, cq, wc)
			for _, w := range wc[:n] {
				switch {
				case w.WRID < 200 && w.Status == uverbs.WCWRFlushErr:
				case w.WRID == uint64(200+i) && w.Status == uverbs.WCSuccess && w.Opcode == uverbs.WCRecv:
					recvd = true
				case w.WRID == uint64(300+i) && w.Status == uverbs.WCSuccess && w.Opcode == uverbs.WCSend:
					sent = true
				default:
					t.Fatalf("round %d after RESET: unexpected completion %+v", i, w)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d after RESET: send completed %v, receive completed %v after 30s", i, sent, recvd)
			}
		}
		if e.buf[200] != byte('a'+i) {
			t.Fatalf("round %d after RESET: received %q", i, e.buf[200])
		}
	}
}

// The data path against the real kernel allocates nothing: post (with the doorbell write), poll, arm.
func TestLabAllocations(t *testing.T) {
	e := newLab(t)
	p := e.rcPair(t, labCap, nil)
	sends := []uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{e.mr.SGE(0, 64)}, RemoteAddr: e.mr.Addr() + 65536, RKey: e.mr.RKey()}}
	wc := make([]uverbs.WC, 4)
	round := func() {
		if _, err := p.a.PostSend(sends); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 1; {
			got += mustPoll(t, p.cqA, wc)
		}
	}
	if a := testing.AllocsPerRun(100, round); a != 0 {
		t.Errorf("post + poll: %v allocations per round", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if err := p.cqA.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("arm: %v allocations per call", a)
	}
	recvs := []uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{e.mr.SGE(0, 64)}}}
	if a := testing.AllocsPerRun(10, func() {
		if _, err := p.b.PostRecv(recvs); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("post recv: %v allocations per call", a)
	}
}

// Memory windows through the send queue: BIND_MW (type 2, bound on the target QP), an RDMA write through the
// window, LOCAL_INV, a second bind, and SEND_WITH_INV from the peer, whose receive completion reports the
// invalidated rkey in host order, flagged WITH_INV (the kernel's IB_WC_WITH_INVALIDATE bit, translated).
func TestLabMemoryWindow(t *testing.T) {
	e := newLab(t)
	p := e.rcPair(t, labCap, nil)
	mw, err := e.pd.AllocMW(uverbs.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, mw.Close()) })
	window := 64 << 10
	bind := func(key uint32) uint32 {
		t.Helper()
		newRKey := mw.RKey()&^0xff | key
		if _, err := p.b.PostSend([]uverbs.SendWR{{WRID: 50, Opcode: uverbs.WRBindMW, Flags: uverbs.SendSignaled,
			Bind: uverbs.MWBind{MWRKey: mw.RKey(), NewRKey: newRKey, MRLKey: e.mr.LKey(),
				Addr: e.mr.Addr() + uint64(window), Length: 4096, Access: uint32(uverbs.AccessRemoteWrite)}}}); err != nil {
			t.Fatal(err)
		}
		if w := poll(t, p.cqB, 1)[0]; w.WRID != 50 || w.Opcode != uverbs.WCBindMW {
			t.Fatalf("bind completion %+v", w)
		}
		mw.SetRKey(newRKey)
		return newRKey
	}
	rkey := bind(0x21)
	copy(e.buf, "through the window")
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 51, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{e.mr.SGE(0, 18)}, RemoteAddr: e.mr.Addr() + uint64(window) + 100, RKey: rkey}}); err != nil {
		t.Fatal(err)
	}
	poll(t, p.cqA, 1)
	if got := string(e.buf[window+100 : window+118]); got != "through the window" {
		t.Fatalf("write through the MW landed %q", got)
	}

	if _, err := p.b.PostSend([]uverbs.SendWR{{WRID: 52, Opcode: uverbs.WRLocalInv, Flags: uverbs.SendSignaled, Imm: rkey}}); err != nil {
		t.Fatal(err)
	}
	if w := poll(t, p.cqB, 1)[0]; w.WRID != 52 || w.Opcode != uverbs.WCLocalInv {
		t.Fatalf("local invalidate completion %+v", w)
	}

	rkey = bind(0x22)
	if _, err := p.b.PostRecv([]uverbs.RecvWR{{WRID: 53, SGL: []uverbs.SGE{e.mr.SGE(8192, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 54, Opcode: uverbs.WRSendWithInv, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{e.mr.SGE(0, 8)}, Imm: rkey}}); err != nil {
		t.Fatal(err)
	}
	poll(t, p.cqA, 1)
	if w := poll(t, p.cqB, 1)[0]; w.WRID != 53 || w.Flags&uverbs.WCWithInv == 0 || w.Imm != rkey {
		t.Fatalf("send-with-invalidate receive %+v, want WITH_INV and rkey %#x", w, rkey)
	}
}

// Many goroutines post RDMA WRITEs: to one QP, and to several QPs sharing one send CQ. Every request completes
// exactly once, on the QP that posted it; each poster holds a credit per request it has not seen complete, never
// more outstanding than the CQ holds: rxe frees send-queue slots as requests complete, so a send queue that never
// reports ENOMEM does not keep an unpolled CQ from overflowing (an overrun CQ stops the QP's completer). Run
// under the race detector: go run ./test/lab/cmd/labsuite -race -run ConcurrentPosters ./providers/rxe
func TestLabConcurrentPosters(t *testing.T) {
	e := newLab(t)
	qcap := uverbs.QPCap{MaxSendWR: 32, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	t.Run("OneQP", func(t *testing.T) {
		p := e.rcPair(t, qcap, nil)
		concurrentPosters(t, e, p.cqA, []*uverbs.QP{p.a}, 4, 200)
	})
	t.Run("QPsOnOneCQ", func(t *testing.T) {
		const nqp = 4
		cq, peerCQ := e.cq(t, 64, nil), e.cq(t, 64, nil)
		var qps []*uverbs.QP
		for range nqp {
			a := e.qp(t, uverbs.QPTypeRC, cq, cq, nil, qcap)
			b := e.qp(t, uverbs.QPTypeRC, peerCQ, peerCQ, nil, qcap)
			e.connectRC(t, a, b)
			e.connectRC(t, b, a)
			qps = append(qps, a)
		}
		concurrentPosters(t, e, cq, qps, 2*nqp, 100)
	})
}

// concurrentPosters runs posters goroutines, poster g posting each RDMA WRITEs to qps[g%len(qps)], and polls
// cq (the QPs' send CQ) until every request has completed once, on its own QP.
func concurrentPosters(t *testing.T, e *labEnv, cq *uverbs.CQ, qps []*uverbs.QP, posters, each int) {
	credits := make(chan struct{}, cq.CQE())
	var wg sync.WaitGroup
	for g := 0; g < posters; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			qp := qps[g%len(qps)]
			for i := 0; i < each; {
				credits <- struct{}{}
				_, err := qp.PostSend([]uverbs.SendWR{{WRID: uint64(g*each + i), Opcode: uverbs.WRRDMAWrite,
					Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{e.mr.SGE(g*64, 64)},
					RemoteAddr: e.mr.Addr() + uint64(32768+g*64), RKey: e.mr.RKey()}})
				switch {
				case err == nil:
					i++
				case errors.Is(err, unix.ENOMEM):
					<-credits
					runtime.Gosched()
					continue
				default:
					t.Errorf("poster %d: %v", g, err)
					return
				}
				if i%50 == 0 {
					if err := cq.ReqNotify(false); err != nil {
						t.Errorf("arm: %v", err)
						return
					}
				}
			}
		}(g)
	}
	seen := make([]bool, posters*each)
	wc := make([]uverbs.WC, 16)
	deadline := time.Now().Add(60 * time.Second)
	for got := 0; got < len(seen); {
		n := mustPoll(t, cq, wc)
		for _, w := range wc[:n] {
			if w.Status != uverbs.WCSuccess || w.WRID >= uint64(len(seen)) || seen[w.WRID] {
				t.Fatalf("completion %+v: failed, out of range or repeated", w)
			}
			if want := qps[(int(w.WRID)/each)%len(qps)].QPN(); w.QPNum != want {
				t.Fatalf("completion of wr_id %d on QP %#x, posted on %#x", w.WRID, w.QPNum, want)
			}
			seen[w.WRID] = true
			got++
			<-credits
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d completions after 60s", got, len(seen))
		}
	}
	wg.Wait()
}

// mustPoll polls cq once into wc; a poll error fails the test.
func mustPoll(t testing.TB, cq *uverbs.CQ, wc []uverbs.WC) int {
	n, err := cq.Poll(wc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
