package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"bytes"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/mmio"
)

// cqeSpec is a CQE as a device would write it.
type cqeSpec struct {
	opcode     uint8 // CQE opcode
	wqeOpcode  uint8
	qpn, uidx  uint32
	wqeCounter uint16
	byteCnt    uint32
	syndrome   uint8
}

// putCQE writes c into slot n%count of buf with the owner bit of pass n/count (what the device does).
func putCQE(buf []byte, count int, n uint32, c cqeSpec) {
	off := int(n%uint32(count)) * CQESize
	e := buf[off : off+CQESize]
	clear(e)
	be.PutUint32(e[cqeOffSRQNUIdx:], c.uidx)
	be.PutUint32(e[cqeOffByteCnt:], c.byteCnt)
	be.PutUint32(e[cqeOffSopDropQPN:], uint32(c.wqeOpcode)<<24|c.qpn)
	be.PutUint16(e[cqeOffWQECounter:], c.wqeCounter)
	e[cqeOffSyndrome] = c.syndrome
	own := byte(0)
	if n&uint32(count) != 0 {
		own = 1
	}
	e[cqeOffOpOwn] = c.opcode<<4 | own
}

func TestCQStampedIsEmpty(t *testing.T) {
	e := newCQEnv(t)
	for i := 0; i < 8; i++ {
		if e.cqBuf[i*64+63] != 0xf0 {
			t.Fatalf("CQE %d op_own = %#x, want 0xf0", i, e.cqBuf[i*64+63])
		}
	}
	var wcs [4]WC
	if n, st := e.cq.Poll(wcs[:]); n != 0 || st != provider.OK {
		t.Fatalf("Poll on a fresh CQ = %d, %v", n, st)
	}
}

// TestCQOwnershipAcrossWraps runs 3.5 passes over an 8-entry CQ: a CQE written for pass k is seen only when the
// consumer is in pass k, and a stale CQE from the previous pass is not consumed.
func TestCQOwnershipAcrossWraps(t *testing.T) {
	e := newCQEnv(t)
	var wcs [3]WC
	var n uint32
	for round := 0; round < 10; round++ {
		for k := 0; k < 3; k++ {
			if _, st := e.sq.sq.PostSend([]SendWR{sendWR(uint64(n)+uint64(k), gS1)}); st != provider.OK {
				t.Fatal(st)
			}
		}
		// Before the device writes, the slots hold CQEs of the previous pass: not software owned.
		if got, _ := e.cq.Poll(wcs[:]); got != 0 {
			t.Fatalf("round %d: polled %d stale CQEs", round, got)
		}
		for k := uint32(0); k < 3; k++ {
			putCQE(e.cqBuf, 8, n+k, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx,
				wqeCounter: uint16(n + k)})
		}
		got, st := e.cq.Poll(wcs[:])
		if got != 3 || st != provider.OK {
			t.Fatalf("round %d: Poll = %d, %v", round, got, st)
		}
		for k := uint32(0); k < 3; k++ {
			if wcs[k].WRID != uint64(n+k) {
				t.Fatalf("round %d: WC %d WRID = %d, want %d", round, k, wcs[k].WRID, n+k)
			}
		}
		n += 3
		if ci := be.Uint32(e.cqDBR[0:]); ci != n {
			t.Fatalf("consumer index record = %d, want %d", ci, n)
		}
	}
}

func TestCQUnknownQP(t *testing.T) {
	e := newCQEnv(t)
	putCQE(e.cqBuf, 8, 0, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: 0x99, uidx: 99})
	var wcs [2]WC
	n, st := e.cq.Poll(wcs[:])
	if n != 0 || st != provider.UnknownCQE {
		t.Fatalf("Poll = %d, %v; want 0, UnknownCQE", n, st)
	}
	if e.cq.ConsumerIndex() != 1 {
		t.Errorf("the bad CQE was not consumed")
	}
}

