package uverbs

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// SendOps are the operations a QP's work-request builder may post (IBV_QP_EX_WITH_*), given at creation in
// QPInitAttr.SendOps; package verbs defines them.
type SendOps = verbs.SendOps

// Send operations.
const (
	SendOpRDMAWrite         = verbs.SendOpRDMAWrite
	SendOpRDMAWriteWithImm  = verbs.SendOpRDMAWriteWithImm
	SendOpSend              = verbs.SendOpSend
	SendOpSendWithImm       = verbs.SendOpSendWithImm
	SendOpRDMARead          = verbs.SendOpRDMARead
	SendOpAtomicCmpAndSwp   = verbs.SendOpAtomicCmpAndSwp
	SendOpAtomicFetchAndAdd = verbs.SendOpAtomicFetchAndAdd
	SendOpLocalInv          = verbs.SendOpLocalInv
	SendOpBindMW            = verbs.SendOpBindMW
	SendOpSendWithInv       = verbs.SendOpSendWithInv
	SendOpTSO               = verbs.SendOpTSO
	SendOpFlush             = verbs.SendOpFlush
	SendOpAtomicWrite       = verbs.SendOpAtomicWrite

	sendOpsKnown = SendOpAtomicWrite<<1 - 1
)

// sendOpOf is the SendOps bit of each work request opcode the builder makes.
var sendOpOf = [...]SendOps{
	WRRDMAWrite: SendOpRDMAWrite, WRRDMAWriteWithImm: SendOpRDMAWriteWithImm, WRSend: SendOpSend,
	WRSendWithImm: SendOpSendWithImm, WRRDMARead: SendOpRDMARead, WRAtomicCmpAndSwp: SendOpAtomicCmpAndSwp,
	WRAtomicFetchAndAdd: SendOpAtomicFetchAndAdd, WRLocalInv: SendOpLocalInv, WRBindMW: SendOpBindMW,
	WRSendWithInv: SendOpSendWithInv, WRFlush: SendOpFlush, WRAtomicWrite: SendOpAtomicWrite,
}

// checkSendOps refuses send operations the QP's provider does not build for its type, as the provider's
// libibverbs counterpart refuses them (EOPNOTSUPP); unknown bits are EINVAL.
func (c *Context) checkSendOps(t QPType, ops SendOps) error {
	if ops == 0 {
		return nil
	}
	if ops&^sendOpsKnown != 0 {
		return fmt.Errorf("unknown send operations %v: %w", ops&^sendOpsKnown, unix.EINVAL)
	}
	var have SendOps
	if s, ok := c.prov.(provider.SendOpsSupporter); ok {
		have = s.SendOps(t)
	}
	if ops&^have != 0 {
		return fmt.Errorf("send operations %v on a %v QP: %w", ops&^have, t, ErrNotSupported)
	}
	return nil
}

// WRBuilder builds a chain of send work requests in place and posts it whole: the extended QP of libibverbs
// (ibv_wr_start, ibv_wr_send … ibv_wr_set_sge …, ibv_wr_complete / ibv_wr_abort). QP.StartWR returns the QP's
// own; each operation method (Send, RDMAWrite, …) begins a work request with its WRID and flags, and the setters
// that follow (SetSGE, SetSGEList, SetInlineData, SetInlineDataList, SetUDAddr) complete it. Methods return the
// builder, so a request reads as one line:
//
//	b := qp.StartWR()
//	b.RDMAWrite(1, 0, rkey, raddr).SetSGE(mr.LKey(), addr, 4096)
//	b.Send(2, uverbs.SendSignaled).SetInlineData(hdr)
//	err := b.Complete()
//
// Building checks each request as it is made (an operation the QP was not created for, a setter that does not
// fit the request or the QP's capacities, more requests than the send queue holds); the first problem is
// reported by Complete, which then posts nothing, and names the request by its index in the chain. Complete
// posts the chain with one doorbell, or, if the device refuses one request, none of it. SGE lists and inline
// data are copied when set, as libibverbs copies them into the queue entry: the caller's slices may be reused
// at once. The QP's first StartWR allocates the builder, sized for a full send queue of requests with their
// SGEs and inline data; nothing allocates after that.
//
// From StartWR to Complete or Abort the builder holds the QP's builder lock: another goroutine's StartWR waits,
// and a goroutine that calls StartWR again first waits forever, as ibv_wr_start would spin. PostSend is not
// affected.
type WRBuilder struct {
	qp     *QP
	mu     sync.Mutex
	active bool
	wrs    []SendWR // the chain; cap = the send queue's capacity
	sges   []SGE    // maxSGE slots per request
	inline []byte   // maxInline bytes per request
	maxSGE int
	err    error // the first problem, reported by Complete
	hasAH  bool  // a request of the chain holds an AH (SetUDAddr): end clears the chain so none stays referenced
}

