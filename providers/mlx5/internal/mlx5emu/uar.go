package mlx5emu

import (
	"bytes"
	"encoding/binary"
)

// uarSlot is one doorbell register half (or the CQ doorbell word).
type uarSlot struct {
	off, size int
	// last is the content read by the previous background pass; a slot
	// is consumed in background mode only after two equal reads.
	last []byte
}

// readSlot snapshots a register with 8-byte atomic loads.
func (d *Device) readSlot(s *uarSlot) []byte {
	out := make([]byte, s.size)
	for i := 0; i < s.size; i += 8 {
		w := loadRaw64(d.uar[s.off+i:])
		copy(out[i:], w[:])
	}
	return out
}

// clearSlot zeroes the words of a consumed register that still hold what
// was read (a word rewritten meanwhile is left for the next pass).
func (d *Device) clearSlot(s *uarSlot, seen []byte) {
	for i := 0; i < s.size; i += 8 {
		var w [8]byte
		copy(w[:], seen[i:i+8])
		if w != [8]byte{} {
			casZero64(d.uar[s.off+i:], w)
		}
	}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// take returns the content of a register written since the last pass, or
// nil when there is none (or, in background mode, when it is not yet stable).
func (d *Device) take(s *uarSlot, lenient bool) []byte {
	cur := d.readSlot(s)
	if allZero(cur) {
		s.last = nil
		return nil
	}
	if lenient && !bytes.Equal(cur, s.last) {
		s.last = cur
		return nil
	}
	s.last = nil
	d.clearSlot(s, cur)
	return cur
}

// scanUAR consumes the CQ arm doorbell and the send doorbell / BlueFlame
// registers.
func (d *Device) scanUAR(lenient bool) int {
	work := 0
	for i := range d.armSlots {
		b := d.take(&d.armSlots[i], lenient)
		if b == nil {
			continue
		}
		work++
		word, cqn := be32(b[0:]), be32(b[4:])
		if c, ok := d.cqs[cqn]; ok {
			c.stats.ArmDoorbells++
			rec := loadBE32(c.dbr[4:])
			if rec != word && !lenient {
				d.protoErr("CQ %#x arm doorbell %#08x differs from the arm word %#08x of its doorbell record", cqn, word, rec)
			}
			if !c.recArm || word != c.lastArm {
				d.arm(c, word)
			}
			c.recArm = false
			c.lastArm = rec
		} else {
			d.protoErr("CQ arm doorbell %#016x names no CQ", binary.BigEndian.Uint64(b))
		}
	}
	for i := range d.slots {
		if b := d.take(&d.slots[i], lenient); b != nil {
			work++
			d.sendDoorbell(b, lenient)
		}
	}
	return work
}

// wqeBytes returns the nbb basic blocks starting at WQE index idx from buf
// (the live SQ or the shadow), wrapping at the end of the ring.
func (q *qp) wqeBytes(buf []byte, idx uint16, nbb int) []byte {
	out := make([]byte, 0, nbb*64)
	for i := 0; i < nbb; i++ {
		p := (int(idx) + i) & (q.sqCnt - 1)
		out = append(out, buf[p*64:p*64+64]...)
	}
	return out
}

// postedWQE finds the bytes of the WQE that starts at idx: a WQE still
// pending in the SQ (before the doorbell record) or one already executed
// (kept in the shadow copy).
func (q *qp) postedWQE(idx uint16, nbb int) (w []byte, pending, ok bool) {
	dbr := uint16(loadBE32(q.cfg.DBR[4:]))
	if nbb <= q.sqCnt && uint16(idx-q.sqCI) < uint16(dbr-q.sqCI) && int(uint16(dbr-idx)) >= nbb {
		return q.wqeBytes(q.sq, idx, nbb), true, true
	}
	if q.shadowIdx[int(idx)&(q.sqCnt-1)] == int32(idx) {
		return q.wqeBytes(q.shadow, idx, nbb), false, true
	}
	return nil, false, false
}

// sendDoorbell verifies one send register write: its first 8 bytes must be
// the first 8 bytes of the ctrl segment of a posted WQE; anything after
// them is a BlueFlame copy, which must equal the WQE's basic blocks.
func (d *Device) sendDoorbell(b []byte, lenient bool) {
	opmodIdx, qpnDS := be32(b[0:]), be32(b[4:])
	qpn, ds, idx := qpnDS>>8, int(qpnDS&0x3f), uint16(opmodIdx>>8)
	q, ok := d.qps[qpn]
	if !ok {
		if !lenient {
			d.protoErr("send doorbell %#016x names no QP", binary.BigEndian.Uint64(b))
		}
		return
	}
	if ds == 0 {
		d.unverified(q, lenient, "send doorbell for QP %#x WQE %#x has ds 0", qpn, idx)
		return
	}
	nbb := (ds*16 + 63) / 64
	w, pending, ok := q.postedWQE(idx, nbb)
	if !ok {
		d.unverified(q, lenient, "send doorbell for QP %#x names WQE %#x, which was not posted (SQ doorbell record %#x)",
			qpn, idx, uint16(loadBE32(q.cfg.DBR[4:])))
		return
	}
	if !bytes.Equal(w[:8], b[:8]) {
		d.unverified(q, lenient, "send doorbell %x for QP %#x differs from WQE %#x ctrl %x", b[:8], qpn, idx, w[:8])
		return
	}
	if end := idx + uint16(nbb); pending && uint16(end-q.sqCI) > uint16(q.dbLimit-q.sqCI) {
		q.dbLimit = end
	}
	if allZero(b[8:]) {
		q.stats.Doorbells++
		return
	}
	if d.opts.BFRegSize == 0 {
		d.unverified(q, lenient, "QP %#x: BlueFlame write on a device without BlueFlame", qpn)
		return
	}
	if nbb*64 > len(b) {
		d.unverified(q, lenient, "QP %#x WQE %#x: BlueFlame write of a %d-byte WQE exceeds buf_size %d", qpn, idx, ds*16, len(b))
		return
	}
	if bytes.Equal(w, b[:nbb*64]) {
		q.stats.BlueFlameWrites++
		return
	}
	// An 8-byte doorbell over the remains of an earlier BlueFlame copy to
	// the same register (both since the last pass) leaves bytes of that
	// earlier WQE behind; accept it when they are the first block of some
	// WQE of this device.
	if d.isRemnant(b[8:64]) {
		q.stats.Doorbells++
		return
	}
	d.unverified(q, lenient, "QP %#x WQE %#x: BlueFlame data differs from the WQE in the SQ", qpn, idx)
}

func (d *Device) unverified(q *qp, lenient bool, format string, args ...any) {
	if lenient {
		q.stats.UnverifiedUARWrites++
		return
	}
	d.protoErr(format, args...)
}

// isRemnant reports whether rest (bytes 8..63 of a register) equals the same
// bytes of the first block of a WQE this device may legitimately read: one
// already executed (the shadow copy) or one posted and not yet executed (the
// live SQ between the consumer index and the doorbell record). The rest of
// the live SQ belongs to the driver, which may be writing it at this moment
// (with the background engine, a read there is a data race, and a real HCA
// would not look there either).
func (d *Device) isRemnant(rest []byte) bool {
	for _, q := range d.qps {
		for p := 0; p < q.sqCnt; p++ {
			if bytes.Equal(q.shadow[p*64+8:p*64+64], rest) {
				return true
			}
		}
		dbr := uint16(loadBE32(q.cfg.DBR[4:]))
		n := int(uint16(dbr - q.sqCI))
		if n > q.sqCnt {
			n = q.sqCnt
		}
		for i := 0; i < n; i++ {
			p := (int(q.sqCI) + i) & (q.sqCnt - 1)
			if bytes.Equal(q.sq[p*64+8:p*64+64], rest) {
				return true
			}
		}
	}
	return false
}