// secondQP attaches to e's CQ a second RC QP (QPN and user index one past the first's) with a send queue like
// the first's.
func (e *cqEnv) secondQP(t *testing.T) (*QP, *testSQ) {
	t.Helper()
	other := newTestSQSized(t, QPTypeRC, 256, false, 8, 1, 0)
	qp2 := &QP{QPN: gQPN + 1, UserIndex: gUIdx + 1, SQ: other.sq}
	if err := e.cq.Attach(qp2); err != nil {
		t.Fatal(err)
	}
	return qp2, other
}

// TestCQInterleavedQPs checks Poll's last-QP cache: requester CQEs of two QPs alternate in one CQ (every switch
// goes through the lookup, every repeat through the inline path), each retires its own QP's WQEs, and a CQE for a
// QP detached since the cache was filled is a poll error, not a completion of a stale queue.
func TestCQInterleavedQPs(t *testing.T) {
	e := newCQEnv(t)
	qp2, other := e.secondQP(t)
	for i := range 4 {
		for k, sq := range []*SendQueue{e.sq.sq, other.sq} {
			if _, st := sq.PostSend([]SendWR{{WRID: uint64(i + 10*k), Opcode: verbs.WRSend,
				Flags: verbs.SendSignaled, SGL: []SGE{gS1}}}); st != provider.OK {
				t.Fatal(st)
			}
		}
	}
	// CQEs: QP1 #0, QP1 #1, QP2 #0, QP2 #1, QP1 #2, QP2 #2, QP2 #3, QP1 #3.
	order := []struct {
		qp  *QP
		wqe uint16
	}{{e.qp, 0}, {e.qp, 1}, {qp2, 0}, {qp2, 1}, {e.qp, 2}, {qp2, 2}, {qp2, 3}, {e.qp, 3}}
	for i, o := range order {
		putCQE(e.cqBuf, 8, uint32(i), cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: o.qp.QPN, uidx: o.qp.UserIndex,
			wqeCounter: o.wqe})
	}
	var wcs [8]WC
	n, st := e.cq.Poll(wcs[:])
	if n != 8 || st != provider.OK {
		t.Fatalf("Poll = %d, %v", n, st)
	}
	for i, o := range order {
		id := uint64(o.wqe)
		if o.qp == qp2 {
			id += 10
		}
		want := WC{WRID: id, QPNum: o.qp.QPN, Opcode: verbs.WCSend}
		if wcs[i] != want {
			t.Errorf("completion %d = %+v, want %+v", i, wcs[i], want)
		}
	}
	if e.sq.sq.Outstanding() != 0 || other.sq.Outstanding() != 0 {
		t.Errorf("outstanding %d and %d, want 0", e.sq.sq.Outstanding(), other.sq.Outstanding())
	}
	// The cache now holds QP1 (the last CQE's); detach it and deliver another CQE naming it.
	e.cq.Detach(e.qp)
	putCQE(e.cqBuf, 8, 8, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx, wqeCounter: 0})
	if n, st := e.cq.Poll(wcs[:]); n != 0 || st != provider.UnknownCQE {
		t.Fatalf("CQE of a detached QP: Poll = %d, %v; want 0, UnknownCQE", n, st)
	}
}

