package mlx5emu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

const allAccess = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

func newDev(t testing.TB, o Options) *Device {
	t.Helper()
	d, err := New(o)
	if err != nil {
		t.Fatalf("new device: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// rcPair is two connected RC (or UC) QPs, each with its own send and recv CQ.
type rcPair struct {
	d                  *Device
	a, b               *tQP
	scqA, rcqA         *tCQ
	scqB, rcqB         *tCQ
	srcMR, dstMR, rdMR tMR
	roMR               tMR // no access rights at all
}

func newPair(t testing.TB, d *Device, typ QPType, rnrRetry int, o qpOpts) *rcPair {
	p := &rcPair{d: d}
	p.scqA, p.rcqA = newCQ(t, d, 16), newCQ(t, d, 16)
	p.scqB, p.rcqB = newCQ(t, d, 16), newCQ(t, d, 16)
	o.typ, o.pdn = typ, 1
	o.uidx = 0x11
	p.a = newQP(t, d, p.scqA.cqn, p.rcqA.cqn, o)
	o.uidx = 0x22
	p.b = newQP(t, d, p.scqB.cqn, p.rcqB.cqn, o)
	connect(t, p.a, p.b, allAccess, rnrRetry)
	p.srcMR = newMR(t, d, 8192, AccessLocalWrite, 1)
	p.dstMR = newMR(t, d, 8192, allAccess, 1)
	p.rdMR = newMR(t, d, 8192, AccessLocalWrite, 1)
	p.roMR = newMR(t, d, 64, 0, 1)
	for i := range p.srcMR.buf {
		p.srcMR.buf[i] = byte(i*7 + 3)
	}
	return p
}

func TestRCSendImmCQEBytes(t *testing.T) {
	d := newDev(t, Options{BFRegSize: 512})
	p := newPair(t, d, RC, 0, qpOpts{})
	p.b.postRecv(dataSeg(256, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSendImm, tCQUpdate|tSolicited, 0xdeadbeef, dataSeg(100, p.srcMR.key, p.srcMR.addr))
	if n := d.Process(); n == 0 {
		t.Fatal("Process did no work")
	}
	req := p.scqA.poll()
	resp := p.rcqB.poll()
	if req == nil || resp == nil {
		t.Fatalf("missing CQEs: req %v resp %v", req != nil, resp != nil)
	}
	wantReq := make([]byte, 64)
	binary.BigEndian.PutUint32(wantReq[32:], 0x11)
	binary.BigEndian.PutUint32(wantReq[44:], 100)
	binary.BigEndian.PutUint32(wantReq[56:], tOpSendImm<<24|p.a.qpn)
	wantReq[63] = tCQEReq<<4 | 0
	if !bytes.Equal(req, wantReq) {
		t.Errorf("requester CQE\n got %x\nwant %x", req, wantReq)
	}
	wantResp := make([]byte, 64)
	binary.BigEndian.PutUint32(wantResp[32:], 0x22)
	binary.BigEndian.PutUint32(wantResp[36:], 0xdeadbeef)
	binary.BigEndian.PutUint32(wantResp[44:], 100)
	binary.BigEndian.PutUint32(wantResp[56:], p.b.qpn)
	wantResp[63] = tCQERespSendImm<<4 | 0x2
	if !bytes.Equal(resp, wantResp) {
		t.Errorf("responder CQE\n got %x\nwant %x", resp, wantResp)
	}
	if !bytes.Equal(p.dstMR.buf[:100], p.srcMR.buf[:100]) || p.dstMR.buf[100] != 0 {
		t.Error("payload not delivered exactly")
	}
	st, _ := d.QPStats(p.a.qpn)
	if st.WQEsExecuted != 1 || st.Doorbells != 1 || st.BlueFlameWrites != 0 {
		t.Errorf("stats %+v", st)
	}
	noErrors(t, d)
}

func TestRCOperations(t *testing.T) {
	for _, bf := range []bool{false, true} {
		d := newDev(t, Options{BFRegSize: 512})
		p := newPair(t, d, RC, 0, qpOpts{})
		p.a.useBF = bf
		src, dst, rd := p.srcMR, p.dstMR, p.rdMR

		// SEND with invalidate.
		p.b.postRecv(dataSeg(64, dst.key, dst.addr))
		p.a.post(tOpSendInval, tCQUpdate, 0x1234, dataSeg(8, src.key, src.addr))
		if e := p.rcqB.mustPoll(d); e.opcode != tCQERespSendInv || e.imm != 0x1234 || e.byteCnt != 8 {
			t.Errorf("send-inv responder %+v", e)
		}
		if e := p.scqA.mustPoll(d); e.opcode != tCQEReq || e.sqOpcode != tOpSendInval || e.wqeCounter != 0 {
			t.Errorf("send-inv requester %+v", e)
		}

		// RDMA WRITE (unsignaled) then RDMA WRITE_IMM (signaled).
		p.a.post(tOpRDMAWrite, 0, 0, raddrSeg(dst.addr+1000, dst.key), dataSeg(300, src.key, src.addr))
		p.b.postRecv()
		idx := p.a.post(tOpRDMAWriteImm, tCQUpdate, 0xa5a5a5a5, raddrSeg(dst.addr+2000, dst.key), dataSeg(50, src.key, src.addr+300))
		e := p.scqA.mustPoll(d)
		if e.opcode != tCQEReq || e.sqOpcode != tOpRDMAWriteImm || e.wqeCounter != idx {
			t.Errorf("write-imm requester %+v (idx %d)", e, idx)
		}
		if r := p.rcqB.mustPoll(d); r.opcode != tCQERespWrImm || r.imm != 0xa5a5a5a5 || r.byteCnt != 50 || r.wqeCounter != 1 {
			t.Errorf("write-imm responder %+v", r)
		}
		if !bytes.Equal(dst.buf[1000:1300], src.buf[:300]) || !bytes.Equal(dst.buf[2000:2050], src.buf[300:350]) {
			t.Error("RDMA write data")
		}

		// RDMA READ into two local SGEs.
		idx = p.a.post(tOpRDMARead, tCQUpdate, 0, raddrSeg(dst.addr+1000, dst.key),
			dataSeg(100, rd.key, rd.addr), dataSeg(200, rd.key, rd.addr+4000))
		if e := p.scqA.mustPoll(d); e.opcode != tCQEReq || e.sqOpcode != tOpRDMARead || e.byteCnt != 300 || e.wqeCounter != idx {
			t.Errorf("read requester %+v", e)
		}
		if !bytes.Equal(rd.buf[:100], src.buf[:100]) || !bytes.Equal(rd.buf[4000:4200], src.buf[100:300]) {
			t.Error("RDMA read data")
		}

		// Atomics on host-endian memory; the old value lands in the local SGE.
		binary.NativeEndian.PutUint64(dst.buf[4096:], 40)
		p.a.post(tOpAtomicFA, tCQUpdate, 0, raddrSeg(dst.addr+4096, dst.key), atomicSeg(2, 0), dataSeg(8, rd.key, rd.addr+16))
		if e := p.scqA.mustPoll(d); e.sqOpcode != tOpAtomicFA || e.byteCnt != 8 {
			t.Errorf("fetch-add %+v", e)
		}
		p.a.post(tOpAtomicCS, tCQUpdate|tFence, 0, raddrSeg(dst.addr+4096, dst.key), atomicSeg(7, 42), dataSeg(8, rd.key, rd.addr+24))
		p.a.post(tOpAtomicCS, tCQUpdate, 0, raddrSeg(dst.addr+4096, dst.key), atomicSeg(9, 42), dataSeg(8, rd.key, rd.addr+32))
		p.scqA.mustPoll(d)
		p.scqA.mustPoll(d)
		if got := binary.NativeEndian.Uint64(dst.buf[4096:]); got != 7 {
			t.Errorf("remote value %d, want 7", got)
		}
		for off, want := range map[int]uint64{16: 40, 24: 42, 32: 7} {
			if got := binary.NativeEndian.Uint64(rd.buf[off:]); got != want {
				t.Errorf("atomic result at %d = %d, want %d", off, got, want)
			}
		}

		// NOP, signaled.
		idx = p.a.post(tOpNOP, tCQUpdate, 0)
		if e := p.scqA.mustPoll(d); e.opcode != tCQEReq || e.wqeCounter != idx {
			t.Errorf("nop %+v", e)
		}
		st, _ := d.QPStats(p.a.qpn)
		if bf && st.BlueFlameWrites == 0 || !bf && st.BlueFlameWrites != 0 || st.WQEsExecuted != 8 {
			t.Errorf("bf=%v stats %+v", bf, st)
		}
		p.scqA.empty(d)
		noErrors(t, d)
	}
}

// TestRingWrap runs many sends through small rings: inline data and data
// segments wrap at the SQ end, the CQ wraps with alternating ownership.
func TestRingWrap(t *testing.T) {
	d := newDev(t, Options{BFRegSize: 512})
	p := newPair(t, d, RC, 0, qpOpts{sqCnt: 8, rqCnt: 4})
	p.a.useBF = true
	for i := 0; i < 1000; i++ {
		n := 1 + i%150
		payload := p.srcMR.buf[i : i+n]
		p.b.postRecv(dataSeg(256, p.dstMR.key, p.dstMR.addr))
		var idx uint16
		switch i % 3 {
		case 0:
			idx = p.a.post(tOpSend, tCQUpdate, 0, inlineSeg(payload))
		case 1:
			idx = p.a.post(tOpSend, tCQUpdate, 0, dataSeg(uint32(n/2), p.srcMR.key, addr(payload)),
				dataSeg(0, p.srcMR.key, 0), dataSeg(uint32(n-n/2), p.srcMR.key, addr(payload)+uint64(n/2)))
		default:
			idx = p.a.post(tOpSendImm, tCQUpdate, uint32(i), inlineSeg(payload[:n/3]), dataSeg(uint32(n-n/3), p.srcMR.key, addr(payload)+uint64(n/3)))
		}
		d.Process()
		req, resp := p.scqA.poll(), p.rcqB.poll()
		if req == nil || resp == nil {
			t.Fatalf("iteration %d: missing CQE", i)
		}
		rq, rs := parseTCQE(req), parseTCQE(resp)
		wantOwner := uint8((p.scqA.ci - 1) / p.scqA.ncqe & 1)
		if rq.opcode != tCQEReq || rq.wqeCounter != idx || rq.owner != wantOwner {
			t.Fatalf("iteration %d: requester %+v (idx %#x)", i, rq, idx)
		}
		if rs.byteCnt != uint32(n) || rs.wqeCounter != uint16(i) {
			t.Fatalf("iteration %d: responder %+v", i, rs)
		}
		if !bytes.Equal(p.dstMR.buf[:n], payload) {
			t.Fatalf("iteration %d: payload mismatch", i)
		}
	}
	st, _ := d.QPStats(p.a.qpn)
	if st.WQEsExecuted != 1000 || st.BlueFlameWrites == 0 {
		t.Errorf("stats %+v", st)
	}
	noErrors(t, d)
}

func TestUD(t *testing.T) {
	d := newDev(t, Options{LID: 7, GID: [16]byte{0xfe, 0x80, 15: 1}})
	scq, rcq := newCQ(t, d, 8), newCQ(t, d, 8)
	a := newQP(t, d, scq.cqn, scq.cqn, qpOpts{typ: UD, pdn: 2, uidx: 3})
	b := newQP(t, d, rcq.cqn, rcq.cqn, qpOpts{typ: UD, pdn: 2, uidx: 4, rqShift: 5})
	toRTS(a, 0x1111)
	toRTS(b, 0x2222)
	src := newMR(t, d, 4096, AccessLocalWrite, 2)
	dst := newMR(t, d, 4096, AccessLocalWrite, 2)
	copy(src.buf, "hello, datagram")
	rgid := [16]byte{0xfe, 0x80, 15: 2}

	// With GRH: the 40-byte GRH precedes the payload.
	b.postRecv(dataSeg(40, dst.key, dst.addr), dataSeg(100, dst.key, dst.addr+100))
	a.post(tOpSend, tCQUpdate, 0, udAV(0x2222, b.qpn, 5, true, rgid), dataSeg(15, src.key, src.addr))
	d.Process()
	raw := rcq.poll()
	want := make([]byte, 64)
	binary.BigEndian.PutUint16(want[22:], 7)                 // slid
	binary.BigEndian.PutUint32(want[24:], 1<<28|5<<24|a.qpn) // GRH, SL, src QP
	binary.BigEndian.PutUint32(want[32:], 4)                 // user index
	binary.BigEndian.PutUint32(want[44:], 55)                // GRH + payload
	binary.BigEndian.PutUint32(want[56:], b.qpn)
	want[63] = tCQERespSend << 4
	if !bytes.Equal(raw, want) {
		t.Errorf("UD responder CQE\n got %x\nwant %x", raw, want)
	}
	if string(dst.buf[100:115]) != "hello, datagram" {
		t.Errorf("UD payload %q", dst.buf[100:115])
	}
	if dst.buf[0]>>4 != 6 || dst.buf[6] != 0x1b || dst.buf[7] != 64 || !bytes.Equal(dst.buf[24:40], rgid[:]) || dst.buf[8] != 0xfe {
		t.Errorf("GRH % x", dst.buf[:40])
	}
	if r := parseTCQE(scq.poll()); r.opcode != tCQEReq || r.sqOpcode != tOpSend {
		t.Errorf("UD requester %+v", r)
	}

	// Without GRH: the first 40 bytes are left alone, byte_cnt still counts them.
	for i := range dst.buf[:40] {
		dst.buf[i] = 0xee
	}
	b.postRecv(dataSeg(100, dst.key, dst.addr))
	a.post(tOpSendImm, tCQUpdate, 0x01020304, udAV(0x2222, b.qpn, 0, false, [16]byte{}), inlineSeg([]byte("xyz")))
	d.Process()
	e := parseTCQE(rcq.poll())
	if e.opcode != tCQERespSendImm || e.byteCnt != 43 || e.imm != 0x01020304 || e.flagsRqpn != a.qpn {
		t.Errorf("UD no-GRH responder %+v", e)
	}
	if dst.buf[0] != 0xee || dst.buf[39] != 0xee || string(dst.buf[40:43]) != "xyz" {
		t.Errorf("UD no-GRH buffer % x", dst.buf[:44])
	}
	scq.poll()

	// Wrong Q_Key and unknown QPN: silently dropped, requester succeeds.
	a.post(tOpSend, tCQUpdate, 0, udAV(0x3333, b.qpn, 0, false, [16]byte{}), inlineSeg([]byte("x")))
	a.post(tOpSend, tCQUpdate, 0, udAV(0x2222, 0xabcdef, 0, false, [16]byte{}), inlineSeg([]byte("x")))
	d.Process()
	for i := 0; i < 2; i++ {
		if r := parseTCQE(scq.poll()); r.opcode != tCQEReq {
			t.Errorf("dropped datagram requester %+v", r)
		}
	}
	rcq.empty(d)

	// Receive buffer too small: receiver completes LOC_LEN_ERR and goes to ERROR.
	b.postRecv(dataSeg(41, dst.key, dst.addr))
	a.post(tOpSend, tCQUpdate, 0, udAV(0x2222, b.qpn, 0, false, [16]byte{}), inlineSeg([]byte("toolong")))
	d.Process()
	if e := parseTCQE(rcq.poll()); e.opcode != tCQERespErr || e.syndrome != 0x01 {
		t.Errorf("UD length error %+v", e)
	}
	if s, _ := d.QPState(b.qpn); s != StateError {
		t.Errorf("receiver state %v", s)
	}
	if r := parseTCQE(scq.poll()); r.opcode != tCQEReq {
		t.Errorf("UD requester after receiver error %+v", r)
	}
	noErrors(t, d)
}

// newSRQ creates an SRQ (PD 1, user index uidx) of cnt WQEs of 1<<shift bytes in a buffer buf whose free list
// links WQE i to i+1, as the driver builds it, with its doorbell record dbr.
func newSRQ(t *testing.T, d *Device, cnt, shift int, uidx uint32) (srqn uint32, buf, dbr []byte) {
	t.Helper()
	buf, dbr = pageMem(t, cnt<<shift), pageMem(t, 64)[:8]
	for i := 0; i < cnt; i++ {
		binary.BigEndian.PutUint16(buf[i<<shift+2:], uint16(i+1))
	}
	srqn, err := d.CreateSRQ(SRQConfig{PDN: 1, Buf: buf, WQECnt: cnt, WQEShift: shift, DBR: dbr, UIDX: uidx})
	if err != nil {
		t.Fatal(err)
	}
	return srqn, buf, dbr
}

func TestSRQ(t *testing.T) {
	d := newDev(t, Options{})
	const cnt, shift = 8, 6 // next seg + 3 data segs
	srqn, srqBuf, srqDBR := newSRQ(t, d, cnt, shift, 9)
	p := newPair(t, d, RC, 0, qpOpts{srqn: srqn})
	head, tail, counter := uint16(0), uint16(cnt-1), uint32(0)
	postSRQ := func(off uint64) uint16 {
		i := head
		w := srqBuf[int(i)<<shift : int(i+1)<<shift]
		head = be16(w[2:])
		copy(w[16:], dataSeg(64, p.dstMR.key, p.dstMR.addr+off))
		copy(w[32:], dataSeg(0, 0x100, 0))
		counter++
		storeBE32(srqDBR, counter)
		return i
	}
	free := func(i uint16) {
		binary.BigEndian.PutUint16(srqBuf[int(tail)<<shift+2:], i)
		tail = i
	}
	for round := 0; round < 20; round++ {
		var posted []uint16
		for i := 0; i < 4; i++ {
			posted = append(posted, postSRQ(uint64(i*64)))
		}
		for i := 0; i < 4; i++ {
			p.a.post(tOpSend, 0, 0, inlineSeg([]byte{byte(round), byte(i)}))
		}
		d.Process()
		// Free in reverse order to scramble the list.
		var got []uint16
		for i := 0; i < 4; i++ {
			e := p.rcqB.mustPoll(d)
			if e.opcode != tCQERespSend || e.byteCnt != 2 || e.srqnUidx != 0x22 {
				t.Fatalf("round %d: SRQ CQE %+v", round, e)
			}
			got = append(got, e.wqeCounter)
			if b := p.dstMR.buf[i*64 : i*64+2]; b[0] != byte(round) || b[1] != byte(i) {
				t.Fatalf("round %d: data %v", round, b)
			}
		}
		if !equalU16(got, posted) {
			t.Fatalf("round %d: consumed %v, posted %v", round, got, posted)
		}
		for i := len(got) - 1; i >= 0; i-- {
			free(got[i])
		}
	}
	// CQE version 0 reports the SRQ number instead of the user index.
	if err := d.DestroySRQ(srqn); !errors.Is(err, unix.EBUSY) {
		t.Errorf("destroy busy SRQ: %v", err)
	}
	noErrors(t, d)
}

func equalU16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCQEVersionZeroSRQN(t *testing.T) {
	d := newDev(t, Options{CQEVersionZero: true})
	srqn, srqBuf, srqDBR := newSRQ(t, d, 4, 6, 0)
	p := newPair(t, d, RC, 0, qpOpts{srqn: srqn})
	copy(srqBuf[16:], dataSeg(16, p.dstMR.key, p.dstMR.addr))
	copy(srqBuf[32:], dataSeg(0, 0x100, 0))
	storeBE32(srqDBR, 1)
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("v0")))
	if e := p.rcqB.mustPoll(d); e.srqnUidx != srqn {
		t.Errorf("srqn_uidx %#x, want SRQN %#x", e.srqnUidx, srqn)
	}
	if e := p.scqA.mustPoll(d); e.srqnUidx != 0 {
		t.Errorf("requester srqn_uidx %#x", e.srqnUidx)
	}
	noErrors(t, d)
}

func TestScatterToCQE(t *testing.T) {
	d := newDev(t, Options{})
	p := newPair(t, d, RC, 0, qpOpts{scatter: true})
	p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, 0, 0, inlineSeg([]byte("small payload in the CQE")))
	d.Process()
	b := p.rcqB.poll()
	if b == nil {
		t.Fatal("no CQE")
	}
	if b[63]&0x4 == 0 || string(b[:24]) != "small payload in the CQE" || p.dstMR.buf[0] != 0 {
		t.Errorf("scatter-to-CQE: op_own %#x data %q buffer %q", b[63], b[:24], p.dstMR.buf[:4])
	}
	// 33 bytes go to memory.
	p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, 0, 0, dataSeg(33, p.srcMR.key, p.srcMR.addr))
	d.Process()
	if b = p.rcqB.poll(); b == nil || b[63]&0x4 != 0 || !bytes.Equal(p.dstMR.buf[:33], p.srcMR.buf[:33]) {
		t.Error("33-byte send must be scattered to memory")
	}
	noErrors(t, d)
}

