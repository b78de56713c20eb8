package mlx5emu

import (
	"encoding/binary"
	"sync/atomic"
)

// Send WQE opcodes (mlx5_wqe_ctrl_seg opcode byte) and fm_ce_se bits.
const (
	opNOP          = 0x00
	opSendInval    = 0x01
	opRDMAWrite    = 0x08
	opRDMAWriteImm = 0x09
	opSend         = 0x0a
	opSendImm      = 0x0b
	opRDMARead     = 0x10
	opAtomicCS     = 0x11
	opAtomicFA     = 0x12

	ctrlCQUpdate  = 0x08
	ctrlSolicited = 0x02

	invalidLKey   = 0x100
	inlineSegFlag = 0x80000000
	extendedUDAV  = 0x80000000
	grhBytes      = 40
)

type sge struct {
	addr uint64
	len  uint32
	lkey uint32
	// inline holds the data of an inline segment (then addr/len/lkey
	// are unused); hasInl marks it.
	inline []byte
	hasInl bool
}

type av struct {
	qkey     uint32
	dqp      uint32
	extended bool
	sl       uint8
	grh      bool
	tclass   uint8
	hopLimit uint8
	flow     uint32
	rgid     [16]byte
}

// wqe is a parsed send WQE.
type wqe struct {
	idx    uint16
	opcode uint8
	ds     int
	nbb    int
	fm     uint8
	imm    uint32
	raddr  uint64
	rkey   uint32
	swap   uint64
	cmp    uint64
	av     av
	sges   []sge // data and inline segments in WQE order
	hasInl bool
}

func (w *wqe) signaled() bool { return w.fm&ctrlCQUpdate != 0 }

// parseCtrl decodes the first 8 bytes of a ctrl segment.
func parseCtrl(b []byte) (opcode uint8, idx uint16, qpn uint32, ds int) {
	a, c := be32(b[0:]), be32(b[4:])
	return uint8(a), uint16(a >> 8), c >> 8, int(c & 0x3f)
}

// parseWQE decodes the segments of a WQE of a QP of type t; raw holds its
// basic blocks (already unwrapped). ok is false when the layout does not
// match the opcode (LOC_QP_OP_ERR).
func parseWQE(t QPType, raw []byte) (w wqe, why string) {
	w.opcode, w.idx, _, w.ds = parseCtrl(raw)
	w.nbb = (w.ds*16 + 63) / 64
	w.fm = raw[11]
	w.imm = be32(raw[12:])
	end := w.ds * 16
	p := 16
	need := func(n int) bool { return p+n <= end }
	if t == UD && w.opcode != opNOP {
		if !need(48) {
			return w, "UD WQE without a 48-byte address vector"
		}
		a := raw[p : p+48]
		w.av.qkey = be32(a[0:])
		dqp := be32(a[8:])
		w.av.extended = dqp&extendedUDAV != 0
		w.av.dqp = dqp & 0xffffff
		w.av.sl = a[12] & 0xf
		gf := be32(a[28:])
		w.av.grh = gf&(1<<30) != 0
		w.av.flow = gf & 0xfffff
		w.av.tclass = a[26]
		w.av.hopLimit = a[27]
		copy(w.av.rgid[:], a[32:48])
		p += 48
	}
	switch w.opcode {
	case opRDMAWrite, opRDMAWriteImm, opRDMARead, opAtomicCS, opAtomicFA:
		if !need(16) {
			return w, "missing remote address segment"
		}
		w.raddr = be64(raw[p:])
		w.rkey = be32(raw[p+8:])
		p += 16
	}
	if w.opcode == opAtomicCS || w.opcode == opAtomicFA {
		if !need(16) {
			return w, "missing atomic segment"
		}
		w.swap = be64(raw[p:])
		w.cmp = be64(raw[p+8:])
		p += 16
	}
	for p < end {
		bc := be32(raw[p:])
		if bc&inlineSegFlag != 0 {
			n := int(bc &^ inlineSegFlag)
			if p+4+n > end {
				return w, "inline data runs past ds"
			}
			w.sges = append(w.sges, sge{inline: raw[p+4 : p+4+n], hasInl: true})
			w.hasInl = true
			p += (4 + n + 15) &^ 15
			continue
		}
		if !need(16) {
			return w, "truncated data segment"
		}
		w.sges = append(w.sges, sge{len: bc, lkey: be32(raw[p+4:]), addr: be64(raw[p+8:])})
		p += 16
	}
	return w, ""
}

