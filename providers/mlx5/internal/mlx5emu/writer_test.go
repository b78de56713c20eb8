package mlx5emu

// A tiny, independent mlx5 "driver" for the tests: WQE/segment writers,
// doorbell and BlueFlame writers, and a CQ poller, written from the
// layouts of mlx5dv.h (offsets noted beside each field).

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mlx5dv.h constants, spelled independently of the package's own.
const (
	tOpNOP          = 0x00
	tOpSendInval    = 0x01
	tOpRDMAWrite    = 0x08
	tOpRDMAWriteImm = 0x09
	tOpSend         = 0x0a
	tOpSendImm      = 0x0b
	tOpRDMARead     = 0x10
	tOpAtomicCS     = 0x11
	tOpAtomicFA     = 0x12

	tCQUpdate  = 2 << 2 // MLX5_WQE_CTRL_CQ_UPDATE
	tSolicited = 1 << 1 // MLX5_WQE_CTRL_SOLICITED
	tFence     = 4 << 5 // MLX5_WQE_CTRL_FENCE

	tCQEReq         = 0
	tCQERespWrImm   = 1
	tCQERespSend    = 2
	tCQERespSendImm = 3
	tCQERespSendInv = 4
	tCQEReqErr      = 13
	tCQERespErr     = 14
	tCQEInvalid     = 15
)

func be32b(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// pageMem returns n bytes of page-aligned anonymous memory.
func pageMem(t testing.TB, n int) []byte {
	t.Helper()
	size := (n + 4095) &^ 4095
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap %d: %v", size, err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b[:n]
}

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

func storeBE32(b []byte, v uint32) {
	var t [4]byte
	binary.BigEndian.PutUint32(t[:], v)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), binary.NativeEndian.Uint32(t[:]))
}

func store64(b []byte, raw []byte) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&b[0])), binary.NativeEndian.Uint64(raw))
}

// --- segments (struct mlx5_wqe_*_seg) ---

// dataSeg: byte_count be32 @0, lkey be32 @4, addr be64 @8.
func dataSeg(length, lkey uint32, a uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint32(b[0:], length)
	binary.BigEndian.PutUint32(b[4:], lkey)
	binary.BigEndian.PutUint64(b[8:], a)
	return b
}

// raddrSeg: raddr be64 @0, rkey be32 @8, reserved @12.
func raddrSeg(a uint64, rkey uint32) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b[0:], a)
	binary.BigEndian.PutUint32(b[8:], rkey)
	return b
}

// atomicSeg: swap_add be64 @0, compare be64 @8.
func atomicSeg(swapAdd, compare uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b[0:], swapAdd)
	binary.BigEndian.PutUint64(b[8:], compare)
	return b
}

// inlineSeg: byte_count be32 = len | MLX5_INLINE_SEG, data, padded to 16.
func inlineSeg(data []byte) []byte {
	n := (4 + len(data) + 15) &^ 15
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b[0:], uint32(len(data))|0x80000000)
	copy(b[4:], data)
	return b
}

// udAV is struct mlx5_wqe_av: qkey be32 @0, dqp_dct be32 @8, stat_rate_sl @12,
// fl_mlid @13, rlid be16 @14, rmac @20, tclass @26, hop_limit @27,
// grh_gid_fl be32 @28, rgid @32.
func udAV(qkey, dqpn uint32, sl uint8, grh bool, rgid [16]byte) []byte {
	b := make([]byte, 48)
	binary.BigEndian.PutUint32(b[0:], qkey)
	binary.BigEndian.PutUint32(b[8:], dqpn|0x80000000)
	b[12] = sl & 0xf
	if grh {
		b[26] = 0x20
		b[27] = 64
		binary.BigEndian.PutUint32(b[28:], 1<<30|0x12345)
		copy(b[32:], rgid[:])
	}
	return b
}

// --- queues ---

type tQP struct {
	t       testing.TB
	d       *Device
	qpn     uint32
	buf     []byte
	dbr     []byte
	rq, sq  []byte
	rqCnt   int
	rqShift int
	sqCnt   int
	curPost uint16 // SQ position in basic blocks
	rqHead  uint16
	uarPage int // UAR page of this QP's register
	bfOff   int // offset of this QP's register inside the page
	bfHalf  int
	useBF   bool
}

type qpOpts struct {
	typ     QPType
	sqCnt   int
	rqCnt   int
	rqShift int
	srqn    uint32
	scatter bool
	uidx    uint32
	pdn     uint32
}