func TestErrorCompletions(t *testing.T) {
	type tc struct {
		name     string
		run      func(p *rcPair)
		reqSyn   uint8
		respSyn  uint8 // 0: no responder error CQE before flushes
		respErr  bool  // responder QP ends in ERROR
		reqOp    uint8
		typ      QPType
		noReqErr bool
		noRecvB  bool // keep B without receives (RNR)
	}
	cases := []tc{
		{name: "bad rkey", reqSyn: 0x13, respErr: true, reqOp: tOpRDMAWrite, run: func(p *rcPair) {
			p.a.post(tOpRDMAWrite, 0, 0, raddrSeg(p.dstMR.addr, p.dstMR.key+1), dataSeg(8, p.srcMR.key, p.srcMR.addr))
		}},
		{name: "write out of range", reqSyn: 0x13, respErr: true, reqOp: tOpRDMAWrite, run: func(p *rcPair) {
			p.a.post(tOpRDMAWrite, 0, 0, raddrSeg(p.dstMR.addr+8190, p.dstMR.key), dataSeg(8, p.srcMR.key, p.srcMR.addr))
		}},
		{name: "read without remote read", reqSyn: 0x13, respErr: true, reqOp: tOpRDMARead, run: func(p *rcPair) {
			p.a.post(tOpRDMARead, 0, 0, raddrSeg(p.rdMR.addr, p.rdMR.key), dataSeg(8, p.rdMR.key, p.rdMR.addr))
		}},
		{name: "misaligned atomic", reqSyn: 0x12, respErr: true, reqOp: tOpAtomicFA, run: func(p *rcPair) {
			p.a.post(tOpAtomicFA, 0, 0, raddrSeg(p.dstMR.addr+4, p.dstMR.key), atomicSeg(1, 0), dataSeg(8, p.rdMR.key, p.rdMR.addr))
		}},
		{name: "bad lkey", reqSyn: 0x04, reqOp: tOpSend, run: func(p *rcPair) {
			p.a.post(tOpSend, 0, 0, dataSeg(8, 0x7777, p.srcMR.addr))
		}},
		{name: "read into read-only MR", reqSyn: 0x04, reqOp: tOpRDMARead, run: func(p *rcPair) {
			p.a.post(tOpRDMARead, 0, 0, raddrSeg(p.dstMR.addr, p.dstMR.key), dataSeg(8, p.roMR.key, p.roMR.addr))
		}},
		{name: "receive too small", reqSyn: 0x12, respSyn: 0x01, respErr: true, reqOp: tOpSend, run: func(p *rcPair) {
			p.b.postRecv(dataSeg(4, p.dstMR.key, p.dstMR.addr))
			p.a.post(tOpSend, 0, 0, dataSeg(8, p.srcMR.key, p.srcMR.addr))
		}},
		{name: "receive lkey bad", reqSyn: 0x14, respSyn: 0x04, respErr: true, reqOp: tOpSend, run: func(p *rcPair) {
			p.b.postRecv(dataSeg(64, p.srcMR.key+0x100, p.dstMR.addr))
			p.a.post(tOpSend, 0, 0, dataSeg(8, p.srcMR.key, p.srcMR.addr))
		}},
		{name: "RNR retries exhausted", reqSyn: 0x16, reqOp: tOpSend, noRecvB: true, run: func(p *rcPair) {
			p.a.post(tOpSend, 0, 0, dataSeg(8, p.srcMR.key, p.srcMR.addr))
			for i := 0; i < 3; i++ { // rnr_retry 3: three retries stall
				p.d.Process()
				if b := p.scqA.poll(); b != nil {
					panic("completion before the retries ran out")
				}
			}
		}},
		{name: "UC bad rkey is dropped", typ: UC, noReqErr: true, run: func(p *rcPair) {
			p.a.post(tOpRDMAWrite, tCQUpdate, 0, raddrSeg(p.dstMR.addr, 0x999), dataSeg(8, p.srcMR.key, p.srcMR.addr))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDev(t, Options{})
			typ := c.typ
			if typ == 0 {
				typ = RC
			}
			p := newPair(t, d, typ, 3, qpOpts{})
			// Outstanding receives on A and B, and a second (unsignaled)
			// send on A behind the failing one: all get flushed.
			p.a.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
			c.run(p)
			p.a.post(tOpSend, 0, 0, dataSeg(8, p.srcMR.key, p.srcMR.addr))
			if !c.noRecvB {
				p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
			}
			d.Process()
			if c.noReqErr {
				if e := parseTCQE(p.scqA.poll()); e.opcode != tCQEReq {
					t.Errorf("requester %+v", e)
				}
				if s, _ := d.QPState(p.a.qpn); s != StateRTS {
					t.Errorf("requester state %v", s)
				}
				return
			}
			e := p.scqA.mustPoll(d)
			if e.opcode != tCQEReqErr || e.syndrome != c.reqSyn || e.sqOpcode != c.reqOp || e.wqeCounter != 0 || e.qpn != p.a.qpn {
				t.Errorf("requester error CQE %+v", e)
			}
			if e := p.scqA.mustPoll(d); e.opcode != tCQEReqErr || e.syndrome != 0x05 || e.vendor != 0xf9 || e.sqOpcode != tOpSend {
				t.Errorf("requester flush CQE %+v", e)
			}
			if e := p.rcqA.mustPoll(d); e.opcode != tCQERespErr || e.syndrome != 0x05 || e.wqeCounter != 0 {
				t.Errorf("A receive flush %+v", e)
			}
			p.scqA.empty(d)
			if s, _ := d.QPState(p.a.qpn); s != StateError {
				t.Errorf("requester state %v", s)
			}
			if c.respSyn != 0 {
				if e := p.rcqB.mustPoll(d); e.opcode != tCQERespErr || e.syndrome != c.respSyn || e.qpn != p.b.qpn {
					t.Errorf("responder error CQE %+v", e)
				}
			}
			sb, _ := d.QPState(p.b.qpn)
			if c.respErr {
				if sb != StateError {
					t.Errorf("responder state %v", sb)
				}
				if e := p.rcqB.mustPoll(d); e.opcode != tCQERespErr || e.syndrome != 0x05 {
					t.Errorf("responder flush %+v", e)
				}
			} else if sb != StateRTS {
				t.Errorf("responder state %v", sb)
			}
			noErrors(t, d)
		})
	}
}

