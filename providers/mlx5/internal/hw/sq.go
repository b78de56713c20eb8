package hw

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

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
//
// The hot path addresses the ring through base, an unsafe pointer to its first byte: every WQE position is
// (index & mask) * 64 and every segment offset is checked against qend (the ring's length, a multiple of 64)
// before use, so no access leaves the ring that NewSendQueue verified; the compiler's per-access bounds checks
// are what this replaces.
type SendQueue struct {
	buf       []byte
	base      unsafe.Pointer // &buf[0]
	qend      uintptr        // len(buf)
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
	ops       *[16]sqOp // opcode table for this QP's type and atomics setting
	head      uint32    // work requests posted (free running)
	tail      uint32    // work requests retired by completions (written by the poller: see tail.go)
	curPost   uint32    // basic blocks posted (free running; low 16 bits are the WQE index)
	ents      []sqEntry // per WQE index: wr_id and the head value when it was posted
}

// sqEntry is rdma-core's sq.wrid[idx] and sq.wqe_head[idx] side by side: a completion reads both.
type sqEntry struct {
	wrid uint64
	head uint32
}

// ent returns the bookkeeping entry of WQE index idx (idx <= mask; len(ents) == mask+1).
func (sq *SendQueue) ent(idx uint32) *sqEntry {
	return (*sqEntry)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(sq.ents)), uintptr(idx)*unsafe.Sizeof(sqEntry{})))
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
		ents:      make([]sqEntry, cfg.WQECount),
	}
	sq.base = unsafe.Pointer(unsafe.SliceData(sq.buf))
	sq.qend = uintptr(len(sq.buf))
	sq.setOps()
	if cfg.SignalAll {
		sq.sigBits = CtrlCQUpdate
	}
	return sq, nil
}

// QPN returns the queue pair number the WQEs carry.
func (sq *SendQueue) QPN() uint32 { return sq.qpn }

// Outstanding returns the number of posted work requests not yet retired by a completion.
func (sq *SendQueue) Outstanding() int { return int(sq.head - loadTail(&sq.tail)) }

// Reset returns the queue to its state after creation, as rdma-core does on a transition to RESET (indices and
// the send doorbell counter to zero). The caller purges the CQ.
func (sq *SendQueue) Reset() {
	sq.head, sq.curPost, sq.fmCache = 0, 0, 0
	storeTail(&sq.tail, 0)
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
	imm         bool   // the ctrl segment carries WR.Imm (immediate data or the rkey to invalidate)
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
	verbs.WRRDMAWrite:         {opcode: OpcodeRDMAWrite, kind: kindRDMA, types: onRC | onUC, valid: true},
	verbs.WRRDMAWriteWithImm:  {opcode: OpcodeRDMAWriteImm, kind: kindRDMA, types: onRC | onUC, imm: true, valid: true},
	verbs.WRSend:              {opcode: OpcodeSend, kind: kindSend, types: onAll, valid: true},
	verbs.WRSendWithImm:       {opcode: OpcodeSendImm, kind: kindSend, types: onAll, imm: true, valid: true},
	verbs.WRRDMARead:          {opcode: OpcodeRDMARead, kind: kindRDMA, types: onRC, valid: true},
	verbs.WRAtomicCmpAndSwp:   {opcode: OpcodeAtomicCS, kind: kindAtomic, types: onRC, atomic: true, valid: true},
	verbs.WRAtomicFetchAndAdd: {opcode: OpcodeAtomicFA, kind: kindAtomic, types: onRC, atomic: true, valid: true},
	verbs.WRLocalInv:          {unsupported: true, valid: true},
	verbs.WRBindMW:            {unsupported: true, valid: true},
	verbs.WRSendWithInv:       {opcode: OpcodeSendInval, kind: kindSend, types: onRC | onUC, imm: true, valid: true},
	wrTSO:                     {unsupported: true, valid: true},
	wrDriver1:                 {unsupported: true, valid: true},
	verbs.WRFlush:             {unsupported: true, valid: true}, // rxe-only in rdma-core too
	verbs.WRAtomicWrite:       {unsupported: true, valid: true},
}