// TestCQClean removes one QP's unpolled CQEs across the ring's wrap (rdma-core __mlx5_cq_clean): the other QP's
// completions poll in order with the owner bits of their new slots, the consumer index and its record advance,
// and the device's next CQE still polls.
func TestCQClean(t *testing.T) {
	e := newCQEnv(t)
	qp2, other := e.secondQP(t)
	post := func(sq *SendQueue, id uint64) {
		t.Helper()
		if _, st := sq.PostSend([]SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []SGE{gS1}}}); st != provider.OK {
			t.Fatal(st)
		}
	}
	var wcs [8]WC
	// Consume five of QP1's completions so that what follows wraps the 8-entry ring.
	for i := range 5 {
		post(e.sq.sq, uint64(i))
		putCQE(e.cqBuf, 8, uint32(i), cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx, wqeCounter: uint16(i)})
	}
	if n, st := e.cq.Poll(wcs[:]); n != 5 || st != provider.OK {
		t.Fatalf("Poll = %d, %v", n, st)
	}
	// Slots 5..10 (wrapping at 8): QP1, QP2 #0, QP1, QP2 #1, QP2 #2, QP1.
	for i := range 3 {
		post(e.sq.sq, uint64(5+i))
		post(other.sq, uint64(100+i))
	}
	seq := []struct {
		qp  *QP
		wqe uint16
	}{{e.qp, 5}, {qp2, 0}, {e.qp, 6}, {qp2, 1}, {qp2, 2}, {e.qp, 7}}
	for i, c := range seq {
		putCQE(e.cqBuf, 8, uint32(5+i), cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: c.qp.QPN, uidx: c.qp.UserIndex,
			wqeCounter: c.wqe})
	}
	if got := e.cq.Clean(e.qp); got != 3 {
		t.Fatalf("Clean removed %d CQEs, want 3", got)
	}
	if ci := e.cq.ConsumerIndex(); ci != 8 {
		t.Errorf("consumer index %d after Clean, want 8 (5 polled + 3 removed)", ci)
	}
	if rec := toBE32(e.cq.dbr.p[0]); rec != 8 {
		t.Errorf("consumer index record %d, want 8", rec)
	}
	e.cq.Detach(e.qp)
	n, st := e.cq.Poll(wcs[:])
	if n != 3 || st != provider.OK {
		t.Fatalf("Poll after Clean = %d, %v; want QP2's 3 completions", n, st)
	}
	for i := range 3 {
		if want := (WC{WRID: uint64(100 + i), QPNum: qp2.QPN, Opcode: verbs.WCSend}); wcs[i] != want {
			t.Errorf("completion %d = %+v, want %+v", i, wcs[i], want)
		}
	}
	if other.sq.Outstanding() != 0 {
		t.Errorf("QP2 outstanding %d, want 0", other.sq.Outstanding())
	}
	// The device's next CQE goes to slot 11 % 8 with pass 1's owner bit: it polls.
	post(other.sq, 103)
	putCQE(e.cqBuf, 8, 11, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: qp2.QPN, uidx: qp2.UserIndex, wqeCounter: 3})
	if n, st := e.cq.Poll(wcs[:]); n != 1 || st != provider.OK || wcs[0].WRID != 103 {
		t.Fatalf("next CQE: Poll = %d, %v, %+v", n, st, wcs[0])
	}
	if got := e.cq.Clean(qp2); got != 0 {
		t.Errorf("Clean of an empty CQ removed %d", got)
	}
}

// TestCQCleanReturnsSRQWQEs: cleaning a QP on an SRQ returns the WQEs of its receive completions (success and
// error) to the SRQ's free list, and leaves the other QP's completion of the same SRQ.
func TestCQCleanReturnsSRQWQEs(t *testing.T) {
	cq, buf, srq, _ := newCQAndSRQ(t, 8)
	a, b := &QP{QPN: 0x42, SRQ: srq}, &QP{QPN: 0x43, SRQ: srq}
	for _, qp := range []*QP{a, b} {
		if err := cq.Attach(qp); err != nil {
			t.Fatal(err)
		}
	}
	if n, st := srq.PostRecv([]RecvWR{{WRID: 10}, {WRID: 11}, {WRID: 12}}); n != 3 || st != provider.OK {
		t.Fatalf("PostRecv = %d, %v", n, st)
	}
	putCQE(buf, 8, 0, cqeSpec{opcode: CQERespSend, qpn: 0x42, wqeCounter: 0, byteCnt: 1})
	putCQE(buf, 8, 1, cqeSpec{opcode: CQERespSend, qpn: 0x43, wqeCounter: 1, byteCnt: 2})
	putCQE(buf, 8, 2, cqeSpec{opcode: CQERespErr, qpn: 0x42, wqeCounter: 2, syndrome: SyndromeWRFlushErr})
	if got := cq.Clean(a); got != 2 {
		t.Fatalf("Clean removed %d, want 2", got)
	}
	// WQEs 0 and 2 are free again: two posts fit, a third does not (WQE 1 is still QP b's).
	if n, st := srq.PostRecv([]RecvWR{{WRID: 20}, {WRID: 21}, {WRID: 22}}); n != 2 || st != provider.QueueFull {
		t.Fatalf("PostRecv after Clean = %d, %v; want 2, QueueFull", n, st)
	}
	var wcs [4]WC
	if n, st := cq.Poll(wcs[:]); n != 1 || st != provider.OK || wcs[0].WRID != 11 || wcs[0].QPNum != 0x43 || wcs[0].ByteLen != 2 {
		t.Fatalf("Poll = %d, %v, %+v; want QP 0x43's receive 11", n, st, wcs[0])
	}
}