func TestRNRInfiniteThenReceive(t *testing.T) {
	d := newDev(t, Options{})
	p := newPair(t, d, RC, RNRRetryInfinite, qpOpts{})
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("wait")))
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("next")))
	for i := 0; i < 10; i++ {
		d.Process()
	}
	p.scqA.empty(d)
	st, _ := d.QPStats(p.a.qpn)
	if st.RNRRetries != 11 || st.WQEsExecuted != 0 {
		t.Errorf("stats %+v", st)
	}
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr+8))
	d.Process()
	p.scqA.mustPoll(d)
	p.scqA.mustPoll(d)
	if string(p.dstMR.buf[:4]) != "wait" || string(p.dstMR.buf[8:12]) != "next" {
		t.Errorf("data %q", p.dstMR.buf[:16])
	}
	noErrors(t, d)
}

func TestModifyToErrorFlushes(t *testing.T) {
	d := newDev(t, Options{})
	p := newPair(t, d, RC, 0, qpOpts{})
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.b.modify(QPAttr{State: StateError})
	// struct mlx5_err_cqe, byte for byte.
	want := make([]byte, 64)
	binary.BigEndian.PutUint32(want[32:], 0x22) // srqn (user index)
	want[54], want[55] = 0xf9, 0x05             // vendor_err_synd, syndrome
	binary.BigEndian.PutUint32(want[56:], p.b.qpn)
	want[63] = tCQERespErr << 4
	if got := p.rcqB.poll(); !bytes.Equal(got, want) {
		t.Errorf("flush CQE\n got %x\nwant %x", got, want)
	}
	if e := parseTCQE(p.rcqB.poll()); e.opcode != tCQERespErr || e.syndrome != 0x05 || e.wqeCounter != 1 {
		t.Errorf("flush 1: %+v", e)
	}
	// Posting in ERROR is flushed as well.
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.b.post(tOpNOP, 0, 0)
	d.Process()
	if e := parseTCQE(p.rcqB.poll()); e.syndrome != 0x05 || e.wqeCounter != 2 {
		t.Errorf("late receive flush %+v", e)
	}
	if e := parseTCQE(p.scqB.poll()); e.opcode != tCQEReqErr || e.syndrome != 0x05 {
		t.Errorf("late send flush %+v", e)
	}
	// Back through RESET: the driver zeroes its record and counters.
	p.b.modify(QPAttr{State: StateReset})
	storeBE32(p.b.dbr[0:], 0)
	storeBE32(p.b.dbr[4:], 0)
	p.b.curPost, p.b.rqHead = 0, 0
	p.b.modify(QPAttr{State: StateInit, Access: allAccess})
	p.b.modify(QPAttr{State: StateRTR, DestQPN: p.a.qpn})
	p.b.modify(QPAttr{State: StateRTS})
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("again")))
	if e := p.rcqB.mustPoll(d); e.opcode != tCQERespSend || e.wqeCounter != 0 {
		t.Errorf("after reset %+v", e)
	}
	noErrors(t, d)
}

