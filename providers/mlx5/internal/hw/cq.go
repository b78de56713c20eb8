package hw

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/mmio"
)

// QP binds the queues of one queue pair for completion demultiplexing. A CQ finds the QP of a CQE by user index
// (CQE version 1, the rdma-core default) or by QP number (version 0).
type QP struct {
	QPN       uint32
	UserIndex uint32 // the uidx given to the kernel at create time (24 bits)
	SQ        *SendQueue
	RQ        *RecvQueue // nil when the QP uses an SRQ
	SRQ       *SRQ
}

// CQConfig describes a completion queue over caller-owned memory.
type CQConfig struct {
	// Buf holds CQECount 64-byte CQEs.
	Buf []byte
	// CQECount is a power of two; the kernel was told cqe = CQECount-1.
	CQECount int
	CQN      uint32
	// DBR is the CQ's doorbell record: consumer index (MLX5_CQ_SET_CI) then arm word (MLX5_CQ_ARM_DB).
	DBR DoorbellRecord
	// UAR is the page holding the CQ doorbell (written at CQDoorbellOffset); it may be empty if Arm is never called.
	UAR mmio.Reg
	// CQEVersion is the context's cqe_version (0 or 1): how CQEs name their QP.
	CQEVersion int
}

// CQ polls 64-byte CQEs and arms completion events. Not safe for concurrent use; poll it from the goroutine that
// posts to the queues completing into it, or serialise.
//
// Poll addresses the ring through base, an unsafe pointer to buf's first byte: every CQE is at
// (index & mask) * 64 inside the CQECount*64 bytes NewCQ (or BeginResize) verified.
type CQ struct {
	buf      []byte
	base     unsafe.Pointer // &buf[0]
	mask     uint32
	ncqe     uint32
	cqn      uint32
	dbr      DoorbellRecord
	uar      mmio.Reg
	version  int
	ci       uint32 // consumer index, free running
	armSN    uint32
	qps      map[uint32]*QP
	last     *QP
	lastKey  uint32
	lastSQ   *SendQueue // last.SQ, for Poll's inline requester path
	lastRQ   *RecvQueue // last.RQ, for Poll's inline responder path (nil for a QP on an SRQ)
	shift    uint       // log2(ncqe): the owner bit of CQE n is bit shift of n
	resizing []byte
	resizeN  uint32
}

// StampCQBuffer marks every 64-byte CQE in buf as invalid (op_own = MLX5_CQE_INVALID << 4) and zeroes the rest,
// as rdma-core does before handing a CQ buffer to the kernel (create and resize).
func StampCQBuffer(buf []byte) {
	clear(buf)
	for i := CQESize - 1; i < len(buf); i += CQESize {
		buf[i] = cqeInvalidStamped
	}
}

// NewCQ returns a CQ over cfg's memory and stamps the buffer (call it before the kernel can write CQEs).
func NewCQ(cfg CQConfig) (*CQ, error) {
	switch {
	case !isPow2(cfg.CQECount) || cfg.CQECount > 1<<24:
		return nil, fmt.Errorf("mlx5: new CQ %#x: CQE count %d is not a power of two <= 2^24: %w",
			cfg.CQN, cfg.CQECount, errInvalid)
	case len(cfg.Buf) < cfg.CQECount*CQESize || addrOf(cfg.Buf)%8 != 0:
		return nil, fmt.Errorf("mlx5: new CQ %#x: buffer of %d bytes at %#x, need %d, 8-byte aligned: %w",
			cfg.CQN, len(cfg.Buf), addrOf(cfg.Buf), cfg.CQECount*CQESize, errInvalid)
	case cfg.CQEVersion != 0 && cfg.CQEVersion != 1:
		return nil, fmt.Errorf("mlx5: new CQ %#x: CQE version %d: %w", cfg.CQN, cfg.CQEVersion, ErrNotSupported)
	case !cfg.DBR.valid():
		return nil, fmt.Errorf("mlx5: new CQ %#x: missing doorbell record: %w", cfg.CQN, errInvalid)
	}
	cq := &CQ{
		buf:     cfg.Buf[:cfg.CQECount*CQESize],
		mask:    uint32(cfg.CQECount - 1),
		ncqe:    uint32(cfg.CQECount),
		cqn:     cfg.CQN,
		dbr:     cfg.DBR,
		uar:     cfg.UAR,
		version: cfg.CQEVersion,
		qps:     map[uint32]*QP{},
	}
	cq.base = unsafe.Pointer(unsafe.SliceData(cq.buf))
	cq.shift = uint(bits.TrailingZeros32(cq.ncqe))
	StampCQBuffer(cq.buf)
	cq.dbr.set(0, 0)
	cq.dbr.set(1, 0)
	return cq, nil
}