// newCQAndSRQ returns a CQ of n CQEs (version 0, CQN 1) with its ring, and an SRQ of 4 WQEs (SRQN 5) with its
// doorbell record.
func newCQAndSRQ(t *testing.T, n int) (*CQ, []byte, *SRQ, DoorbellRecord) {
	t.Helper()
	d, _ := NewDoorbellRecord(aligned(8))
	buf := aligned(n * 64)
	cq, err := NewCQ(CQConfig{Buf: buf, CQECount: n, CQN: 1, DBR: d, CQEVersion: 0})
	if err != nil {
		t.Fatal(err)
	}
	sd, _ := NewDoorbellRecord(aligned(8))
	srq, err := NewSRQ(SRQConfig{Buf: aligned(4 * 64), WQECount: 4, WQEShift: 6, DBR: sd, SRQN: 5})
	if err != nil {
		t.Fatal(err)
	}
	return cq, buf, srq, sd
}

func TestCQVersion0AndSRQ(t *testing.T) {
	cq, buf, srq, sd := newCQAndSRQ(t, 4)
	qp := &QP{QPN: 0x42, UserIndex: 1234, SRQ: srq}
	if err := cq.Attach(qp); err != nil {
		t.Fatal(err)
	}
	big := SGE{Length: 0xffffffff, LKey: 1, Addr: 0x1000}
	if n, st := srq.PostRecv([]RecvWR{{SGL: []SGE{big, gS1}}}); n != 0 || st != provider.TooLong {
		t.Fatalf("SRQ lengths over 2^32-1: %d, %v", n, st)
	}
	if n, st := srq.PostRecv([]RecvWR{{SGL: make([]SGE, srq.maxGS+1)}}); n != 0 || st != provider.TooManySGE {
		t.Fatalf("SRQ too many SGEs: %d, %v", n, st)
	}
	// Three WQEs are usable (one is the list tail); a fourth post fails.
	n, st := srq.PostRecv([]RecvWR{{WRID: 10}, {WRID: 11}, {WRID: 12}, {WRID: 13}})
	if n != 3 || st != provider.QueueFull {
		t.Fatalf("PostRecv = %d, %v; want 3, QueueFull", n, st)
	}
	// Complete the middle WQE (index 1) first: out-of-order completion returns it to the free list.
	putCQE(buf, 4, 0, cqeSpec{opcode: CQERespSend, qpn: 0x42, uidx: 5, wqeCounter: 1, byteCnt: 7})
	var wcs [2]WC
	if n, st := cq.Poll(wcs[:]); n != 1 || st != provider.OK || wcs[0].WRID != 11 || wcs[0].ByteLen != 7 {
		t.Fatalf("Poll = %d, %v, %+v", n, st, wcs[0])
	}
	// The freed WQE can be posted again and is the one reused.
	if n, st := srq.PostRecv([]RecvWR{{WRID: 20}}); n != 1 || st != provider.OK {
		t.Fatalf("repost = %d, %v", n, st)
	}
	if srq.wrid[3] != 20 {
		t.Errorf("repost went to WQE with wrid table %v, want index 3 (the old tail)", srq.wrid)
	}
	if c := toBE32(sd.p[0]); c != 4 {
		t.Errorf("SRQ counter = %d, want 4", c)
	}
	// Error CQE on the SRQ also frees its WQE.
	putCQE(buf, 4, 1, cqeSpec{opcode: CQERespErr, qpn: 0x42, uidx: 5, wqeCounter: 0, syndrome: SyndromeWRFlushErr})
	if n, _ := cq.Poll(wcs[:]); n != 1 || wcs[0].Status != verbs.WCWRFlushErr || wcs[0].WRID != 10 {
		t.Fatalf("flush CQE: %d %+v", n, wcs[0])
	}
	// A wqe_counter beyond the SRQ is a poll error, not a panic.
	putCQE(buf, 4, 2, cqeSpec{opcode: CQERespSend, qpn: 0x42, wqeCounter: 999})
	if _, st := cq.Poll(wcs[:]); st != provider.UnknownCQE {
		t.Fatalf("bad SRQ index: status %v, want UnknownCQE", st)
	}
}