func TestStateMachine(t *testing.T) {
	d := newDev(t, Options{})
	cq := newCQ(t, d, 4)
	q := newQP(t, d, cq.cqn, cq.cqn, qpOpts{typ: RC})
	bad := []QPState{StateRTR, StateRTS}
	for _, s := range bad {
		if err := d.ModifyQP(q.qpn, QPAttr{State: s}); !errors.Is(err, unix.EINVAL) {
			t.Errorf("RESET->%v: %v", s, err)
		}
	}
	q.modify(QPAttr{State: StateInit})
	if err := d.ModifyQP(q.qpn, QPAttr{State: StateRTS}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("INIT->RTS: %v", err)
	}
	// Posting to the SQ before RTS is a driver error and is not executed.
	q.post(tOpNOP, tCQUpdate, 0)
	d.Process()
	if errs := d.Errors(); len(errs) != 1 || !errors.Is(errs[0], ErrProtocol) {
		t.Errorf("errors %v", errs)
	}
	if err := d.DestroyCQ(cq.cqn); !errors.Is(err, unix.EBUSY) {
		t.Errorf("destroy busy CQ: %v", err)
	}
	if err := d.DestroyQP(q.qpn); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyCQ(cq.cqn); err != nil {
		t.Fatal(err)
	}
	if _, err := d.QPState(q.qpn); !errors.Is(err, unix.EINVAL) {
		t.Errorf("query destroyed QP: %v", err)
	}
}