func newQP(t testing.TB, d *Device, scq, rcq uint32, o qpOpts) *tQP {
	t.Helper()
	if o.sqCnt == 0 {
		o.sqCnt = 16
	}
	if o.rqShift == 0 {
		o.rqShift = 6
	}
	if o.srqn != 0 {
		o.rqCnt = 0
	} else if o.rqCnt == 0 {
		o.rqCnt = 16
	}
	rqSize := o.rqCnt << o.rqShift
	if o.rqCnt == 0 {
		rqSize = 0
	}
	buf := pageMem(t, rqSize+o.sqCnt*64)
	dbr := pageMem(t, 64)[:8]
	qpn, err := d.CreateQP(QPConfig{
		Type: o.typ, PDN: o.pdn, Buf: buf, SQWQECnt: o.sqCnt, RQWQECnt: o.rqCnt, RQWQEShift: o.rqShift,
		DBR: dbr, SendCQN: scq, RecvCQN: rcq, SRQN: o.srqn, UIDX: o.uidx, ScatterToCQE: o.scatter,
	})
	if err != nil {
		t.Fatalf("create QP: %v", err)
	}
	return &tQP{t: t, d: d, qpn: qpn, buf: buf, dbr: dbr, rq: buf[:rqSize], sq: buf[rqSize:],
		rqCnt: o.rqCnt, rqShift: o.rqShift, sqCnt: o.sqCnt, bfOff: BFOffset}
}

func (q *tQP) modify(a QPAttr) {
	q.t.Helper()
	if err := q.d.ModifyQP(q.qpn, a); err != nil {
		q.t.Fatalf("modify QP %#x: %v", q.qpn, err)
	}
}

// connect brings two RC/UC QPs (or one UD QP with dst nil) to RTS.
func connect(t testing.TB, a, b *tQP, access Access, rnrRetry int) {
	t.Helper()
	for _, p := range [][2]*tQP{{a, b}, {b, a}} {
		p[0].modify(QPAttr{State: StateInit, Access: access})
		p[0].modify(QPAttr{State: StateRTR, DestQPN: p[1].qpn})
		p[0].modify(QPAttr{State: StateRTS, RNRRetry: rnrRetry, RetryCnt: 7})
	}
}

func toRTS(q *tQP, qkey uint32) {
	q.modify(QPAttr{State: StateInit, QKey: qkey})
	q.modify(QPAttr{State: StateRTR})
	q.modify(QPAttr{State: StateRTS})
}

// buildWQE writes ctrl + segs at curPost (wrapping) and returns its index
// and bytes. The ctrl segment: opmod_idx_opcode be32 @0, qpn_ds be32 @4,
// signature @8, dci_stream @9, fm_ce_se @11, imm be32 @12.
func (q *tQP) buildWQE(opcode uint8, fm uint8, imm uint32, segs ...[]byte) (uint16, []byte) {
	w := make([]byte, 16)
	for _, s := range segs {
		w = append(w, s...)
	}
	ds := len(w) / 16
	idx := q.curPost
	binary.BigEndian.PutUint32(w[0:], uint32(idx)<<8|uint32(opcode))
	binary.BigEndian.PutUint32(w[4:], q.qpn<<8|uint32(ds))
	w[11] = fm
	binary.BigEndian.PutUint32(w[12:], imm)
	size := q.sqCnt * 64
	start := int(idx) & (q.sqCnt - 1) * 64
	for i, b := range w {
		q.sq[(start+i)%size] = b
	}
	q.curPost += uint16((len(w) + 63) / 64)
	return idx, w
}

// post writes a WQE, updates the SQ doorbell record and rings the doorbell
// (8-byte write, or BlueFlame when q.useBF) at the alternating halves.
func (q *tQP) post(opcode uint8, fm uint8, imm uint32, segs ...[]byte) uint16 {
	idx, w := q.buildWQE(opcode, fm, imm, segs...)
	storeBE32(q.dbr[4:], uint32(q.curPost))
	q.ring(idx, w)
	return idx
}

func (q *tQP) ring(idx uint16, w []byte) {
	uar := q.d.UARPage(q.uarPage)
	reg := q.bfOff + q.bfHalf
	if q.useBF {
		nbb := (len(w) + 63) / 64
		size := q.sqCnt * 64
		for c := 0; c < nbb*64; c += 8 {
			p := (int(idx)*64 + c) % size
			store64(uar[reg+c:], q.sq[p:p+8])
		}
	} else {
		store64(uar[reg:], w[:8])
	}
	if bs := q.d.BFRegSize() / 2; bs > 0 {
		q.bfHalf ^= bs
	}
}

// postRecv writes an RQ WQE of data segments (end marker when shorter).
func (q *tQP) postRecv(segs ...[]byte) uint16 {
	max := 1 << q.rqShift / 16
	base := int(q.rqHead) & (q.rqCnt - 1) << q.rqShift
	wq := q.rq[base : base+1<<q.rqShift]
	clear(wq)
	for i, s := range segs {
		copy(wq[i*16:], s)
	}
	if len(segs) < max {
		copy(wq[len(segs)*16:], dataSeg(0, 0x100, 0))
	}
	c := q.rqHead
	q.rqHead++
	storeBE32(q.dbr[0:], uint32(q.rqHead))
	return c
}