// StartWR begins a chain of work requests on a QP created with QPInitAttr.SendOps (ibv_wr_start). On a QP
// created without them, Complete reports EINVAL.
func (qp *QP) StartWR() *WRBuilder {
	if qp.sendOps != 0 {
		qp.wrbOnce.Do(func() { qp.wrb = newWRBuilder(qp) })
	}
	b := qp.wrb
	if b == nil {
		return &WRBuilder{qp: qp, err: wrapf(qp.ctx.dev.Name, fmt.Errorf("QP %#x was created without SendOps: %w", qp.qpn, unix.EINVAL),
			"build work requests")}
	}
	b.mu.Lock()
	b.active = true
	return b
}

// newWRBuilder sizes a builder for the QP's granted capacities: room for a full send queue of requests, each
// with max_send_sge SGEs and max_inline_data bytes of inline data.
func newWRBuilder(qp *QP) *WRBuilder {
	c := qp.cap
	maxSGE := max(int(c.MaxSendSGE), 1)
	return &WRBuilder{qp: qp, maxSGE: maxSGE, wrs: make([]SendWR, 0, max(int(c.MaxSendWR), 1)),
		sges: make([]SGE, max(int(c.MaxSendWR), 1)*maxSGE), inline: make([]byte, int(c.MaxSendWR)*int(c.MaxInlineData))}
}

// fail records the first problem of the chain, in its last request.
func (b *WRBuilder) fail(format string, args ...any) { b.failAt(len(b.wrs)-1, format, args...) }

// failAt records the first problem of the chain, in request i.
func (b *WRBuilder) failAt(i int, format string, args ...any) {
	if b.err == nil {
		b.err = wrapf(b.qp.ctx.dev.Name, fmt.Errorf(format, args...), "build work request %d on QP %#x", i, b.qp.qpn)
	}
}

// begin starts a request of opcode op, or records why it cannot be.
func (b *WRBuilder) begin(op WROpcode, wrid uint64, flags SendFlags) *SendWR {
	if !b.active || b.err != nil {
		if !b.active && b.err == nil {
			b.err = wrapf(b.qp.ctx.dev.Name, fmt.Errorf("no chain in progress (StartWR): %w", unix.EINVAL), "build work requests")
		}
		return nil
	}
	if len(b.wrs) == cap(b.wrs) {
		b.failAt(len(b.wrs), "the chain holds more than the send queue's %d requests: %w", cap(b.wrs), unix.ENOMEM)
		return nil
	}
	b.wrs = append(b.wrs, SendWR{WRID: wrid, Opcode: op, Flags: flags})
	if b.qp.sendOps&sendOpOf[op] == 0 {
		b.fail("%v: not among the QP's SendOps (%v): %w", op, b.qp.sendOps, unix.EINVAL)
		return nil
	}
	return &b.wrs[len(b.wrs)-1]
}

// last is the request a setter completes, or nil after recording why there is none.
func (b *WRBuilder) last(setter string) *SendWR {
	if !b.active || b.err != nil {
		b.begin(0, 0, 0) // records "no chain in progress" when that is the problem
		return nil
	}
	if len(b.wrs) == 0 {
		b.failAt(0, "%s before an operation: %w", setter, unix.EINVAL)
		return nil
	}
	return &b.wrs[len(b.wrs)-1]
}