func TestCQOverrun(t *testing.T) {
	d := newDev(t, Options{})
	cq := newCQ(t, d, 4)
	q := newQP(t, d, cq.cqn, cq.cqn, qpOpts{typ: RC})
	peer := newQP(t, d, cq.cqn, cq.cqn, qpOpts{typ: RC})
	connect(t, q, peer, 0, 0)
	for i := 0; i < 4; i++ {
		q.post(tOpNOP, tCQUpdate, 0)
	}
	d.Process()
	if d.CQOverrun(cq.cqn) {
		t.Fatal("overrun with exactly ncqe entries")
	}
	cq.poll() // one slot free
	q.post(tOpNOP, tCQUpdate, 0)
	d.Process()
	if d.CQOverrun(cq.cqn) {
		t.Fatal("overrun after consuming one")
	}
	q.post(tOpNOP, tCQUpdate, 0)
	d.Process()
	if !d.CQOverrun(cq.cqn) {
		t.Fatal("no overrun with a full ring")
	}
	// The unconsumed CQEs were not overwritten: 3 old + 1 new, then nothing.
	n := 0
	for cq.poll() != nil {
		n++
	}
	if n != 4 {
		t.Errorf("polled %d CQEs after overrun, want 4", n)
	}
	if st, _ := d.CQStats(cq.cqn); st.CQEs != 5 || st.Dropped != 1 {
		t.Errorf("CQ stats %+v", st)
	}
	noErrors(t, d)
}