func opcodeAllowed(t QPType, op uint8) bool {
	switch op {
	case opNOP, opSend, opSendImm:
		return true
	case opSendInval, opRDMAWrite, opRDMAWriteImm:
		return t == RC || t == UC
	case opRDMARead, opAtomicCS, opAtomicFA:
		return t == RC
	}
	return false
}

// runQP executes or flushes the new work of one QP.
func (d *Device) runQP(q *qp) int {
	sqPI := uint16(loadBE32(q.cfg.DBR[4:]))
	rqPI := uint16(loadBE32(q.cfg.DBR[0:]))
	switch q.state {
	case StateError:
		return d.flushQP(q)
	case StateReset:
		if (sqPI != q.sqCI || rqPI != q.rqCI) && !q.warned {
			q.warned = true
			d.protoErr("QP %#x: doorbell record advanced (RQ %#x, SQ %#x) while in RESET", q.qpn, rqPI, sqPI)
		}
		return 0
	case StateInit, StateRTR:
		if sqPI != q.sqCI && !q.warned {
			q.warned = true
			d.protoErr("QP %#x: SQ doorbell record advanced to %#x while in %v (send queue usable in RTS only)", q.qpn, sqPI, q.state)
		}
		return 0
	}
	work := 0
	for q.state == StateRTS {
		pi := uint16(loadBE32(q.cfg.DBR[4:]))
		limit := pi
		if d.opts.RequireDoorbell && uint16(q.dbLimit-q.sqCI) < uint16(pi-q.sqCI) {
			limit = q.dbLimit
		}
		if q.sqCI == limit {
			break
		}
		avail := int(uint16(limit - q.sqCI))
		if avail > q.sqCnt {
			if !q.warned {
				q.warned = true
				d.protoErr("QP %#x: SQ doorbell record %#x is more than a ring (%d blocks) ahead of %#x", q.qpn, pi, q.sqCnt, q.sqCI)
			}
			break
		}
		pos := int(q.sqCI) & (q.sqCnt - 1)
		opcode, idx, qpn, ds := parseCtrl(q.sq[pos*64:])
		nbb := (ds*16 + 63) / 64
		if idx != q.sqCI || qpn != q.qpn || ds == 0 || nbb > avail {
			d.protoErr("QP %#x WQE at %#x: ctrl says index %#x, QPN %#x, ds %d (%d blocks posted)", q.qpn, q.sqCI, idx, qpn, ds, avail)
			if nbb == 0 || nbb > avail {
				nbb = 1
			}
			w := wqe{idx: q.sqCI, opcode: opcode, nbb: nbb}
			d.failReq(q, &w, synLocQPOp)
			d.retire(q, &w, q.wqeBytes(q.sq, q.sqCI, nbb))
			break
		}
		raw := q.wqeBytes(q.sq, q.sqCI, nbb)
		w, why := parseWQE(q.cfg.Type, raw)
		if why != "" {
			d.protoErr("QP %#x WQE %#x opcode %#x: %s", q.qpn, idx, opcode, why)
			d.failReq(q, &w, synLocQPOp)
		} else if stall := d.execute(q, &w); stall {
			break
		}
		d.retire(q, &w, raw)
		work++
	}
	if q.state == StateError {
		work += d.flushQP(q)
	}
	return work
}