// CQN returns the CQ number.
func (cq *CQ) CQN() uint32 { return cq.cqn }

// Entries returns the number of CQEs in the ring (a power of two).
func (cq *CQ) Entries() int { return int(cq.ncqe) }

// ConsumerIndex returns the free-running consumer index (CQEs consumed so far).
func (cq *CQ) ConsumerIndex() uint32 { return cq.ci }

func (cq *CQ) key(qp *QP) uint32 {
	if cq.version == 1 {
		return qp.UserIndex & 0xffffff
	}
	return qp.QPN & 0xffffff
}

// Attach registers qp so that its completions in this CQ can be matched to its queues. Attach a QP to its send CQ
// and to its receive CQ (the same CQ may be both).
func (cq *CQ) Attach(qp *QP) error {
	k := cq.key(qp)
	if old, ok := cq.qps[k]; ok && old != qp {
		return fmt.Errorf("mlx5: attach QP %#x to CQ %#x: key %#x already in use: %w", qp.QPN, cq.cqn, k, errInvalid)
	}
	cq.qps[k] = qp
	return nil
}

// Detach forgets qp (after it is destroyed).
func (cq *CQ) Detach(qp *QP) {
	delete(cq.qps, cq.key(qp))
	cq.last, cq.lastSQ, cq.lastRQ = nil, nil, nil
}

func (cq *CQ) lookup(k uint32) *QP {
	if cq.last != nil && cq.lastKey == k {
		return cq.last
	}
	qp := cq.qps[k]
	if qp != nil {
		cq.last, cq.lastKey, cq.lastSQ, cq.lastRQ = qp, k, qp.SQ, qp.RQ
	}
	return qp
}

// at returns the CQE at consumer index n.
func (cq *CQ) at(n uint32) *[CQESize]byte {
	return (*[CQESize]byte)(unsafe.Add(cq.base, uintptr(n&cq.mask)*CQESize))
}

// owned reports whether software owns CQE c at consumer index n: the opcode is not INVALID and the owner bit
// equals the wrap parity of n (rdma-core get_sw_cqe). The op_own byte is read with an atomic 32-bit load.
func (cq *CQ) owned(c *[CQESize]byte, n uint32) bool {
	op := ownerByte(c)
	return op < CQEInvalid<<4 && (uint32(op)^n>>(cq.shift&31))&CQEOwnerMask == 0
}

// sw returns the CQE at consumer index n if software owns it, else nil.
func (cq *CQ) sw(n uint32) []byte {
	c := cq.at(n)
	if !cq.owned(c, n) {
		return nil
	}
	return c[:]
}