type tCQ struct {
	t    testing.TB
	cqn  uint32
	buf  []byte
	dbr  []byte
	ncqe uint32
	ci   uint32
	sn   uint32
}

func newCQ(t testing.TB, d *Device, ncqe int) *tCQ {
	t.Helper()
	buf := pageMem(t, ncqe*64)
	for i := 0; i < ncqe; i++ {
		buf[i*64+63] = tCQEInvalid << 4
	}
	dbr := pageMem(t, 64)[:8]
	cqn, err := d.CreateCQ(buf, dbr)
	if err != nil {
		t.Fatalf("create CQ: %v", err)
	}
	return &tCQ{t: t, cqn: cqn, buf: buf, dbr: dbr, ncqe: uint32(ncqe)}
}

// poll returns a copy of the next software-owned CQE and advances the
// consumer index (updating set_ci), or nil.
func (c *tCQ) poll() []byte {
	slot := c.ci & (c.ncqe - 1)
	b := c.buf[slot*64 : slot*64+64]
	last := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[60])))
	var lb [4]byte
	binary.NativeEndian.PutUint32(lb[:], last)
	opOwn := lb[3]
	if opOwn>>4 == tCQEInvalid || (opOwn&1 == 1) != (c.ci&c.ncqe != 0) {
		return nil
	}
	out := append([]byte(nil), b...)
	c.ci++
	storeBE32(c.dbr[0:], c.ci&0xffffff)
	return out
}

// arm writes the arm doorbell record and the UAR doorbell at 0x20.
func (c *tCQ) arm(d *Device, solicited bool) {
	cmd := uint32(0)
	if solicited {
		cmd = 1 << 24
	}
	w := (c.sn&3)<<28 | cmd | c.ci&0xffffff
	storeBE32(c.dbr[4:], w)
	var raw [8]byte
	binary.BigEndian.PutUint32(raw[0:], w)
	binary.BigEndian.PutUint32(raw[4:], c.cqn)
	store64(d.UAR()[0x20:], raw[:])
}

// parsed CQE fields (struct mlx5_cqe64 / mlx5_err_cqe offsets).
type tCQE struct {
	opcode, owner, se, format uint8
	qpn                       uint32
	sqOpcode                  uint8
	wqeCounter                uint16
	byteCnt                   uint32
	imm                       uint32
	srqnUidx                  uint32
	flagsRqpn                 uint32
	slid                      uint16
	syndrome, vendor          uint8
}

func parseTCQE(b []byte) tCQE {
	return tCQE{
		opcode: b[63] >> 4, owner: b[63] & 1, se: b[63] >> 1 & 1, format: b[63] >> 2 & 3,
		qpn: be32(b[56:]) & 0xffffff, sqOpcode: b[56], wqeCounter: be16(b[60:]),
		byteCnt: be32(b[44:]), imm: be32(b[36:]), srqnUidx: be32(b[32:]),
		flagsRqpn: be32(b[24:]), slid: be16(b[22:]), syndrome: b[55], vendor: b[54],
	}
}

// mustPoll processes the device until a CQE arrives (bounded by count, not time).
func (c *tCQ) mustPoll(d *Device) tCQE {
	c.t.Helper()
	for i := 0; i < 4; i++ {
		if b := c.poll(); b != nil {
			return parseTCQE(b)
		}
		d.Process()
	}
	c.t.Fatalf("CQ %#x: no CQE", c.cqn)
	return tCQE{}
}

func (c *tCQ) empty(d *Device) {
	c.t.Helper()
	d.Process()
	if b := c.poll(); b != nil {
		c.t.Fatalf("CQ %#x: unexpected CQE %+v", c.cqn, parseTCQE(b))
	}
}

type tMR struct {
	buf  []byte
	key  uint32
	addr uint64
}

func newMR(t testing.TB, d *Device, n int, access Access, pdn uint32) tMR {
	t.Helper()
	b := pageMem(t, n)
	l, r, err := d.RegisterMR(b, access, pdn)
	if err != nil {
		t.Fatalf("register MR: %v", err)
	}
	if l != r {
		t.Fatalf("lkey %#x != rkey %#x", l, r)
	}
	return tMR{buf: b, key: l, addr: addr(b)}
}

func noErrors(t testing.TB, d *Device) {
	t.Helper()
	if errs := d.Errors(); len(errs) != 0 {
		t.Fatalf("emulated device errors: %v", errs)
	}
}