// classify returns the mlx5 opcode and segment layout for op on a QP of type t, or why it cannot be posted:
// OpcodeNotSupported for opcodes this provider does not build (UMR for memory windows and local invalidate,
// TSO, atomics when disabled), BadOpcode for opcodes the verbs do not define or the transport cannot carry.
func classify(op verbs.WROpcode, t QPType, atomics bool) (uint8, wrKind, provider.Status) {
	if op >= verbs.WROpcode(len(opTable)) {
		return 0, 0, provider.BadOpcode
	}
	in := &opTable[op]
	switch {
	case !in.valid:
		return 0, 0, provider.BadOpcode
	case in.unsupported:
		return 0, 0, provider.OpcodeNotSupported
	case in.types&(1<<t) == 0:
		return 0, 0, provider.BadOpcode
	case in.atomic && !atomics:
		return 0, 0, provider.OpcodeNotSupported
	}
	return in.opcode, in.kind, provider.OK
}

// sqOp is classify's answer for one opcode, precomputed per (QP type, atomics): the post loop does one table load
// instead of a chain of tests.
type sqOp struct {
	opcode  uint8
	kind    wrKind
	bad     uint8  // provider.OK, or why this opcode cannot be posted (a provider.Status below 256)
	immMask uint32 // all ones when the ctrl segment carries WR.Imm
}

// sqOpTables holds the precomputed tables, indexed by QP type (RC, UC, UD) and atomics.
var sqOpTables = func() (t [3][2][16]sqOp) {
	for ti, qt := range [3]QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		for a := range 2 {
			for op := range 16 {
				o := &t[ti][a][op]
				opcode, kind, st := classify(verbs.WROpcode(op), qt, a == 1)
				o.opcode, o.kind, o.bad = opcode, kind, uint8(st)
				if st == provider.OK && opTable[op].imm {
					o.immMask = ^uint32(0)
				}
			}
		}
	}
	return t
}()

// setOps selects the opcode table for the queue's type and atomics setting.
func (sq *SendQueue) setOps() {
	a := 0
	if sq.atomics {
		a = 1
	}
	sq.ops = &sqOpTables[sq.typ-QPTypeRC][a]
}

// fmFlags maps the low three IBV_SEND_* flags (fence, signaled, solicited) to their fm_ce_se bits.
var fmFlags = [8]uint8{
	0, CtrlFence, CtrlCQUpdate, CtrlFence | CtrlCQUpdate,
	CtrlSolicited, CtrlFence | CtrlSolicited, CtrlCQUpdate | CtrlSolicited, CtrlFence | CtrlCQUpdate | CtrlSolicited,
}

// PostSend builds one WQE per work request in order and rings the doorbell once for the batch (rdma-core
// _mlx5_post_send + post_send_db). It returns how many work requests were posted and provider.OK, or, when
// wrs[n] could not be posted, n and why: the ones before it are posted and rung, nothing of wrs[n] or later is.
// The statuses (errnos in internal/provider's table): QueueFull (ENOMEM); TooManySGE, InlineTooLong, TooLong,
// BadAtomic (an unaligned remote address or less than 8 bytes), NoAH, BadAH (an AH carrying a kernel AH number,
// which mlx5 AHs never do), BadOpcode for an opcode the verbs do not define or the QP type cannot carry (EINVAL);
// OpcodeNotSupported (EOPNOTSUPP) for atomics when disabled and for memory-window, local-invalidate and TSO
// requests. No outcome allocates.
func (sq *SendQueue) PostSend(wrs []SendWR) (int, provider.Status) {
	if len(wrs) == 1 {
		return sq.PostOne(&wrs[0])
	}
	var (
		nreq    int
		bad     provider.Status
		inl     bool
		ds      uint32
		ctrlPos uintptr
		head    = sq.head
		curPost = sq.curPost
	)
	for i := range wrs {
		w := &wrs[i]
		if head-loadTail(&sq.tail) >= sq.maxPost {
			bad = provider.QueueFull
			break
		}
		var n uint32
		n, bad = sq.build(w, curPost, head)
		if bad != provider.OK {
			break
		}
		ds, ctrlPos = n, uintptr(curPost&sq.mask)*SendWQEBB
		curPost += (n*16 + SendWQEBB - 1) / SendWQEBB
		head++
		nreq++
	}
	if nreq > 0 {
		if nreq == 1 { // only a single WQE can go by BlueFlame: as rdma-core, inline means inline with an SGE
			inl = wrs[0].Flags&verbs.SendInline != 0 && len(wrs[0].SGL) > 0
		}
		sq.fmCache = 0
		sq.curPost = curPost
		sq.ring(head, nreq, inl, ds, ctrlPos)
	}
	return nreq, bad
}