func TestEvents(t *testing.T) {
	d := newDev(t, Options{})
	p := newPair(t, d, RC, 0, qpOpts{})
	p.rcqB.arm(d, false)
	d.Process()
	if ev := d.Events(); len(ev) != 0 {
		t.Fatalf("event without a CQE: %v", ev)
	}
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, 0, 0, inlineSeg([]byte("a")))
	d.Process()
	if ev := d.Events(); len(ev) != 1 || ev[0] != p.rcqB.cqn {
		t.Fatalf("events %v, want [%#x]", ev, p.rcqB.cqn)
	}
	// Disarmed after firing.
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, 0, 0, inlineSeg([]byte("b")))
	d.Process()
	if ev := d.Events(); len(ev) != 0 {
		t.Fatalf("event while disarmed: %v", ev)
	}
	// Arming with unpolled CQEs at or after ci fires at once.
	p.rcqB.sn++
	p.rcqB.arm(d, false)
	d.Process()
	if ev := d.Events(); len(ev) != 1 {
		t.Fatalf("arm over pending CQEs: %v", ev)
	}
	p.rcqB.poll()
	p.rcqB.poll()
	// Solicited only: an unsolicited send does not fire, a solicited one does.
	p.rcqB.sn++
	p.rcqB.arm(d, true)
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, 0, 0, inlineSeg([]byte("c")))
	d.Process()
	if ev := d.Events(); len(ev) != 0 {
		t.Fatalf("solicited-only fired on unsolicited: %v", ev)
	}
	p.a.post(tOpSend, tSolicited, 0, inlineSeg([]byte("d")))
	d.Process()
	if ev := d.Events(); len(ev) != 1 {
		t.Fatalf("solicited send: events %v", ev)
	}
	p.rcqB.poll()
	if e := parseTCQE(p.rcqB.poll()); e.se != 1 {
		t.Errorf("SE bit missing: %+v", e)
	}
	// Two CQs armed back to back on the shared register: the overwritten
	// UAR doorbell is recovered from the arm doorbell record.
	p.scqA.sn++
	p.scqA.arm(d, false)
	p.scqB.arm(d, false)
	p.b.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("e")))
	p.b.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("f")))
	p.a.postRecv(dataSeg(8, p.dstMR.key, p.dstMR.addr))
	d.Process()
	ev := d.Events()
	if len(ev) != 2 {
		t.Fatalf("events %v, want send CQs of A and B", ev)
	}
	sa, _ := d.CQStats(p.scqA.cqn)
	sb, _ := d.CQStats(p.scqB.cqn)
	if sa.ArmsFromRecord != 1 || sa.ArmDoorbells != 0 || sb.ArmDoorbells != 1 || sb.Events != 1 {
		t.Errorf("CQ stats A %+v B %+v", sa, sb)
	}
	noErrors(t, d)
}

func TestBlueFlameVerification(t *testing.T) {
	t.Run("corrupted copy", func(t *testing.T) {
		d := newDev(t, Options{BFRegSize: 512})
		p := newPair(t, d, RC, 0, qpOpts{})
		p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
		p.a.useBF = true
		idx, w := p.a.buildWQE(tOpSend, tCQUpdate, 0, inlineSeg([]byte("bf payload")))
		storeBE32(p.a.dbr[4:], uint32(p.a.curPost))
		p.a.ring(idx, w)
		d.UAR()[BFOffset+20] ^= 0xff
		d.Process()
		if errs := d.Errors(); len(errs) != 1 || !errors.Is(errs[0], ErrProtocol) {
			t.Fatalf("errors %v", errs)
		}
	})
	t.Run("doorbell for unposted WQE", func(t *testing.T) {
		d := newDev(t, Options{BFRegSize: 512})
		p := newPair(t, d, RC, 0, qpOpts{})
		idx, w := p.a.buildWQE(tOpNOP, 0, 0)
		p.a.ring(idx, w) // doorbell record not updated
		d.Process()
		if errs := d.Errors(); len(errs) != 1 {
			t.Fatalf("errors %v", errs)
		}
		if st, _ := d.QPStats(p.a.qpn); st.WQEsExecuted != 0 {
			t.Errorf("executed without doorbell record: %+v", st)
		}
	})
	t.Run("BlueFlame without BlueFlame", func(t *testing.T) {
		d := newDev(t, Options{})
		p := newPair(t, d, RC, 0, qpOpts{})
		p.a.useBF = true
		p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
		p.a.post(tOpSend, 0, 0, inlineSeg([]byte("x")))
		d.Process()
		if errs := d.Errors(); len(errs) != 1 {
			t.Fatalf("errors %v", errs)
		}
	})
	t.Run("many posts between passes", func(t *testing.T) {
		// Registers are rewritten several times before the emulator looks:
		// BlueFlame copies and 8-byte doorbells over their remains.
		d := newDev(t, Options{BFRegSize: 256})
		p := newPair(t, d, RC, 0, qpOpts{sqCnt: 64, rqCnt: 64})
		for i := 0; i < 40; i++ {
			p.a.useBF = i%3 != 0
			p.b.postRecv(dataSeg(256, p.dstMR.key, p.dstMR.addr))
			p.a.post(tOpSend, tCQUpdate, 0, inlineSeg(p.srcMR.buf[i:i+1+i%60]))
			if i%10 != 9 {
				continue
			}
			d.Process()
			for j := 0; j < 10; j++ {
				b, r := p.scqA.poll(), p.rcqB.poll()
				if b == nil || r == nil || parseTCQE(b).opcode != tCQEReq {
					t.Fatalf("CQE %d missing or wrong", i-9+j)
				}
			}
		}
		noErrors(t, d)
	})
}