// retire advances the SQ past an executed WQE and keeps its bytes in the shadow.
func (d *Device) retire(q *qp, w *wqe, raw []byte) {
	for i := 0; i < w.nbb; i++ {
		p := (int(w.idx) + i) & (q.sqCnt - 1)
		copy(q.shadow[p*64:p*64+64], raw[i*64:])
		q.shadowIdx[p] = -1
	}
	q.shadowIdx[int(w.idx)&(q.sqCnt-1)] = int32(w.idx)
	q.sqCI = w.idx + uint16(w.nbb)
	if uint16(q.dbLimit-q.sqCI) > uint16(q.sqCnt) {
		q.dbLimit = q.sqCI
	}
	q.rnrUsed = 0
	q.stats.WQEsExecuted++
}

func (d *Device) uidx(q *qp, s *srq) uint32 {
	if d.opts.CQEVersionZero {
		if s != nil {
			return s.srqn
		}
		return 0
	}
	return q.cfg.UIDX
}

func (d *Device) completeReq(q *qp, w *wqe, byteCnt uint32) {
	if !w.signaled() {
		return
	}
	d.pushCQE(d.cqs[q.cfg.SendCQN], &cqe{
		opcode: cqeReq, sqOpcode: w.opcode, wqeCounter: w.idx, qpn: q.qpn,
		byteCnt: byteCnt, srqnUidx: d.uidx(q, nil),
	})
}

// failReq completes a WQE in error and moves its QP to ERROR (the rest of
// the SQ is flushed by runQP).
func (d *Device) failReq(q *qp, w *wqe, syndrome uint8) {
	d.pushCQE(d.cqs[q.cfg.SendCQN], &cqe{
		opcode: cqeReqErr, syndrome: syndrome, sqOpcode: w.opcode, wqeCounter: w.idx,
		qpn: q.qpn, srqnUidx: d.uidx(q, nil),
	})
	q.state = StateError
}

// responderError moves a responder QP to ERROR. Its queues are flushed now
// unless it is the QP being executed (runQP flushes that one after
// retiring the current WQE).
func (d *Device) responderError(dst, running *qp) {
	dst.state = StateError
	if dst != running {
		d.flushQP(dst)
	}
}

// flushQP completes every outstanding WQE of a QP in ERROR with WR_FLUSH_ERR.
func (d *Device) flushQP(q *qp) int {
	work := 0
	for {
		pi := uint16(loadBE32(q.cfg.DBR[4:]))
		if q.sqCI == pi {
			break
		}
		avail := int(uint16(pi - q.sqCI))
		pos := int(q.sqCI) & (q.sqCnt - 1)
		opcode, idx, qpn, ds := parseCtrl(q.sq[pos*64:])
		nbb := (ds*16 + 63) / 64
		if avail > q.sqCnt || idx != q.sqCI || qpn != q.qpn || ds == 0 || nbb > avail {
			d.protoErr("QP %#x: cannot flush WQE at %#x (ctrl index %#x, QPN %#x, ds %d, %d blocks posted)", q.qpn, q.sqCI, idx, qpn, ds, avail)
			q.sqCI = pi
			break
		}
		d.pushCQE(d.cqs[q.cfg.SendCQN], &cqe{
			opcode: cqeReqErr, syndrome: synWRFlush, sqOpcode: opcode, wqeCounter: idx,
			qpn: q.qpn, srqnUidx: d.uidx(q, nil),
		})
		w := wqe{idx: idx, nbb: nbb}
		d.retire(q, &w, q.wqeBytes(q.sq, idx, nbb))
		q.stats.WQEsExecuted--
		q.stats.WQEsFlushed++
		work++
	}
	if q.cfg.SRQN == 0 && q.cfg.RQWQECnt > 0 {
		pi := uint16(loadBE32(q.cfg.DBR[0:]))
		if int(uint16(pi-q.rqCI)) > q.cfg.RQWQECnt {
			d.protoErr("QP %#x: RQ doorbell record %#x is more than a ring ahead of %#x", q.qpn, pi, q.rqCI)
			q.rqCI = pi
		}
		for q.rqCI != pi {
			d.pushCQE(d.cqs[q.cfg.RecvCQN], &cqe{
				opcode: cqeRespErr, syndrome: synWRFlush, wqeCounter: q.rqCI,
				qpn: q.qpn, srqnUidx: d.uidx(q, nil),
			})
			q.rqCI++
			q.stats.RecvsFlushed++
			work++
		}
	}
	return work
}

