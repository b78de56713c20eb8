package mlx5

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/mmio"
)

// SendQueueConfig describes a send queue whose memory the caller owns: the SQ part of a QP buffer, the QP's
// doorbell record and the bfreg the kernel assigned. Sizes are what the kernel was told at create time; see
// [SizeQP] for rdma-core's sizing rules.
type SendQueueConfig struct {
	// Buf is the SQ ring: WQECount basic blocks of 64 bytes (the QP buffer after the RQ).
	Buf []byte
	// WQECount is sq.wqe_cnt, a power of two (at most 65536: the WQE index in the ctrl segment is 16 bits).
	WQECount int
	// MaxPost is sq.max_post: the most work requests outstanding at once.
	MaxPost int
	// MaxSGE and MaxInline bound a work request's scatter list and inline payload (cap.max_send_sge,
	// cap.max_inline_data).
	MaxSGE    int
	MaxInline int
	QPN       uint32
	Type      QPType
	// DBR is the QP's doorbell record; the send counter is its second word (MLX5_SND_DBR).
	DBR DoorbellRecord
	// BF is the send doorbell register (possibly shared with other QPs).
	BF *BFReg
	// SignalAll sets CQ_UPDATE on every WQE (sq_sig_all).
	SignalAll bool
	// Atomics enables compare-and-swap and fetch-and-add (RC only; the device must support them).
	Atomics bool
	// BlueFlameInlineOnly restricts BlueFlame to inline WQEs (rdma-core MLX5_POST_SEND_PREFER_BF=0).
	BlueFlameInlineOnly bool
}

// SendQueue posts send WQEs and rings the send doorbell. It is not safe for concurrent use: the caller serialises
// PostSend and the polling of the CQ that retires its WQEs (rdma-core's sq.lock and CQ lock); only a shared BFReg
// is locked internally.
type SendQueue struct {
	buf       []byte
	mask      uint32
	maxPost   uint32
	maxSGE    int
	maxInline int
	qpn       uint32
	typ       QPType
	dbr       DoorbellRecord
	bf        *BFReg
	sigBits   uint8
	atomics   bool
	preferBF  bool
	fmCache   uint8
	head      uint32 // work requests posted (free running)
	tail      uint32 // work requests retired by completions
	curPost   uint32 // basic blocks posted (free running; low 16 bits are the WQE index)
	wrid      []uint64
	wqeHead   []uint32
}

// maxOverhead is the largest segment prefix this builder writes before the data segments for each QP type.
func maxOverhead(t QPType) int {
	switch t {
	case QPTypeRC:
		return CtrlSegSize + RaddrSegSize + AtomicSegSize
	case QPTypeUC:
		return CtrlSegSize + RaddrSegSize
	case QPTypeUD:
		return CtrlSegSize + DatagramSegSize
	}
	return -1
}

// NewSendQueue returns a send queue over cfg's memory. It checks that the geometry is consistent: the buffer
// holds WQECount blocks and MaxPost work requests of the largest shape fit in the ring.
func NewSendQueue(cfg SendQueueConfig) (*SendQueue, error) {
	ov := maxOverhead(cfg.Type)
	switch {
	case ov < 0:
		return nil, fmt.Errorf("mlx5: new send queue for QP %#x: QP type %v: %w", cfg.QPN, cfg.Type, ErrNotSupported)
	case !isPow2(cfg.WQECount) || cfg.WQECount > 1<<16:
		return nil, fmt.Errorf("mlx5: new send queue for QP %#x: WQE count %d is not a power of two <= 65536: %w",
			cfg.QPN, cfg.WQECount, errInvalid)
	case len(cfg.Buf) < cfg.WQECount*SendWQEBB:
		return nil, fmt.Errorf("mlx5: new send queue for QP %#x: buffer of %d bytes, need %d: %w",
			cfg.QPN, len(cfg.Buf), cfg.WQECount*SendWQEBB, errInvalid)
	case cfg.MaxPost < 1 || cfg.MaxSGE < 0 || cfg.MaxInline < 0 || cfg.QPN > 0xffffff:
		return nil, fmt.Errorf("mlx5: new send queue for QP %#x: bad limits (max post %d, sge %d, inline %d): %w",
			cfg.QPN, cfg.MaxPost, cfg.MaxSGE, cfg.MaxInline, errInvalid)
	case !cfg.DBR.valid() || cfg.BF == nil:
		return nil, fmt.Errorf("mlx5: new send queue for QP %#x: missing doorbell record or register: %w",
			cfg.QPN, errInvalid)
	}
	wqe := max(ov+cfg.MaxSGE*DataSegSize, ov+InlineDS(cfg.MaxInline)*16)
	bbs := (wqe + SendWQEBB - 1) / SendWQEBB
	if wqe/16 > 63 || cfg.MaxPost*bbs > cfg.WQECount {
		return nil, fmt.Errorf("mlx5: new send queue for QP %#x: %d WRs of %d bytes do not fit %d blocks: %w",
			cfg.QPN, cfg.MaxPost, wqe, cfg.WQECount, errInvalid)
	}
	sq := &SendQueue{
		buf:       cfg.Buf[:cfg.WQECount*SendWQEBB],
		mask:      uint32(cfg.WQECount - 1),
		maxPost:   uint32(cfg.MaxPost),
		maxSGE:    cfg.MaxSGE,
		maxInline: cfg.MaxInline,
		qpn:       cfg.QPN,
		typ:       cfg.Type,
		dbr:       cfg.DBR,
		bf:        cfg.BF,
		atomics:   cfg.Atomics && cfg.Type == QPTypeRC,
		preferBF:  !cfg.BlueFlameInlineOnly,
		wrid:      make([]uint64, cfg.WQECount),
		wqeHead:   make([]uint32, cfg.WQECount),
	}
	if cfg.SignalAll {
		sq.sigBits = CtrlCQUpdate
	}
	return sq, nil
}