// Send begins a SEND (ibv_wr_send).
func (b *WRBuilder) Send(wrid uint64, flags SendFlags) *WRBuilder {
	b.begin(WRSend, wrid, flags)
	return b
}

// SendImm begins a SEND with immediate data, imm in host byte order (ibv_wr_send_imm).
func (b *WRBuilder) SendImm(wrid uint64, flags SendFlags, imm uint32) *WRBuilder {
	if wr := b.begin(WRSendWithImm, wrid, flags); wr != nil {
		wr.Imm = imm
	}
	return b
}

// SendInv begins a SEND that invalidates invalidateRKey at the responder (ibv_wr_send_inv).
func (b *WRBuilder) SendInv(wrid uint64, flags SendFlags, invalidateRKey uint32) *WRBuilder {
	if wr := b.begin(WRSendWithInv, wrid, flags); wr != nil {
		wr.Imm = invalidateRKey
	}
	return b
}

// RDMAWrite begins an RDMA WRITE to remoteAddr under rkey (ibv_wr_rdma_write).
func (b *WRBuilder) RDMAWrite(wrid uint64, flags SendFlags, rkey uint32, remoteAddr uint64) *WRBuilder {
	b.remote(WRRDMAWrite, wrid, flags, rkey, remoteAddr)
	return b
}

// RDMAWriteImm begins an RDMA WRITE with immediate data (ibv_wr_rdma_write_imm).
func (b *WRBuilder) RDMAWriteImm(wrid uint64, flags SendFlags, rkey uint32, remoteAddr uint64, imm uint32) *WRBuilder {
	if wr := b.remote(WRRDMAWriteWithImm, wrid, flags, rkey, remoteAddr); wr != nil {
		wr.Imm = imm
	}
	return b
}

// RDMARead begins an RDMA READ from remoteAddr under rkey (ibv_wr_rdma_read).
func (b *WRBuilder) RDMARead(wrid uint64, flags SendFlags, rkey uint32, remoteAddr uint64) *WRBuilder {
	b.remote(WRRDMARead, wrid, flags, rkey, remoteAddr)
	return b
}

// AtomicCmpSwp begins an atomic compare-and-swap of the 8 bytes at remoteAddr (ibv_wr_atomic_cmp_swp); the
// original value lands in the request's SGE.
func (b *WRBuilder) AtomicCmpSwp(wrid uint64, flags SendFlags, rkey uint32, remoteAddr, compare, swap uint64) *WRBuilder {
	if wr := b.remote(WRAtomicCmpAndSwp, wrid, flags, rkey, remoteAddr); wr != nil {
		wr.CompareAdd, wr.Swap = compare, swap
	}
	return b
}

// AtomicFetchAdd begins an atomic fetch-and-add on the 8 bytes at remoteAddr (ibv_wr_atomic_fetch_add).
func (b *WRBuilder) AtomicFetchAdd(wrid uint64, flags SendFlags, rkey uint32, remoteAddr, add uint64) *WRBuilder {
	if wr := b.remote(WRAtomicFetchAndAdd, wrid, flags, rkey, remoteAddr); wr != nil {
		wr.CompareAdd = add
	}
	return b
}

// AtomicWrite begins an RDMA ATOMIC WRITE of the 8-byte value (host byte order) to remoteAddr
// (ibv_wr_atomic_write, which takes the 8 bytes by address).
func (b *WRBuilder) AtomicWrite(wrid uint64, flags SendFlags, rkey uint32, remoteAddr, value uint64) *WRBuilder {
	if wr := b.remote(WRAtomicWrite, wrid, flags, rkey, remoteAddr); wr != nil {
		wr.Swap = value
	}
	return b
}

// Flush begins an RDMA FLUSH of length bytes at remoteAddr with its placement type and selectivity level
// (ibv_wr_flush). It carries no SGE.
func (b *WRBuilder) Flush(wrid uint64, flags SendFlags, rkey uint32, remoteAddr uint64, length uint32, typ FlushType, level FlushLevel) *WRBuilder {
	if wr := b.remote(WRFlush, wrid, flags, rkey, remoteAddr); wr != nil {
		wr.Flush = Flush{Length: length, Type: typ, Level: level}
	}
	return b
}