// PostSendAll is PostSend for a chain posted whole (ibv_wr_complete): when wrs[bad] cannot be posted, nothing
// is: the WQEs already built stay past the producer (sq.head, sq.curPost unchanged), where the device never
// reads them, and the doorbell is not rung. It returns bad and why, or len(wrs) and provider.OK. A chain of one
// request is PostOne's (which posts nothing when it refuses), as in PostSend.
func (sq *SendQueue) PostSendAll(wrs []SendWR) (int, provider.Status) {
	if len(wrs) == 1 {
		return sq.PostOne(&wrs[0])
	}
	head, curPost := sq.head, sq.curPost
	var ds uint32
	var ctrlPos uintptr
	for i := range wrs {
		if head-loadTail(&sq.tail) >= sq.maxPost {
			return i, provider.QueueFull
		}
		n, bad := sq.build(&wrs[i], curPost, head)
		if bad != provider.OK {
			return i, bad
		}
		ds, ctrlPos = n, uintptr(curPost&sq.mask)*SendWQEBB
		curPost += (n*16 + SendWQEBB - 1) / SendWQEBB
		head++
	}
	if len(wrs) > 0 {
		inl := len(wrs) == 1 && wrs[0].Flags&verbs.SendInline != 0 && len(wrs[0].SGL) > 0
		sq.fmCache = 0
		sq.curPost = curPost
		sq.ring(head, len(wrs), inl, ds, ctrlPos)
	}
	return len(wrs), provider.OK
}

// PostOne is PostSend of the one work request *w, the latency-critical case: the same steps and outcomes
// without the batch loop's bookkeeping. PostSend calls it for a one-element slice, and so may a caller that has
// already looked at the slice's length (the provider's QP, one call level less on the public path).
//
// nosplit: a short straight-line function on the post path; without the stack-bound check each call saves 3-4
// instructions (mlx5bench: inline SEND 318 -> 312, 16 RDMA writes 178 -> 174 per WR). The linker verifies that
// the nosplit frames fit the stack guard; the callees it may reach are ordinary functions with their own checks.
//
//go:nosplit
func (sq *SendQueue) PostOne(w *SendWR) (int, provider.Status) {
	head, curPost := sq.head, sq.curPost
	if head-loadTail(&sq.tail) >= sq.maxPost {
		return 0, provider.QueueFull
	}
	n, bad := sq.build(w, curPost, head)
	if bad != provider.OK {
		return 0, bad
	}
	// ring, inlined: one call level less on the latency path.
	sq.fmCache = 0
	sq.head = head + 1
	sq.curPost = curPost + (n*16+SendWQEBB-1)/SendWQEBB
	mmio.ToDeviceBarrier()
	sq.dbr.set(1, sq.curPost&0xffff)
	bf := sq.bf
	n64 := 0
	if n > 1 && n <= bf.maxDS && (sq.preferBF || w.Flags&verbs.SendInline != 0 && len(w.SGL) > 0) {
		n64 = int(n*16+63) / 64
	}
	bf.ring(sq.base, sq.qend, uintptr(curPost&sq.mask)*SendWQEBB, n64)
	return 1, provider.OK
}