// gather collects the outgoing payload of a SEND/WRITE WQE.
func (d *Device) gather(q *qp, w *wqe) ([]byte, bool) {
	var out []byte
	for _, s := range w.sges {
		if s.hasInl {
			out = append(out, s.inline...)
			continue
		}
		if s.len == 0 {
			continue
		}
		b, ok := d.lookup(s.lkey, q.cfg.PDN, s.addr, s.len, 0)
		if !ok {
			return nil, false
		}
		out = append(out, b...)
	}
	return out, true
}

// execute runs one WQE of an RTS QP. stall reports an RNR wait: the WQE
// stays at the head of the SQ for the next Process call.
func (d *Device) execute(q *qp, w *wqe) (stall bool) {
	if !opcodeAllowed(q.cfg.Type, w.opcode) {
		d.protoErr("QP %#x (%v) WQE %#x: opcode %#x not supported or not modelled", q.qpn, q.cfg.Type, w.idx, w.opcode)
		d.failReq(q, w, synLocQPOp)
		return false
	}
	switch w.opcode {
	case opNOP:
		d.completeReq(q, w, 0)
		return false
	case opRDMARead, opAtomicCS, opAtomicFA:
		if w.hasInl {
			d.protoErr("QP %#x WQE %#x: inline data on opcode %#x", q.qpn, w.idx, w.opcode)
			d.failReq(q, w, synLocQPOp)
			return false
		}
	}
	if q.cfg.Type == UD && !w.av.extended {
		d.protoErr("QP %#x WQE %#x: address vector without MLX5_EXTENDED_UD_AV", q.qpn, w.idx)
		d.failReq(q, w, synLocQPOp)
		return false
	}
	var payload []byte
	if w.opcode != opRDMARead && w.opcode != opAtomicCS && w.opcode != opAtomicFA {
		var ok bool
		if payload, ok = d.gather(q, w); !ok {
			d.failReq(q, w, synLocProt)
			return false
		}
		if q.cfg.Type == UD && len(payload) > d.opts.MTU {
			d.failReq(q, w, synLocLen)
			return false
		}
	}
	dst := d.target(q, w)
	if dst == nil {
		if q.cfg.Type == RC {
			// Nobody answers: the transport retries run out.
			d.failReq(q, w, synRetryExc)
		} else {
			d.completeReq(q, w, uint32(len(payload)))
		}
		return false
	}
	switch w.opcode {
	case opSend, opSendImm, opSendInval:
		return d.doSend(q, dst, w, payload)
	case opRDMAWrite, opRDMAWriteImm:
		return d.doWrite(q, dst, w, payload)
	case opRDMARead:
		d.doRead(q, dst, w)
	default:
		d.doAtomic(q, dst, w)
	}
	return false
}

// target returns the QP a WQE is delivered to, or nil when the packets
// would be dropped (no such QP, wrong type or state, not connected back,
// wrong Q_Key).
func (d *Device) target(q *qp, w *wqe) *qp {
	n := q.destQPN
	if q.cfg.Type == UD {
		n = w.av.dqp
	}
	dst, ok := d.qps[n]
	if !ok || dst.cfg.Type != q.cfg.Type || (dst.state != StateRTR && dst.state != StateRTS) {
		return nil
	}
	switch q.cfg.Type {
	case UD:
		qkey := w.av.qkey
		if qkey&0x80000000 != 0 {
			qkey = q.qkey // controlled Q_Key: use the sender QP's
		}
		if qkey != dst.qkey {
			return nil
		}
	default:
		if dst.destQPN != q.qpn {
			return nil
		}
	}
	return dst
}