// QPN returns the queue pair number the WQEs carry.
func (sq *SendQueue) QPN() uint32 { return sq.qpn }

// Outstanding returns the number of posted work requests not yet retired by a completion.
func (sq *SendQueue) Outstanding() int { return int(sq.head - sq.tail) }

// Reset returns the queue to its state after creation, as rdma-core does on a transition to RESET (indices and
// the send doorbell counter to zero). The caller purges the CQ.
func (sq *SendQueue) Reset() {
	sq.head, sq.tail, sq.curPost, sq.fmCache = 0, 0, 0, 0
	sq.dbr.set(1, 0)
}

// wrKind classifies a work request's opcode for the builder.
type wrKind uint8

const (
	kindSend wrKind = iota
	kindRDMA
	kindAtomic
)

// opInfo describes how this provider builds one work-request opcode.
type opInfo struct {
	opcode      uint8  // MLX5_OPCODE_*
	kind        wrKind // segment layout
	types       uint8  // bit 1<<QPType for each QP type that can carry it
	atomic      bool   // needs atomics enabled
	unsupported bool   // a valid verbs opcode this provider does not build
	valid       bool
}

const (
	onRC  = 1 << QPTypeRC
	onUC  = 1 << QPTypeUC
	onUD  = 1 << QPTypeUD
	onAll = onRC | onUC | onUD
)

// opTable maps ibv_wr_opcode values to their WQE (rdma-core's mlx5_ib_opcode table, restricted to what this
// provider builds, and to what each transport can carry).
var opTable = [16]opInfo{
	provider.WRRDMAWrite:         {opcode: OpcodeRDMAWrite, kind: kindRDMA, types: onRC | onUC, valid: true},
	provider.WRRDMAWriteWithImm:  {opcode: OpcodeRDMAWriteImm, kind: kindRDMA, types: onRC | onUC, valid: true},
	provider.WRSend:              {opcode: OpcodeSend, kind: kindSend, types: onAll, valid: true},
	provider.WRSendWithImm:       {opcode: OpcodeSendImm, kind: kindSend, types: onAll, valid: true},
	provider.WRRDMARead:          {opcode: OpcodeRDMARead, kind: kindRDMA, types: onRC, valid: true},
	provider.WRAtomicCmpAndSwp:   {opcode: OpcodeAtomicCS, kind: kindAtomic, types: onRC, atomic: true, valid: true},
	provider.WRAtomicFetchAndAdd: {opcode: OpcodeAtomicFA, kind: kindAtomic, types: onRC, atomic: true, valid: true},
	provider.WRLocalInv:          {unsupported: true, valid: true},
	provider.WRBindMW:            {unsupported: true, valid: true},
	provider.WRSendWithInv:       {opcode: OpcodeSendInval, kind: kindSend, types: onRC | onUC, valid: true},
	wrTSO:                        {unsupported: true, valid: true},
	wrDriver1:                    {unsupported: true, valid: true},
	wrAtomicWrite:                {unsupported: true, valid: true},
}