// build writes the WQE for w at WQE index curPost (its bookkeeping entry records head) and returns its size in
// 16-byte units and provider.OK, or why w cannot be posted, with nothing posted. It is kept out of PostSend's
// loop so that the loop's few batch variables stay in registers.
//
// nosplit: a short straight-line function on the post path; without the stack-bound check each call saves 3-4
// instructions (mlx5bench: inline SEND 318 -> 312, 16 RDMA writes 178 -> 174 per WR). The linker verifies that
// the nosplit frames fit the stack guard; the callees it may reach are ordinary functions with their own checks.
//
//go:nosplit
func (sq *SendQueue) build(w *SendWR, curPost, head uint32) (uint32, provider.Status) {
	if w.Opcode >= 16 {
		return 0, provider.BadOpcode
	}
	op := &sq.ops[w.Opcode]
	if op.bad != 0 {
		return 0, provider.Status(op.bad)
	}
	if len(w.SGL) > sq.maxSGE {
		return 0, provider.TooManySGE
	}
	// As rxe: a message whose SGE lengths add up to more than 32 bits is refused, not wrapped. One SGE (the
	// common case) cannot, so only longer lists are summed.
	if len(w.SGL) > 1 && sgeTotal(w.SGL) > 1<<32-1 {
		return 0, provider.TooLong
	}
	base, qend := sq.base, sq.qend
	idx := curPost & sq.mask
	pos := uintptr(idx) * SendWQEBB
	// The first basic block: ctrl, raddr, atomic and datagram segments never leave it.
	bb := (*[SendWQEBB]byte)(unsafe.Add(base, pos))
	p := pos + CtrlSegSize
	n := uint32(1)

	switch op.kind {
	case kindRDMA:
		PutRaddrSeg(bb[16:32], w.RemoteAddr, w.RKey)
		p += RaddrSegSize
		n++
	case kindAtomic:
		// As rdma-core's rxe provider (validate_send_wr) and so with the same errno on both providers: an
		// atomic needs an 8-byte aligned remote address and room for its 8-byte result.
		if w.RemoteAddr&7 != 0 || sgeTotal(w.SGL) < AtomicSize {
			return 0, provider.BadAtomic
		}
		PutRaddrSeg(bb[16:32], w.RemoteAddr, w.RKey)
		if op.opcode == OpcodeAtomicCS {
			PutAtomicSeg(bb[32:48], w.Swap, w.CompareAdd)
		} else {
			PutAtomicSeg(bb[32:48], w.CompareAdd, 0)
		}
		p += RaddrSegSize + AtomicSegSize
		n += 2
	}
	if sq.typ == QPTypeUD {
		if w.AH == nil {
			return 0, provider.NoAH
		}
		if w.AH.Num != 0 { // a kernel AH number: another provider's (rxe) address handle
			return 0, provider.BadAH
		}
		PutDatagramSeg(bb[16:64], &w.AH.AV, w.RemoteQPN, w.RemoteQKey)
		p += DatagramSegSize
		n += DatagramSegSize / 16
		if p == qend {
			p = 0
		}
	}

	if w.Flags&verbs.SendInline != 0 && len(w.SGL) > 0 {
		if s := &w.SGL[0]; len(w.SGL) == 1 && int(s.Length) <= sq.maxInline && p+inlineHdrSize+uintptr(s.Length) <= qend {
			// One SGE that does not wrap: the common inline send, without putInline's general loop.
			if l := s.Length; l != 0 {
				copyBytes(unsafe.Add(base, p+inlineHdrSize), hostPtr(s.Addr), uintptr(l))
				be.PutUint32((*[inlineHdrSize]byte)(unsafe.Add(base, p))[:], l|InlineSeg)
				n += (inlineHdrSize + l + 15) / 16
			}
		} else {
			sz, ok := sq.putInline(p, w.SGL)
			if !ok {
				return 0, provider.InlineTooLong
			}
			n += sz
		}
	} else if len(w.SGL) == 1 && op.kind != kindAtomic {
		// One SGE, the common case, without the general loop: p is inside the ring (the first block's segments
		// end before qend, or wrapped to 0 above).
		if s := &w.SGL[0]; s.Length != 0 {
			PutDataSeg((*[DataSegSize]byte)(unsafe.Add(base, p))[:], s.Length, s.LKey, s.Addr)
			n++
		}
	} else {
		for j := range w.SGL {
			s := &w.SGL[j]
			if p == qend {
				p = 0
			}
			if s.Length == 0 {
				continue
			}
			length := s.Length
			if op.kind == kindAtomic {
				length = AtomicSize
			}
			PutDataSeg((*[DataSegSize]byte)(unsafe.Add(base, p))[:], length, s.LKey, s.Addr)
			p += DataSegSize
			n++
		}
	}

	fmCeSe := sq.sigBits | fmFlags[w.Flags&7]
	if w.Flags&verbs.SendFence == 0 {
		fmCeSe |= sq.fmCache
	}
	// The ctrl segment as two big-endian 64-bit words: opmod_idx_opcode | qpn_ds, then signature (0),
	// dci_stream_channel_id (0), fm_ce_se | imm.
	storeBE64(unsafe.Pointer(bb), uint64(curPost&0xffff<<8|uint32(op.opcode))<<32|uint64(sq.qpn<<8|n))
	storeBE64(unsafe.Pointer(&bb[8]), uint64(fmCeSe)<<32|uint64(w.Imm&op.immMask))
	sq.fmCache = 0
	e := sq.ent(idx)
	e.wrid, e.head = w.WRID, head
	return n, provider.OK
}