// rnr handles "no receive WQE" at an RC responder: retry per rnr_retry,
// then RNR_RETRY_EXC_ERR. It returns whether the SQ stalls.
func (d *Device) rnr(q *qp, w *wqe) bool {
	if q.rnrRetry == RNRRetryInfinite || q.rnrUsed < q.rnrRetry {
		q.rnrUsed++
		q.stats.RNRRetries++
		return true
	}
	d.failReq(q, w, synRNRRetry)
	return false
}

type recvWQE struct {
	sges    []sge
	counter uint16
	srq     *srq
	pdn     uint32
}

// takeRecv consumes the next receive WQE of dst (RQ or SRQ).
func (d *Device) takeRecv(dst *qp) (*recvWQE, bool) {
	if dst.cfg.SRQN != 0 {
		s := d.srqs[dst.cfg.SRQN]
		if s == nil {
			return nil, false
		}
		if !d.recvPosted(s.cfg.DBR, s.counter, s.cfg.WQECnt, "SRQ", s.srqn) {
			return nil, false
		}
		size := 1 << s.cfg.WQEShift
		base := int(s.ptr) * size
		wq := s.cfg.Buf[base : base+size]
		r := &recvWQE{sges: parseRecvSegs(wq[16:]), counter: s.ptr, srq: s, pdn: s.cfg.PDN}
		next := be16(wq[2:])
		if int(next) >= s.cfg.WQECnt {
			d.protoErr("SRQ %#x WQE %#x: next_wqe_index %#x out of range", s.srqn, s.ptr, next)
			next &= uint16(s.cfg.WQECnt - 1)
		}
		s.ptr = next
		s.counter++
		dst.stats.RecvsConsumed++
		return r, true
	}
	if dst.cfg.RQWQECnt == 0 {
		return nil, false
	}
	if !d.recvPosted(dst.cfg.DBR, dst.rqCI, dst.cfg.RQWQECnt, "QP", dst.qpn) {
		return nil, false
	}
	size := 1 << dst.cfg.RQWQEShift
	base := (int(dst.rqCI) & (dst.cfg.RQWQECnt - 1)) * size
	r := &recvWQE{sges: parseRecvSegs(dst.rq[base : base+size]), counter: dst.rqCI, pdn: dst.cfg.PDN}
	dst.rqCI++
	dst.stats.RecvsConsumed++
	return r, true
}

// recvPosted reports whether the receive counter in the doorbell record dbr
// is ahead of the consumer counter ci of a ring of n WQEs, the receive queue
// of kind ("QP", "SRQ") number num; a counter more than a ring ahead is a
// protocol error.
func (d *Device) recvPosted(dbr []byte, ci uint16, n int, kind string, num uint32) bool {
	posted := uint16(loadBE32(dbr[0:]))
	if posted == ci {
		return false
	}
	if int(uint16(posted-ci)) > n {
		d.protoErr("%s %#x: receive doorbell record %#x is more than a ring ahead of %#x", kind, num, posted, ci)
		return false
	}
	return true
}

// parseRecvSegs reads receive data segments up to the end of the WQE or the
// MLX5_INVALID_LKEY end marker.
func parseRecvSegs(b []byte) []sge {
	var out []sge
	for p := 0; p+16 <= len(b); p += 16 {
		lkey := be32(b[p+4:])
		if lkey == invalidLKey {
			break
		}
		out = append(out, sge{len: be32(b[p:]) &^ inlineSegFlag, lkey: lkey, addr: be64(b[p+8:])})
	}
	return out
}