func TestCQResize(t *testing.T) {
	e := newCQEnv(t)
	for k := 0; k < 5; k++ {
		if _, st := e.sq.sq.PostSend([]SendWR{sendWR(uint64(k), gS1)}); st != provider.OK {
			t.Fatal(st)
		}
	}
	// Consume 2, leave 3 unpolled, then the device writes RESIZE_CQ.
	for k := uint32(0); k < 5; k++ {
		putCQE(e.cqBuf, 8, k, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx, wqeCounter: uint16(k)})
	}
	var wcs [2]WC
	if n, _ := e.cq.Poll(wcs[:]); n != 2 {
		t.Fatalf("polled %d", n)
	}
	nb := aligned(16 * 64)
	if err := e.cq.BeginResize(nb, 16); err != nil {
		t.Fatal(err)
	}
	if nb[63] != 0xf0 || nb[16*64-1] != 0xf0 {
		t.Fatalf("new buffer not stamped")
	}
	putCQE(e.cqBuf, 8, 5, cqeSpec{opcode: CQEResizeCQ})
	if err := e.cq.CompleteResize(); err != nil {
		t.Fatal(err)
	}
	// The three pending CQEs come out of the new buffer, then new CQEs land after the resize CQE's index.
	var got []uint64
	var out [8]WC
	n, st := e.cq.Poll(out[:])
	for i := 0; i < n; i++ {
		got = append(got, out[i].WRID)
	}
	if st != provider.OK || len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Fatalf("after resize polled %v, %v; want [2 3 4]", got, st)
	}
	if _, st := e.sq.sq.PostSend([]SendWR{sendWR(5, gS1)}); st != provider.OK {
		t.Fatal(st)
	}
	putCQE(nb, 16, e.cq.ConsumerIndex(), cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx,
		wqeCounter: 5})
	if n, st := e.cq.Poll(out[:]); n != 1 || st != provider.OK || out[0].WRID != 5 {
		t.Fatalf("CQE in resized buffer: %d %v %+v", n, st, out[0])
	}
	if err := e.cq.CompleteResize(); err == nil {
		t.Error("CompleteResize without BeginResize succeeded")
	}
}

func TestCQResizeWithoutResizeCQE(t *testing.T) {
	e := newCQEnv(t)
	if err := e.cq.BeginResize(aligned(16*64), 16); err != nil {
		t.Fatal(err)
	}
	if err := e.cq.CompleteResize(); err == nil {
		t.Fatal("resize completed without a RESIZE_CQ CQE")
	}
	if err := e.cq.BeginResize(aligned(64), 16); err == nil {
		t.Fatal("short resize buffer accepted")
	}
}

func TestCQArmSequence(t *testing.T) {
	e := newCQEnv(t)
	e.cq.Arm(false)
	e.cq.Event()
	e.cq.Arm(true)
	want := []byte{0x11, 0, 0, 0, 0, 0, 0x04, 0x56}
	if got := e.uar[CQDoorbellOffset : CQDoorbellOffset+8]; !bytes.Equal(got, want) {
		t.Errorf("doorbell after one event = %x, want %x", got, want)
	}
}