// remote begins an operation on the peer's memory.
func (b *WRBuilder) remote(op WROpcode, wrid uint64, flags SendFlags, rkey uint32, remoteAddr uint64) *SendWR {
	wr := b.begin(op, wrid, flags)
	if wr != nil {
		wr.RKey, wr.RemoteAddr = rkey, remoteAddr
	}
	return wr
}

// MWBindInfo is what a memory window is bound to (struct ibv_mw_bind_info).
type MWBindInfo struct {
	MR     *MR
	Addr   uint64 // start of the window inside the MR
	Length uint64
	Access Access // the rights the window grants
}

// BindMW begins a bind of mw to info, giving it newRKey (ibv_wr_bind_mw); as in libibverbs, the window's
// recorded rkey is the caller's to update (MW.SetRKey) once the bind completes.
func (b *WRBuilder) BindMW(wrid uint64, flags SendFlags, mw *MW, newRKey uint32, info MWBindInfo) *WRBuilder {
	wr := b.begin(WRBindMW, wrid, flags)
	if wr == nil {
		return b
	}
	if mw == nil || (info.MR == nil && info.Length != 0) {
		b.fail("bind needs a window and, unless it unbinds (length 0), an MR: %w", unix.EINVAL)
		return b
	}
	wr.Bind = MWBind{MWRKey: mw.RKey(), NewRKey: newRKey, Addr: info.Addr, Length: info.Length, Access: uint32(info.Access)}
	if info.MR != nil {
		wr.Bind.MRLKey = info.MR.LKey()
	}
	return b
}

// LocalInv begins a local invalidate of invalidateRKey (ibv_wr_local_inv).
func (b *WRBuilder) LocalInv(wrid uint64, flags SendFlags, invalidateRKey uint32) *WRBuilder {
	if wr := b.begin(WRLocalInv, wrid, flags); wr != nil {
		wr.Imm = invalidateRKey
	}
	return b
}

// sgeSlots are the builder's SGE slots of the last request.
func (b *WRBuilder) sgeSlots() []SGE {
	i := (len(b.wrs) - 1) * b.maxSGE
	return b.sges[i : i+b.maxSGE : i+b.maxSGE]
}

// SetSGE gives the last request one data segment (ibv_wr_set_sge).
func (b *WRBuilder) SetSGE(lkey uint32, addr uint64, length uint32) *WRBuilder {
	if wr := b.last("SetSGE"); wr != nil {
		s := b.sgeSlots()[:1]
		s[0] = SGE{Addr: addr, Length: length, LKey: lkey}
		wr.SGL = s
	}
	return b
}

// SetSGEList gives the last request its data segments, copied (ibv_wr_set_sge_list).
func (b *WRBuilder) SetSGEList(sgl []SGE) *WRBuilder {
	wr := b.last("SetSGEList")
	if wr == nil {
		return b
	}
	if len(sgl) > b.maxSGE || (b.qp.cap.MaxSendSGE == 0 && len(sgl) > 0) {
		b.fail("%d SGEs, the QP's max_send_sge is %d: %w", len(sgl), b.qp.cap.MaxSendSGE, unix.EINVAL)
		return b
	}
	s := b.sgeSlots()[:len(sgl)]
	copy(s, sgl)
	wr.SGL = s
	return b
}

// SetInlineData gives the last request data copied into the queue entry (ibv_wr_set_inline_data).
func (b *WRBuilder) SetInlineData(data []byte) *WRBuilder {
	if wr := b.last("SetInlineData"); wr != nil {
		b.setInline(wr, data)
	}
	return b
}

// SetInlineDataList gives the last request the concatenation of bufs as inline data
// (ibv_wr_set_inline_data_list).
func (b *WRBuilder) SetInlineDataList(bufs [][]byte) *WRBuilder {
	wr := b.last("SetInlineDataList")
	if wr == nil {
		return b
	}
	n := 0
	for _, p := range bufs {
		n += len(p)
	}
	slot := b.inlineSlot(n)
	if slot == nil && n > 0 {
		return b
	}
	off := 0
	for _, p := range bufs {
		off += copy(slot[off:], p)
	}
	b.pointInline(wr, slot[:n])
	return b
}