// classify returns the mlx5 opcode and segment layout for op on a QP of type t, or an error for opcodes this
// provider does not build (ErrNotSupported) or the transport cannot carry (EINVAL).
func classify(op provider.WROpcode, t QPType, atomics bool) (uint8, wrKind, error) {
	if op >= provider.WROpcode(len(opTable)) {
		return 0, 0, errInvalid
	}
	in := &opTable[op]
	switch {
	case !in.valid:
		return 0, 0, errInvalid
	case in.unsupported:
		return 0, 0, ErrNotSupported
	case in.types&(1<<t) == 0:
		return 0, 0, errInvalid
	case in.atomic && !atomics:
		return 0, 0, ErrNotSupported
	}
	return in.opcode, in.kind, nil
}

// PostSend builds one WQE per work request in order and rings the doorbell once for the batch (rdma-core
// _mlx5_post_send + post_send_db). It returns how many work requests were posted; on an error the ones before the
// failing request are posted and rung, the rest are not, and the error names the failing index. Errors: ENOMEM for
// a full queue, too many SGEs or an inline payload above MaxInline; EINVAL for an opcode the QP type cannot carry
// or a UD request without an address handle; ErrNotSupported (EOPNOTSUPP) for atomics when disabled and for
// memory-window, local-invalidate and TSO requests.
func (sq *SendQueue) PostSend(wrs []SendWR) (int, error) {
	var (
		nreq     int
		err      error
		inl      bool
		ds       int
		ctrlPos  int
		buf      = sq.buf
		qend     = len(buf)
		nextFnce = sq.fmCache
	)
	for i := range wrs {
		w := &wrs[i]
		opcode, kind, e := classify(w.Opcode, sq.typ, sq.atomics)
		if e != nil {
			err = e
			break
		}
		if sq.head-sq.tail+uint32(nreq) >= sq.maxPost || len(w.SGL) > sq.maxSGE {
			err = errQueueFull
			break
		}
		if sq.typ == QPTypeUD && w.AH == nil {
			err = errInvalid
			break
		}
		fence := nextFnce
		if w.Flags&provider.SendFence != 0 {
			fence = CtrlFence
		}
		idx := sq.curPost & sq.mask
		pos := int(idx) * SendWQEBB
		bb := (*[SendWQEBB]byte)(buf[pos:]) // the first basic block: ctrl, raddr and atomic never leave it
		p := pos + CtrlSegSize
		n := 1

		switch kind {
		case kindRDMA:
			PutRaddrSeg(bb[16:32], w.RemoteAddr, w.RKey)
			p += RaddrSegSize
			n++
		case kindAtomic:
			PutRaddrSeg(bb[16:32], w.RemoteAddr, w.RKey)
			if opcode == OpcodeAtomicCS {
				PutAtomicSeg(bb[32:48], w.Swap, w.CompareAdd)
			} else {
				PutAtomicSeg(bb[32:48], w.CompareAdd, 0)
			}
			p += RaddrSegSize + AtomicSegSize
			n += 2
		}
		if sq.typ == QPTypeUD {
			PutDatagramSeg(buf[p:], &w.AH.AV, w.RemoteQPN, w.RemoteQKey)
			p += DatagramSegSize
			n += DatagramSegSize / 16
			if p == qend {
				p = 0
			}
		}

		if w.Flags&provider.SendInline != 0 && len(w.SGL) > 0 {
			sz, e := sq.putInline(p, w.SGL)
			if e != nil {
				err = e
				break
			}
			n += sz
			inl = true
		} else {
			for j := range w.SGL {
				s := &w.SGL[j]
				if p == qend {
					p = 0
				}
				if s.Length == 0 {
					continue
				}
				if kind == kindAtomic {
					PutDataSeg(buf[p:], AtomicSize, s.LKey, s.Addr)
				} else {
					PutDataSeg(buf[p:], s.Length, s.LKey, s.Addr)
				}
				p += DataSegSize
				n++
			}
		}

		var imm uint32
		switch w.Opcode {
		case provider.WRSendWithImm, provider.WRRDMAWriteWithImm:
			imm = w.Imm
		case provider.WRSendWithInv:
			imm = w.Imm
		}
		fmCeSe := sq.sigBits | fence
		if w.Flags&provider.SendSignaled != 0 {
			fmCeSe |= CtrlCQUpdate
		}
		if w.Flags&provider.SendSolicited != 0 {
			fmCeSe |= CtrlSolicited
		}
		PutCtrlSeg(bb[0:16], uint16(sq.curPost), opcode, 0, sq.qpn, fmCeSe, uint8(n), 0, imm)
		nextFnce = 0

		sq.wrid[idx] = w.WRID
		sq.wqeHead[idx] = sq.head + uint32(nreq)
		sq.curPost += uint32(n*16+SendWQEBB-1) / SendWQEBB
		ds, ctrlPos = n, pos
		nreq++
	}
	sq.fmCache = nextFnce
	if nreq > 0 {
		sq.ring(nreq, inl, ds, ctrlPos)
	}
	if err != nil {
		return nreq, fmt.Errorf("mlx5: post send WR %d on QP %#x: %w", nreq, sq.qpn, err)
	}
	return nreq, nil
}