func TestRequireDoorbell(t *testing.T) {
	d := newDev(t, Options{BFRegSize: 512, RequireDoorbell: true})
	p := newPair(t, d, RC, 0, qpOpts{})
	p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
	idx, w := p.a.buildWQE(tOpSend, tCQUpdate, 0, inlineSeg([]byte("late")))
	storeBE32(p.a.dbr[4:], uint32(p.a.curPost))
	d.Process()
	p.scqA.empty(d)
	p.a.ring(idx, w)
	if e := p.scqA.mustPoll(d); e.opcode != tCQEReq {
		t.Errorf("%+v", e)
	}
	noErrors(t, d)
}

func TestUnstampedCQ(t *testing.T) {
	d := newDev(t, Options{})
	if _, err := d.CreateCQ(pageMem(t, 4*64), pageMem(t, 8)); err != nil {
		t.Fatal(err)
	}
	if errs := d.Errors(); len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	if _, err := d.CreateCQ(pageMem(t, 3*64), pageMem(t, 8)); !errors.Is(err, unix.EINVAL) {
		t.Errorf("3 CQEs: %v", err)
	}
}

func TestRegisterMRChecks(t *testing.T) {
	d := newDev(t, Options{})
	if _, _, err := d.RegisterMR(pageMem(t, 64), AccessRemoteWrite, 1); !errors.Is(err, unix.EINVAL) {
		t.Errorf("remote write without local write: %v", err)
	}
	if _, _, err := d.RegisterMR(nil, 0, 1); !errors.Is(err, unix.EINVAL) {
		t.Errorf("empty: %v", err)
	}
	seen := map[uint32]bool{}
	for i := 0; i < 600; i++ {
		k, _, err := d.RegisterMR(make([]byte, 8), 0, 1)
		if err != nil || k == 0x100 || seen[k] {
			t.Fatalf("key %#x err %v", k, err)
		}
		seen[k] = true
	}
	if err := d.DeregisterMR(0x42); !errors.Is(err, unix.EINVAL) {
		t.Errorf("deregister unknown: %v", err)
	}
}

// TestBackground drives traffic against the background engine; run with
// -race. The test only blocks on CQEs (bounded by the sends), never on time.
func TestBackground(t *testing.T) {
	d := newDev(t, Options{BFRegSize: 512})
	p := newPair(t, d, RC, RNRRetryInfinite, qpOpts{sqCnt: 16, rqCnt: 16})
	p.a.useBF = true
	d.Start()
	defer d.Stop()
	const n = 300
	for i := 0; i < n; i++ {
		off := uint64(i%16) * 256
		p.b.postRecv(dataSeg(256, p.dstMR.key, p.dstMR.addr+off))
		p.a.post(tOpSend, tCQUpdate, uint32(i), dataSeg(uint32(1+i%200), p.srcMR.key, p.srcMR.addr+uint64(i)))
		var req, resp []byte
		for req == nil {
			runtime.Gosched()
			req = p.scqA.poll()
		}
		for resp == nil {
			runtime.Gosched()
			resp = p.rcqB.poll()
		}
		if e := parseTCQE(resp); e.byteCnt != uint32(1+i%200) {
			t.Fatalf("send %d: %+v", i, e)
		}
		if !bytes.Equal(p.dstMR.buf[off:off+uint64(1+i%200)], p.srcMR.buf[i:i+1+i%200]) {
			t.Fatalf("send %d: data", i)
		}
	}
	// Completion events with the engine running: wait on the channel.
	p.rcqB.arm(d, false)
	p.b.postRecv(dataSeg(256, p.dstMR.key, p.dstMR.addr))
	p.a.post(tOpSend, 0, 0, inlineSeg([]byte("event")))
	<-d.EventReady()
	if ev := d.Events(); len(ev) != 1 || ev[0] != p.rcqB.cqn {
		t.Errorf("events %v", ev)
	}
	d.Stop()
	st, _ := d.QPStats(p.a.qpn)
	if st.WQEsExecuted != n+1 || st.BlueFlameWrites+st.Doorbells+st.UnverifiedUARWrites > n+1 || st.BlueFlameWrites == 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("background stats %+v", st)
	noErrors(t, d)
}

// TestWrapMidWQE places multi-block WQEs across the SQ end: inline data,
// data segments and the remote address segment wrap to block 0.
func TestWrapMidWQE(t *testing.T) {
	for _, bf := range []bool{false, true} {
		d := newDev(t, Options{BFRegSize: 512})
		p := newPair(t, d, RC, 0, qpOpts{sqCnt: 4})
		p.a.useBF = bf
		for i := 0; i < 3; i++ {
			p.a.post(tOpNOP, 0, 0)
		}
		d.Process() // the driver may reuse the blocks once they completed
		p.b.postRecv(dataSeg(256, p.dstMR.key, p.dstMR.addr))
		idx := p.a.post(tOpSend, tCQUpdate, 0, inlineSeg(p.srcMR.buf[:100])) // blocks 3, 0
		if idx != 3 {
			t.Fatalf("idx %d", idx)
		}
		if e := p.scqA.mustPoll(d); e.wqeCounter != 3 || e.opcode != tCQEReq {
			t.Fatalf("%+v", e)
		}
		if e := p.rcqB.mustPoll(d); e.byteCnt != 100 || !bytes.Equal(p.dstMR.buf[:100], p.srcMR.buf[:100]) {
			t.Fatalf("inline across the SQ end: %+v", e)
		}
		p.a.post(tOpNOP, 0, 0) // block 1
		p.a.post(tOpNOP, 0, 0) // block 2
		// ctrl at block 3, raddr and 6 data segments in blocks 0-1.
		segs := [][]byte{raddrSeg(p.dstMR.addr+4000, p.dstMR.key)}
		for i := 0; i < 6; i++ {
			segs = append(segs, dataSeg(10, p.srcMR.key, p.srcMR.addr+uint64(i*20)))
		}
		if idx := p.a.post(tOpRDMAWrite, tCQUpdate, 0, segs...); idx != 7 {
			t.Fatalf("idx %d", idx)
		}
		if e := p.scqA.mustPoll(d); e.wqeCounter != 7 || e.byteCnt != 60 {
			t.Fatalf("%+v", e)
		}
		for i := 0; i < 6; i++ {
			if !bytes.Equal(p.dstMR.buf[4000+i*10:4010+i*10], p.srcMR.buf[i*20:i*20+10]) {
				t.Fatalf("segment %d", i)
			}
		}
		// Seven writes, two of them lost to rewrites of the same half before
		// a pass (NOP, NOP, NOP | SEND | NOP, NOP, WRITE). A BlueFlame copy
		// of a NOP (ds 1, zero tail) cannot be told from a doorbell.
		st, _ := d.QPStats(p.a.qpn)
		if st.Doorbells+st.BlueFlameWrites != 5 || bf && st.BlueFlameWrites != 2 {
			t.Errorf("bf=%v %+v", bf, st)
		}
		noErrors(t, d)
	}
}