func (b *WRBuilder) setInline(wr *SendWR, data []byte) {
	slot := b.inlineSlot(len(data))
	if slot == nil && len(data) > 0 {
		return
	}
	copy(slot, data)
	b.pointInline(wr, slot[:len(data)])
}

// inlineSlot is the last request's inline area for n bytes, or nil after recording that n does not fit.
func (b *WRBuilder) inlineSlot(n int) []byte {
	max := int(b.qp.cap.MaxInlineData)
	if n > max {
		b.fail("%d bytes of inline data, the QP's max_inline_data is %d: %w", n, max, unix.EINVAL)
		return nil
	}
	i := (len(b.wrs) - 1) * max
	return b.inline[i : i+max : i+max]
}

// pointInline makes data (in the builder's inline area, which lives as long as the QP) the request's inline
// payload: one SGE at its address that the provider copies from at Complete.
func (b *WRBuilder) pointInline(wr *SendWR, data []byte) {
	wr.Flags |= SendInline
	s := b.sgeSlots()[:0]
	if len(data) > 0 {
		s = s[:1]
		s[0] = SGE{Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data)))), Length: uint32(len(data))}
	}
	wr.SGL = s
}

// SetUDAddr addresses the last request of a UD QP: the peer's AH, QP number and Q_Key (ibv_wr_set_ud_addr).
func (b *WRBuilder) SetUDAddr(ah *AH, remoteQPN, remoteQKey uint32) *WRBuilder {
	wr := b.last("SetUDAddr")
	if wr == nil {
		return b
	}
	if ah == nil {
		b.fail("no AH: %w", unix.EINVAL)
		return b
	}
	wr.AH, wr.RemoteQPN, wr.RemoteQKey = ah.Data(), remoteQPN, remoteQKey
	b.hasAH = true
	return b
}

// Len is the number of requests in the chain so far.
func (b *WRBuilder) Len() int { return len(b.wrs) }

// Complete posts the chain with one doorbell and ends it (ibv_wr_complete). If building found a problem, or the
// device refuses a request (a full send queue, the QP not in RTS, an operation the device lacks), nothing is
// posted and the error names the request by its index; errors.Is matches the errno (and ErrClosed after
// Close). It allocates nothing when it succeeds.
func (b *WRBuilder) Complete() error {
	if b.err != nil || !b.active {
		err := b.err
		if err == nil {
			err = wrapf(b.qp.ctx.dev.Name, fmt.Errorf("no chain in progress (StartWR): %w", unix.EINVAL), "complete work requests")
		}
		b.end()
		return err
	}
	qp := b.qp
	var err error
	if !qp.g.Enter() {
		err = qp.ctx.dpErrs.get(opPostSend, provider.Destroyed)
	} else {
		if bad, st := qp.prov.PostSendAll(b.wrs); st != provider.OK {
			e := qp.ctx.dpErrs.get(opPostSend, st).(*Error)
			err = &Error{Op: fmt.Sprintf("complete work request %d of %d (%v) on QP %#x", bad, len(b.wrs), b.wrs[bad].Opcode, qp.qpn),
				Device: e.Device, Err: e.Err}
		}
		qp.g.Exit()
	}
	b.end()
	return err
}

// Abort ends the chain without posting any of it (ibv_wr_abort).
func (b *WRBuilder) Abort() { b.end() }

// end clears the chain and releases the builder.
func (b *WRBuilder) end() {
	if b.hasAH {
		// The only references a request holds are to AHs; each request is written whole when the next chain
		// appends it, so a chain without one leaves nothing to clear.
		clear(b.wrs)
		b.hasAH = false
	}
	b.wrs = b.wrs[:0]
	b.err = nil
	if b.active {
		b.active = false
		if b.qp.wrb == b {
			b.mu.Unlock()
		}
	}
}