// Poll fills wcs with up to len(wcs) completions and returns how many, then publishes the consumer index
// (rdma-core poll_cq). Requester completions retire the signaled WQE and the unsignaled ones before it. Payloads
// the device scattered into a CQE are copied to the posted buffers. A CQE whose QP is not attached stops the
// poll with provider.UnknownCQE (rdma-core CQ_POLL_ERR, EIO in the table); the CQE is consumed, the completions
// before it are returned. No outcome allocates.
//
// Ordering: rdma-core checks one CQE's ownership, issues udma_from_device_barrier and then reads it. Poll first
// checks the ownership of every CQE it will consume, then issues one barrier, then reads them: each CQE's
// ownership load still precedes its content loads, with one barrier per batch instead of one per CQE.
//
// A successful requester or responder CQE without a scattered payload, of the QP the previous CQE named (the
// common case of a stream of completions), is decoded inline, with the same result parse gives; every other CQE
// (errors, scatter-to-CQE, SRQ receives, a QP's first CQE after another QP's) goes through parse.
func (cq *CQ) Poll(wcs []WC) (int, provider.Status) {
	ci := cq.ci
	base, mask, shift := cq.base, cq.mask, cq.shift
	avail := 0
	for m := ci; avail < len(wcs); m++ {
		op := ownerByte((*[CQESize]byte)(unsafe.Add(base, uintptr(m&mask)*CQESize)))
		if op >= CQEInvalid<<4 || (uint32(op)^m>>(shift&31))&CQEOwnerMask != 0 {
			break
		}
		avail++
	}
	if avail == 0 {
		cq.dbr.set(0, ci&0xffffff)
		return 0, provider.OK
	}
	mmio.FromDeviceBarrier()
	n := 0
	st := provider.OK
	for ; avail > 0; avail-- {
		c := (*[CQESize]byte)(unsafe.Add(base, uintptr(ci&mask)*CQESize))
		ci++
		opOwn := c[cqeOffOpOwn]
		if opOwn&InlineScatter32 == 0 { // no scatter-to-CQE payload to copy
			key := be.Uint32(c[cqeOffSopDropQPN:])
			if cq.version == 1 {
				key = be.Uint32(c[cqeOffSRQNUIdx:])
			}
			if cq.lastKey == key&0xffffff {
				switch opc := opOwn >> 4; {
				case opc == CQEReq && cq.lastSQ != nil:
					sq := cq.lastSQ
					sop := be.Uint32(c[cqeOffSopDropQPN:])
					r := &reqOps[uint8(sop>>24)]
					e := sq.ent(uint32(be.Uint16(c[cqeOffWQECounter:])) & sq.mask)
					wc := &wcs[n]
					wc.WRID, wc.Status, wc.Opcode, wc.VendorErr = e.wrid, verbs.WCSuccess, r.opcode, 0
					storeTail(&sq.tail, e.head+1) // after reading the entry: a poster may reuse it once it sees the tail
					wc.ByteLen, wc.Imm, wc.QPNum = be.Uint32(c[cqeOffByteCnt:])&r.cntMask|r.fixed, 0, sop&0xffffff
					wc.SrcQP, wc.Flags, wc.PKeyIndex, wc.SLID = 0, r.flags, 0, 0
					wc.SL, wc.DLIDPathBits, wc.PortNum = 0, 0, 0
					n++
					continue
				case opc-CQERespWRImm < 4 && cq.lastRQ != nil: // RESP_WR_IMM, RESP_SEND, RESP_SEND_IMM, RESP_SEND_INV
					rq := cq.lastRQ
					r := &respOps[opc&3]
					iip := be.Uint32(c[cqeOffImmInvalPKey:])
					fr := be.Uint32(c[cqeOffFlagsRQPN:])
					flags := r.flags
					if fr&(3<<28) != 0 {
						flags |= verbs.WCWithGRH
					}
					wc := &wcs[n]
					wc.WRID, wc.Status, wc.Opcode, wc.VendorErr = rq.retire(be.Uint16(c[cqeOffWQECounter:])), verbs.WCSuccess, r.opcode, 0
					wc.ByteLen, wc.Imm, wc.QPNum = be.Uint32(c[cqeOffByteCnt:]), iip&r.immMask, be.Uint32(c[cqeOffSopDropQPN:])&0xffffff
					wc.SrcQP, wc.Flags, wc.PKeyIndex, wc.SLID = fr&0xffffff, flags, uint16(iip), be.Uint16(c[cqeOffSLID:])
					wc.SL, wc.DLIDPathBits, wc.PortNum = uint8(fr>>24)&0xf, c[cqeOffMLPath]&0x7f, 0
					n++
					continue
				}
			}
		}
		if opOwn>>4 == CQEResizeCQ {
			continue
		}
		if !cq.parse(c[:], &wcs[n]) {
			st = provider.UnknownCQE
			break
		}
		n++
	}
	cq.ci = ci
	cq.dbr.set(0, ci&0xffffff)
	return n, st
}