// sgeTotal is the sum of the SGE lengths in 64 bits.
func sgeTotal(sgl []SGE) uint64 {
	var t uint64
	for i := range sgl {
		t += uint64(sgl[i].Length)
	}
	return t
}

// recvSGLStatus judges a receive WR's SGE list for a ring whose WQEs hold maxGS segments, as rdma-core does:
// TooManySGE for more than maxGS, then TooLong for lengths that add up to more than 2^32-1; OK otherwise.
func recvSGLStatus(sgl []SGE, maxGS int) provider.Status {
	if len(sgl) > maxGS {
		return provider.TooManySGE
	}
	if len(sgl) > 1 && sgeTotal(sgl) > 1<<32-1 {
		return provider.TooLong
	}
	return provider.OK
}

// putInline copies the SGEs' bytes behind an inline header at ring offset p, wrapping at the end of the ring, and
// returns the segment's size in 16-byte units (rdma-core set_data_inl_seg); ok is false when the payload exceeds
// MaxInline. p is 16-byte aligned and inside the ring; the payload (at most MaxInline bytes, which NewSendQueue
// checked fits a WQE, and a WQE fits the ring) wraps at most once.
func (sq *SendQueue) putInline(p uintptr, sgl []SGE) (uint32, bool) {
	base, qend := sq.base, sq.qend
	hdr := p
	q := p + inlineHdrSize
	total := 0
	for j := range sgl {
		s := &sgl[j]
		n := uintptr(s.Length)
		total += int(n)
		if total > sq.maxInline {
			return 0, false
		}
		if n == 0 {
			continue
		}
		src := hostPtr(s.Addr)
		if q+n > qend {
			c := qend - q
			copyBytes(unsafe.Add(base, q), src, c)
			src, n, q = unsafe.Add(src, c), n-c, 0
		}
		copyBytes(unsafe.Add(base, q), src, n)
		q += n
	}
	if total == 0 {
		return 0, true
	}
	PutInlineHeader((*[inlineHdrSize]byte)(unsafe.Add(base, hdr))[:], uint32(total))
	return uint32(InlineDS(total)), true
}

// ring is rdma-core's post_send_db: advance head, order the WQEs before the doorbell record, update the record,
// then BlueFlame the single small WQE or write the 8-byte doorbell.
func (sq *SendQueue) ring(head uint32, nreq int, inl bool, ds uint32, ctrlPos uintptr) {
	sq.head = head
	mmio.ToDeviceBarrier()
	sq.dbr.set(1, sq.curPost&0xffff)
	bf := sq.bf
	n64 := 0
	if nreq == 1 && ds > 1 && ds <= bf.maxDS && (inl || sq.preferBF) {
		n64 = int(ds*16+63) / 64
	}
	bf.ring(sq.base, sq.qend, ctrlPos, n64)
}

// complete retires the WQE whose index the device reported and the unsignaled ones before it, returning its wr_id
// (rdma-core: wr_id = wrid[idx]; tail = wqe_head[idx] + 1).
func (sq *SendQueue) complete(wqeCounter uint16) uint64 {
	e := sq.ent(uint32(wqeCounter) & sq.mask)
	id := e.wrid
	storeTail(&sq.tail, e.head+1)
	return id
}

// copyToSendWQE is scatter-to-CQE on the requester side: the device put a small RDMA-read or atomic response into
// the CQE; copy it to the buffers named by the WQE's data segments (rdma-core mlx5_copy_to_send_wqe).
func (sq *SendQueue) copyToSendWQE(wqeCounter uint16, src []byte) WCStatus {
	if sq.typ != QPTypeRC {
		return verbs.WCGeneralErr
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
		return verbs.WCRemInvReqErr
	}
	nseg := int(be.Uint32(ctrl[4:])&0x3f) - off/16
	return copyToScatter(sq.buf, pos+off, nseg, src)
}

// copyToScatter copies src into the buffers described by nseg data segments starting at ring offset p (wrapping
// at the end of ring), each taking at most its byte_count (rdma-core copy_to_scat).
func copyToScatter(ring []byte, p, nseg int, src []byte) WCStatus {
	if len(src) == 0 {
		return verbs.WCSuccess
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
			return verbs.WCSuccess
		}
		p += DataSegSize
	}
	return verbs.WCLocLenErr
}