// TestUARPages gives each QP its own register on its own page, with
// RequireDoorbell, and arms CQs through a second page.
func TestUARPages(t *testing.T) {
	d := newDev(t, Options{BFRegSize: 512, UARPages: 3, RequireDoorbell: true})
	p := newPair(t, d, RC, 0, qpOpts{})
	p.a.uarPage, p.b.uarPage = 1, 2
	p.a.useBF = true
	for i := 0; i < 10; i++ {
		p.a.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
		p.b.postRecv(dataSeg(64, p.dstMR.key, p.dstMR.addr))
		p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("ping")))
		p.b.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("pong")))
	}
	d.Process()
	for i := 0; i < 10; i++ {
		for _, c := range []*tCQ{p.scqA, p.scqB, p.rcqA, p.rcqB} {
			if c.poll() == nil {
				t.Fatalf("round %d: CQ %#x empty", i, c.cqn)
			}
		}
	}
	sa, _ := d.QPStats(p.a.qpn)
	sb, _ := d.QPStats(p.b.qpn)
	// Both halves of a register alternate, so the last two writes survive.
	if sa.BlueFlameWrites != 2 || sb.Doorbells != 2 {
		t.Errorf("A %+v B %+v", sa, sb)
	}
	noErrors(t, d)
}

func TestArmRecordMismatch(t *testing.T) {
	d := newDev(t, Options{})
	c := newCQ(t, d, 4)
	c.arm(d, false)
	storeBE32(c.dbr[4:], 0x30000000)
	d.Process()
	if errs := d.Errors(); len(errs) != 1 || !errors.Is(errs[0], ErrProtocol) {
		t.Fatalf("errors %v", errs)
	}
}

func TestConsumerIndexAhead(t *testing.T) {
	d := newDev(t, Options{})
	p := newPair(t, d, RC, 0, qpOpts{})
	p.rcqB.ci = 5 // claims five CQEs consumed, none written
	p.rcqB.arm(d, false)
	d.Process()
	storeBE32(p.scqA.dbr[0:], 3)
	p.a.post(tOpNOP, tCQUpdate, 0)
	d.Process()
	if errs := d.Errors(); len(errs) != 2 {
		t.Fatalf("errors %v", errs)
	}
	if !d.CQOverrun(p.scqA.cqn) {
		t.Error("bogus set_ci must put the CQ in error")
	}
}

func TestUC(t *testing.T) {
	d := newDev(t, Options{})
	p := newPair(t, d, UC, 0, qpOpts{})
	// No receive posted: the message is dropped, the sender completes.
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("lost")))
	if e := p.scqA.mustPoll(d); e.opcode != tCQEReq {
		t.Errorf("%+v", e)
	}
	p.rcqB.empty(d)
	// WRITE_IMM consumes a receive.
	p.b.postRecv()
	p.a.post(tOpRDMAWriteImm, tCQUpdate, 7, raddrSeg(p.dstMR.addr, p.dstMR.key), inlineSeg([]byte("uc")))
	if e := p.rcqB.mustPoll(d); e.opcode != tCQERespWrImm || e.imm != 7 || e.byteCnt != 2 || string(p.dstMR.buf[:2]) != "uc" {
		t.Errorf("%+v", e)
	}
	p.scqA.mustPoll(d)
	// RDMA READ is not a UC operation: local QP operation error.
	p.a.post(tOpRDMARead, 0, 0, raddrSeg(p.dstMR.addr, p.dstMR.key), dataSeg(8, p.rdMR.key, p.rdMR.addr))
	if e := p.scqA.mustPoll(d); e.opcode != tCQEReqErr || e.syndrome != 0x02 {
		t.Errorf("%+v", e)
	}
	if errs := d.Errors(); len(errs) != 1 {
		t.Errorf("errors %v", errs)
	}
}

func TestSRQEmptyIsRNR(t *testing.T) {
	d := newDev(t, Options{})
	srqn, _, _ := newSRQ(t, d, 4, 6, 0) // nothing posted
	p := newPair(t, d, RC, 1, qpOpts{srqn: srqn})
	p.a.post(tOpSend, tCQUpdate, 0, inlineSeg([]byte("x")))
	d.Process() // first attempt: RNR, one retry left
	if b := p.scqA.poll(); b != nil {
		t.Fatalf("completion after the first attempt: %+v", parseTCQE(b))
	}
	d.Process() // the retry fails too
	if e := parseTCQE(p.scqA.poll()); e.opcode != tCQEReqErr || e.syndrome != 0x16 {
		t.Errorf("%+v", e)
	}
	// Flushing the requester leaves the SRQ alone (nothing to flush there).
	if s, _ := d.QPState(p.b.qpn); s != StateRTS {
		t.Errorf("responder state %v", s)
	}
	noErrors(t, d)
}

func TestIdle(t *testing.T) {
	d := newDev(t, Options{BFRegSize: 512})
	p := newPair(t, d, RC, 0, qpOpts{})
	if n := d.Process(); n != 0 {
		t.Errorf("idle device did %d units of work", n)
	}
	p.a.post(tOpNOP, 0, 0)
	if n := d.Process(); n != 2 { // the doorbell and the WQE
		t.Errorf("work %d", n)
	}
	if n := d.Process(); n != 0 {
		t.Errorf("work %d after the NOP", n)
	}
	noErrors(t, d)
}