// parse decodes one software-owned CQE into wc (rdma-core mlx5_parse_cqe, non-lazy).
func (cq *CQ) parse(cqe []byte, wc *WC) bool {
	opOwn := cqe[cqeOffOpOwn]
	opcode := opOwn >> 4
	qpn := be.Uint32(cqe[cqeOffSopDropQPN:]) & 0xffffff
	srqnUIdx := be.Uint32(cqe[cqeOffSRQNUIdx:]) & 0xffffff
	wqeCtr := be.Uint16(cqe[cqeOffWQECounter:])
	key := qpn
	if cq.version == 1 {
		key = srqnUIdx
	}
	qp := cq.lookup(key)
	if qp == nil {
		return false
	}
	*wc = WC{QPNum: qpn}
	switch opcode {
	case CQEReq:
		if qp.SQ == nil {
			return false
		}
		op, flags, byteLen := requesterOpcode(uint8(be.Uint32(cqe[cqeOffSopDropQPN:])>>24),
			be.Uint32(cqe[cqeOffByteCnt:]))
		wc.Opcode, wc.Flags, wc.ByteLen = op, flags, byteLen
		if opOwn&InlineScatter32 != 0 {
			wc.Status = qp.SQ.copyToSendWQE(wqeCtr, cqe[:min(int(byteLen), 32)])
		}
		wc.WRID = qp.SQ.complete(wqeCtr)
	case CQERespWRImm, CQERespSend, CQERespSendImm, CQERespSendInv:
		wc.ByteLen = be.Uint32(cqe[cqeOffByteCnt:])
		var payload []byte
		if opOwn&InlineScatter32 != 0 {
			payload = cqe[:min(int(wc.ByteLen), 32)]
		}
		if !cq.completeRecv(qp, wqeCtr, payload, wc) {
			return false
		}
		iip := be.Uint32(cqe[cqeOffImmInvalPKey:])
		switch opcode {
		case CQERespWRImm:
			wc.Opcode, wc.Flags, wc.Imm = verbs.WCRecvRDMAWithImm, verbs.WCWithImm, iip
		case CQERespSend:
			wc.Opcode = verbs.WCRecv
		case CQERespSendImm:
			wc.Opcode, wc.Flags, wc.Imm = verbs.WCRecv, verbs.WCWithImm, iip
		case CQERespSendInv:
			wc.Opcode, wc.Flags, wc.Imm = verbs.WCRecv, verbs.WCWithInv, iip
		}
		fr := be.Uint32(cqe[cqeOffFlagsRQPN:])
		wc.SLID = be.Uint16(cqe[cqeOffSLID:])
		wc.SL = uint8(fr>>24) & 0xf
		wc.SrcQP = fr & 0xffffff
		wc.DLIDPathBits = cqe[cqeOffMLPath] & 0x7f
		if (fr>>28)&3 != 0 {
			wc.Flags |= verbs.WCWithGRH
		}
		wc.PKeyIndex = uint16(iip)
	case CQEReqErr, CQERespErr:
		wc.Status = SyndromeStatus(cqe[cqeOffSyndrome])
		wc.VendorErr = uint32(cqe[cqeOffVendorErr])
		if opcode == CQEReqErr {
			if qp.SQ == nil {
				return false
			}
			wc.WRID = qp.SQ.complete(wqeCtr)
		} else if !cq.completeRecv(qp, wqeCtr, nil, wc) {
			return false
		}
	default:
		// NO_PACKET (tag matching), SIG_ERR (signature MRs) and unknown opcodes belong to features this provider
		// does not enable; surface them as a general error on the QP rather than dropping them silently.
		wc.Status = verbs.WCGeneralErr
	}
	return true
}

// completeRecv retires the receive WQE a responder CQE names, from the QP's RQ or its SRQ, copying a
// scattered-to-CQE payload first.
func (cq *CQ) completeRecv(qp *QP, wqeCtr uint16, payload []byte, wc *WC) bool {
	switch {
	case qp.SRQ != nil:
		id, st, ok := qp.SRQ.complete(wqeCtr, payload)
		if payload != nil {
			wc.Status = st
		}
		wc.WRID = id
		return ok
	case qp.RQ != nil:
		// Copy into the WQE's buffers before retiring it: once the tail moves, a poster may rewrite the WQE.
		if payload != nil {
			wc.Status = qp.RQ.copyToRecvWQE(uint32(wqeCtr)&qp.RQ.mask, payload)
		}
		wc.WRID = qp.RQ.complete(wqeCtr)
		return true
	}
	return false
}

// Clean removes qp's completions that the device has written and Poll has not consumed, moving the other queues'
// CQEs up over them in order, and returns the receive WQEs of qp's SRQ completions to the SRQ (rdma-core
// __mlx5_cq_clean). Call it with the CQ's lock held when qp is destroyed or reset, after the kernel has stopped
// it, so that a later Poll neither meets a CQE of a QP it no longer knows (UnknownCQE) nor completes a work
// request of a queue that was reset. It returns how many CQEs it removed.
func (cq *CQ) Clean(qp *QP) int {
	key := cq.key(qp)
	// The CQEs software owns, at most one ring's worth less one, as rdma-core scans.
	prod := cq.ci
	for cq.sw(prod) != nil && prod != cq.ci+cq.ncqe-1 {
		prod++
	}
	if prod == cq.ci {
		return 0
	}
	mmio.FromDeviceBarrier()
	// Sweep backwards: drop qp's CQEs, copy the others forward by the number dropped so far, each keeping the
	// owner bit of the slot it lands in.
	freed := uint32(0)
	for i := prod; i != cq.ci; {
		i--
		c := cq.at(i)
		k := be.Uint32(c[cqeOffSopDropQPN:]) & 0xffffff
		if cq.version == 1 {
			k = be.Uint32(c[cqeOffSRQNUIdx:]) & 0xffffff
		}
		if k == key {
			if qp.SRQ != nil && isResponder(c[cqeOffOpOwn]>>4) {
				qp.SRQ.complete(be.Uint16(c[cqeOffWQECounter:]), nil)
			}
			freed++
			continue
		}
		if freed > 0 {
			d := cq.at(i + freed)
			own := d[cqeOffOpOwn] & CQEOwnerMask
			*d = *c
			d[cqeOffOpOwn] = d[cqeOffOpOwn]&^CQEOwnerMask | own
		}
	}
	if freed > 0 {
		cq.ci += freed
		mmio.ToDeviceBarrier()
		cq.dbr.set(0, cq.ci&0xffffff)
	}
	return int(freed)
}