// scatter places data into the receive SGEs. It returns 0 or the responder
// syndrome (LOC_LEN_ERR, LOC_PROT_ERR). With dry set nothing is written.
func (d *Device) scatter(r *recvWQE, data []byte, skip int, dry bool) uint8 {
	total := 0
	for _, s := range r.sges {
		total += int(s.len)
	}
	if len(data) > total {
		return synLocLen
	}
	type piece struct {
		dst []byte
		src []byte
	}
	var pieces []piece
	rest := data
	for _, s := range r.sges {
		if len(rest) == 0 {
			break
		}
		n := min(int(s.len), len(rest))
		if n == 0 {
			continue
		}
		b, ok := d.lookup(s.lkey, r.pdn, s.addr, uint32(n), AccessLocalWrite)
		if !ok {
			return synLocProt
		}
		pieces = append(pieces, piece{b, rest[:n]})
		rest = rest[n:]
	}
	if dry {
		return 0
	}
	off := 0
	for _, p := range pieces {
		// The first skip bytes (an absent GRH) are left untouched.
		for i := range p.src {
			if off+i >= skip {
				p.dst[i] = p.src[i]
			}
		}
		off += len(p.src)
	}
	return 0
}

func (d *Device) respCQE(dst *qp, w *wqe, r *recvWQE, src *qp, byteCnt uint32) *cqe {
	e := &cqe{
		wqeCounter: r.counter, qpn: dst.qpn, byteCnt: byteCnt,
		srqnUidx: d.uidx(dst, r.srq), solicited: w.fm&ctrlSolicited != 0,
	}
	switch w.opcode {
	case opSend:
		e.opcode = cqeRespSend
	case opSendImm:
		e.opcode, e.immInval = cqeRespSendImm, w.imm
	case opSendInval:
		e.opcode, e.immInval = cqeRespSendInv, w.imm
	case opRDMAWriteImm:
		e.opcode, e.immInval = cqeRespWrImm, w.imm
	}
	if dst.cfg.Type == UD {
		e.flagsRqpn = src.qpn & 0xffffff
		e.flagsRqpn |= uint32(w.av.sl) << 24
		if w.av.grh {
			e.flagsRqpn |= 1 << 28
		}
		e.slid = d.opts.LID
	}
	return e
}

func (d *Device) respErr(dst *qp, r *recvWQE, syndrome uint8, running *qp) {
	d.pushCQE(d.cqs[dst.cfg.RecvCQN], &cqe{
		opcode: cqeRespErr, syndrome: syndrome, wqeCounter: r.counter,
		qpn: dst.qpn, srqnUidx: d.uidx(dst, r.srq),
	})
	d.responderError(dst, running)
}

// grh builds the 40-byte GRH a UD receive starts with.
func (d *Device) grh(w *wqe, payloadLen int) []byte {
	g := make([]byte, grhBytes)
	binary.BigEndian.PutUint32(g[0:], 6<<28|uint32(w.av.tclass)<<20|w.av.flow)
	binary.BigEndian.PutUint16(g[4:], uint16(payloadLen))
	g[6] = 0x1b // next header: IB BTH
	g[7] = w.av.hopLimit
	copy(g[8:24], d.opts.GID[:])
	copy(g[24:40], w.av.rgid[:])
	return g
}

func (d *Device) doSend(q, dst *qp, w *wqe, payload []byte) bool {
	r, ok := d.takeRecv(dst)
	if !ok {
		if q.cfg.Type == RC {
			return d.rnr(q, w)
		}
		d.completeReq(q, w, uint32(len(payload))) // UC/UD: dropped
		return false
	}
	data, skip := payload, 0
	if dst.cfg.Type == UD {
		data = append(d.grh(w, len(payload)), payload...)
		if !w.av.grh {
			skip = grhBytes
		}
	}
	e := d.respCQE(dst, w, r, q, uint32(len(data)))
	inCQE := dst.cfg.ScatterToCQE && len(data) <= 32
	if syn := d.scatter(r, data, skip, inCQE); syn != 0 {
		d.respErr(dst, r, syn, q)
		switch {
		case q.cfg.Type != RC:
			d.completeReq(q, w, uint32(len(payload)))
		case syn == synLocLen:
			d.failReq(q, w, synRemInvReq)
		default:
			d.failReq(q, w, synRemOp)
		}
		return false
	}
	if inCQE {
		e.inline = append([]byte(nil), data...)
	}
	d.pushCQE(d.cqs[dst.cfg.RecvCQN], e)
	d.completeReq(q, w, uint32(len(payload)))
	return false
}