// putInline copies the SGEs' bytes behind an inline header at p, wrapping at the end of the ring, and returns the
// segment's size in 16-byte units (rdma-core set_data_inl_seg).
func (sq *SendQueue) putInline(p int, sgl []SGE) (int, error) {
	buf := sq.buf
	hdr := p
	q := p + inlineHdrSize
	total := 0
	for j := range sgl {
		s := &sgl[j]
		n := int(s.Length)
		total += n
		if total > sq.maxInline {
			return 0, errQueueFull
		}
		src := hostBytes(s.Addr, n)
		if q+n > len(buf) {
			c := copy(buf[q:], src)
			src = src[c:]
			q = 0
		}
		q += copy(buf[q:], src)
	}
	if total == 0 {
		return 0, nil
	}
	PutInlineHeader(buf[hdr:], uint32(total))
	return InlineDS(total), nil
}

// ring is rdma-core's post_send_db: advance head, order the WQEs before the doorbell record, update the record,
// then BlueFlame the single small WQE or write the 8-byte doorbell.
func (sq *SendQueue) ring(nreq int, inl bool, ds, ctrlPos int) {
	sq.head += uint32(nreq)
	mmio.ToDeviceBarrier()
	sq.dbr.set(1, sq.curPost&0xffff)
	n64 := 0
	if bf := sq.bf; nreq == 1 && bf.bufSize != 0 && (inl || sq.preferBF) && ds > 1 && uintptr(ds) <= bf.bufSize/16 {
		n64 = (ds*16 + 63) / 64
	}
	sq.bf.ring(sq.buf, ctrlPos, n64)
}

// complete retires the WQE whose index the device reported and the unsignaled ones before it, returning its wr_id
// (rdma-core: wr_id = wrid[idx]; tail = wqe_head[idx] + 1).
func (sq *SendQueue) complete(wqeCounter uint16) uint64 {
	idx := uint32(wqeCounter) & sq.mask
	sq.tail = sq.wqeHead[idx] + 1
	return sq.wrid[idx]
}

// copyToSendWQE is scatter-to-CQE on the requester side: the device put a small RDMA-read or atomic response into
// the CQE; copy it to the buffers named by the WQE's data segments (rdma-core mlx5_copy_to_send_wqe).
func (sq *SendQueue) copyToSendWQE(wqeCounter uint16, src []byte) WCStatus {
	if sq.typ != QPTypeRC {
		return provider.WCGeneralErr
	}
	pos := int(uint32(wqeCounter)&sq.mask) * SendWQEBB
	ctrl := sq.buf[pos:]
	var off int
	switch uint8(be.Uint32(ctrl[0:])) {
	case OpcodeRDMARead:
		off = CtrlSegSize + RaddrSegSize
	case OpcodeAtomicCS, OpcodeAtomicFA:
		off = CtrlSegSize + RaddrSegSize + AtomicSegSize
	default:
		return provider.WCRemInvReqErr
	}
	nseg := int(be.Uint32(ctrl[4:])&0x3f) - off/16
	return copyToScatter(sq.buf, pos+off, nseg, src)
}

// copyToScatter copies src into the buffers described by nseg data segments starting at ring offset p (wrapping
// at the end of ring), each taking at most its byte_count (rdma-core copy_to_scat).
func copyToScatter(ring []byte, p, nseg int, src []byte) WCStatus {
	if len(src) == 0 {
		return provider.WCSuccess
	}
	for i := 0; i < nseg; i++ {
		if p >= len(ring) {
			p = 0
		}
		seg := ring[p : p+DataSegSize]
		n := min(len(src), int(be.Uint32(seg[0:])))
		copy(hostBytes(be.Uint64(seg[8:]), n), src[:n])
		src = src[n:]
		if len(src) == 0 {
			return provider.WCSuccess
		}
		p += DataSegSize
	}
	return provider.WCLocLenErr
}