func TestRecvQueue(t *testing.T) {
	ring, dbrb := aligned(4*32), aligned(8)
	d, _ := NewDoorbellRecord(dbrb)
	rq, err := NewRecvQueue(RecvQueueConfig{Buf: ring, WQECount: 4, WQEShift: 5, DBR: d, QPN: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, st := rq.PostRecv([]RecvWR{{SGL: []SGE{gS1, gS2, gS3}}}); n != 0 || st != provider.TooManySGE {
		t.Fatalf("3 SGEs into a 2-SGE WQE: %d, %v", n, st)
	}
	big := SGE{Length: 0xffffffff, LKey: 1, Addr: 0x1000}
	if n, st := rq.PostRecv([]RecvWR{{SGL: []SGE{big, gS1}}}); n != 0 || st != provider.TooLong {
		t.Fatalf("lengths over 2^32-1: %d, %v", n, st)
	}
	// Exactly two SGEs fill the WQE: no terminator.
	if n, st := rq.PostRecv([]RecvWR{{SGL: []SGE{gS1, gS2}}}); n != 1 || st != provider.OK {
		t.Fatal(n, st)
	}
	if be.Uint32(ring[20:]) == InvalidLKey {
		t.Error("terminator written into a full WQE")
	}
	n, st := rq.PostRecv(make([]RecvWR, 4))
	if n != 3 || st != provider.QueueFull {
		t.Fatalf("fill: %d, %v", n, st)
	}
	if be.Uint32(dbrb[0:]) != 4 || be.Uint32(dbrb[4:]) != 0 {
		t.Errorf("doorbell record = %x", dbrb[:8])
	}
	rq.Reset()
	if rq.Outstanding() != 0 || be.Uint32(dbrb[0:]) != 0 {
		t.Errorf("reset did not clear")
	}
}

func TestNewCQValidation(t *testing.T) {
	d, _ := NewDoorbellRecord(aligned(8))
	for name, cfg := range map[string]CQConfig{
		"not pow2":  {Buf: aligned(6 * 64), CQECount: 6, DBR: d},
		"short":     {Buf: aligned(64), CQECount: 2, DBR: d},
		"version 2": {Buf: aligned(128), CQECount: 2, DBR: d, CQEVersion: 2},
		"no record": {Buf: aligned(128), CQECount: 2},
	} {
		if _, err := NewCQ(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	u, _ := mmio.RegFromBytes(aligned(64))
	cq, err := NewCQ(CQConfig{Buf: aligned(128), CQECount: 2, DBR: d, UAR: u, CQN: 3})
	if err != nil || cq.CQN() != 3 {
		t.Fatal(err)
	}
	a, b := &QP{QPN: 1}, &QP{QPN: 1}
	if err := cq.Attach(a); err != nil {
		t.Fatal(err)
	}
	if err := cq.Attach(b); err == nil {
		t.Error("two QPs with one key attached")
	}
	cq.Detach(a)
	if err := cq.Attach(b); err != nil {
		t.Errorf("attach after detach: %v", err)
	}
}

// FuzzPoll feeds arbitrary CQE bytes to a CQ whose QP has posted sends and receives: Poll must never panic, must
// consume at most one CQE, and must keep the queues' accounting sane.
func FuzzPoll(f *testing.F) {
	for _, s := range loadGoldenF(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cqe []byte) {
		if len(cqe) != 64 {
			return
		}
		e := newCQEnv(t)
		for k := 0; k < 3; k++ {
			if _, st := e.sq.sq.PostSend([]SendWR{sendWR(uint64(k), gS1)}); st != provider.OK {
				t.Fatal(st)
			}
		}
		if _, st := e.rq.PostRecv([]RecvWR{{WRID: 200, SGL: []SGE{{Addr: addrOf(e.recvTo), Length: 32}}}}); st != provider.OK {
			t.Fatal(st)
		}
		copy(e.cqBuf, cqe)
		var wcs [4]WC
		n, _ := e.cq.Poll(wcs[:])
		if n > 1 || e.cq.ConsumerIndex() > 1 {
			t.Fatalf("one CQE produced %d completions, ci %d", n, e.cq.ConsumerIndex())
		}
		if o := e.sq.sq.Outstanding(); o < 0 || o > 3 {
			t.Fatalf("SQ outstanding %d", o)
		}
	})
}

// loadGoldenF returns the golden CQEs as fuzz seeds.
func loadGoldenF(f *testing.F) [][]byte {
	var seeds [][]byte
	for name, b := range loadGoldenRaw(f) {
		if len(b) == 64 && len(name) > 4 && name[:4] == "cqe." {
			seeds = append(seeds, b)
		}
	}
	return seeds
}