// remote resolves an rkey range at the responder; it checks both the MR and
// the QP access rights.
func (d *Device) remote(dst *qp, w *wqe, n uint32, need Access) ([]byte, bool) {
	if dst.access&need != need {
		return nil, false
	}
	return d.lookup(w.rkey, dst.cfg.PDN, w.raddr, n, need)
}

func (d *Device) remoteAccessError(q, dst *qp, w *wqe) {
	if q.cfg.Type != RC {
		d.completeReq(q, w, 0) // UC: the responder drops the message
		return
	}
	d.failReq(q, w, synRemAccess)
	d.responderError(dst, q)
}

func (d *Device) doWrite(q, dst *qp, w *wqe, payload []byte) bool {
	var region []byte
	if len(payload) > 0 {
		var ok bool
		if region, ok = d.remote(dst, w, uint32(len(payload)), AccessRemoteWrite); !ok {
			d.remoteAccessError(q, dst, w)
			return false
		}
	}
	if w.opcode == opRDMAWriteImm {
		r, ok := d.takeRecv(dst)
		if !ok {
			if q.cfg.Type == RC {
				return d.rnr(q, w)
			}
			d.completeReq(q, w, uint32(len(payload)))
			return false
		}
		copy(region, payload)
		d.pushCQE(d.cqs[dst.cfg.RecvCQN], d.respCQE(dst, w, r, q, uint32(len(payload))))
	} else {
		copy(region, payload)
	}
	d.completeReq(q, w, uint32(len(payload)))
	return false
}

func (d *Device) doRead(q, dst *qp, w *wqe) {
	total := uint32(0)
	for _, s := range w.sges {
		total += s.len
	}
	var region []byte
	if total > 0 {
		var ok bool
		if region, ok = d.remote(dst, w, total, AccessRemoteRead); !ok {
			d.remoteAccessError(q, dst, w)
			return
		}
	}
	data := append([]byte(nil), region...)
	for _, s := range w.sges {
		if s.len == 0 {
			continue
		}
		b, ok := d.lookup(s.lkey, q.cfg.PDN, s.addr, s.len, AccessLocalWrite)
		if !ok {
			d.failReq(q, w, synLocProt)
			return
		}
		copy(b, data)
		data = data[s.len:]
	}
	d.completeReq(q, w, total)
}

func (d *Device) doAtomic(q, dst *qp, w *wqe) {
	if len(w.sges) != 1 || w.sges[0].len != 8 {
		d.protoErr("QP %#x WQE %#x: atomic needs one 8-byte data segment", q.qpn, w.idx)
		d.failReq(q, w, synLocQPOp)
		return
	}
	local, ok := d.lookup(w.sges[0].lkey, q.cfg.PDN, w.sges[0].addr, 8, AccessLocalWrite)
	if !ok {
		d.failReq(q, w, synLocProt)
		return
	}
	if w.raddr%8 != 0 {
		d.failReq(q, w, synRemInvReq)
		d.responderError(dst, q)
		return
	}
	region, ok := d.remote(dst, w, 8, AccessRemoteAtomic)
	if !ok {
		d.remoteAccessError(q, dst, w)
		return
	}
	// Host-endian atomics (atomic_req_8B_endianness_mode = host, as the
	// kernel configures it).
	p := atomicU64(region)
	old := atomic.LoadUint64(p)
	if w.opcode == opAtomicCS {
		if old == w.cmp {
			atomic.StoreUint64(p, w.swap)
		}
	} else {
		atomic.StoreUint64(p, old+w.swap)
	}
	binary.NativeEndian.PutUint64(local, old)
	d.completeReq(q, w, 8)
}