// isResponder reports whether a CQE opcode completes a receive (rdma-core is_responder).
func isResponder(opcode byte) bool {
	switch opcode {
	case CQERespWRImm, CQERespSend, CQERespSendImm, CQERespSendInv, CQERespErr:
		return true
	}
	return false
}

// Arm requests a completion event for the next completion (solicited only if solicited is true): it writes the
// arm word into the doorbell record and rings the CQ doorbell with sn<<28 | cmd | ci and the CQN (rdma-core
// mlx5_arm_cq).
func (cq *CQ) Arm(solicited bool) {
	sn := cq.armSN & 3
	ci := cq.ci & 0xffffff
	var cmd uint32
	if solicited {
		cmd = 1 << 24 // MLX5_CQ_DB_REQ_NOT_SOL
	}
	w := sn<<28 | cmd | ci
	cq.dbr.set(1, w)
	mmio.WCStart()
	// The doorbell is the big-endian 64-bit value w<<32 | cqn; store its bytes in memory order.
	cq.uar.Write64(CQDoorbellOffset, nativeFromBE64(uint64(w)<<32|uint64(cq.cqn)))
	mmio.FlushWrites()
}

// Event records that a completion event for this CQ was read from its channel (rdma-core mlx5_cq_event: the arm
// sequence number advances).
func (cq *CQ) Event() { cq.armSN++ }

// BeginResize stamps newBuf for count CQEs (a power of two) and remembers it; the caller then issues the kernel's
// RESIZE_CQ with cqe = count-1 and, on success, calls CompleteResize. Do not poll in between.
func (cq *CQ) BeginResize(newBuf []byte, count int) error {
	if !isPow2(count) || count > 1<<24 || len(newBuf) < count*CQESize || addrOf(newBuf)%8 != 0 {
		return fmt.Errorf("mlx5: resize CQ %#x to %d CQEs in %d bytes: %w", cq.cqn, count, len(newBuf), errInvalid)
	}
	StampCQBuffer(newBuf[:count*CQESize])
	cq.resizing, cq.resizeN = newBuf[:count*CQESize], uint32(count)
	return nil
}

// AbortResize forgets a resize whose kernel command failed.
func (cq *CQ) AbortResize() { cq.resizing = nil }

// CompleteResize moves the not yet polled CQEs that precede the device's RESIZE_CQ CQE into the new buffer, with
// the ownership bit the new size implies, consumes the RESIZE_CQ CQE and switches buffers (rdma-core
// mlx5_cq_resize_copy_cqes).
func (cq *CQ) CompleteResize() error {
	if cq.resizing == nil {
		return fmt.Errorf("mlx5: complete resize of CQ %#x: no resize in progress: %w", cq.cqn, errInvalid)
	}
	nb, nn := cq.resizing, cq.resizeN
	i := cq.ci
	for k := uint32(0); ; k++ {
		scqe := cq.sw(i)
		if scqe == nil || k > cq.ncqe {
			cq.resizing = nil
			return fmt.Errorf("mlx5: complete resize of CQ %#x: no RESIZE_CQ CQE found: %w", cq.cqn, errInvalid)
		}
		if scqe[cqeOffOpOwn]>>4 == CQEResizeCQ {
			break
		}
		j := i + 1
		off := int(j&(nn-1)) * CQESize
		d := nb[off : off+CQESize]
		copy(d, scqe)
		own := byte(0)
		if j&nn != 0 {
			own = 1
		}
		d[cqeOffOpOwn] = d[cqeOffOpOwn]&^CQEOwnerMask | own
		i++
	}
	cq.ci++
	cq.buf, cq.mask, cq.ncqe, cq.resizing = nb, nn-1, nn, nil
	cq.base = unsafe.Pointer(unsafe.SliceData(nb))
	cq.shift = uint(bits.TrailingZeros32(nn))
	return nil
}
