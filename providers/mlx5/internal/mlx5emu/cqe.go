package mlx5emu

import "encoding/binary"

// CQE opcodes (op_own bits 4-7) and error syndromes, from mlx5dv.h.
const (
	cqeReq         = 0x0
	cqeRespWrImm   = 0x1
	cqeRespSend    = 0x2
	cqeRespSendImm = 0x3
	cqeRespSendInv = 0x4
	cqeReqErr      = 0xd
	cqeRespErr     = 0xe

	synLocLen     = 0x01
	synLocQPOp    = 0x02
	synLocProt    = 0x04
	synWRFlush    = 0x05
	synRemInvReq  = 0x12
	synRemAccess  = 0x13
	synRemOp      = 0x14
	synRetryExc   = 0x15
	synRNRRetry   = 0x16
	inlineScatter = 0x4 // MLX5_INLINE_SCATTER_32
)

// vendorSyndrome returns the vendor_err_synd ConnectX reports with a
// syndrome, for the ones seen in field reports (flush 0xf9, transport
// retries exceeded 0x81, local protection 0x51); 0 for the others.
func vendorSyndrome(syndrome uint8) uint8 {
	switch syndrome {
	case synWRFlush:
		return 0xf9
	case synRetryExc:
		return 0x81
	case synLocProt:
		return 0x51
	}
	return 0
}

// cqe is what the emulator knows about one completion before encoding it.
type cqe struct {
	opcode     uint8 // CQE opcode
	syndrome   uint8 // error CQEs
	sqOpcode   uint8 // WQE opcode for requester CQEs (sop_drop_qpn top byte)
	wqeCounter uint16
	qpn        uint32
	byteCnt    uint32
	immInval   uint32 // value of imm_inval_pkey (written big-endian)
	flagsRqpn  uint32
	srqnUidx   uint32
	slid       uint16
	solicited  bool
	inline     []byte // scatter-to-CQE payload (<= 32 bytes)
}

func (e *cqe) isErr() bool { return e.opcode == cqeReqErr || e.opcode == cqeRespErr }

// pushCQE writes e into c at the producer index unless the ring is full,
// in which case the CQ enters the overrun (error) state. It fires a
// completion event when the CQ is armed for it.
func (d *Device) pushCQE(c *cq, e *cqe) {
	if c.overrun {
		c.stats.Dropped++
		return
	}
	ci := loadBE32(c.dbr[0:]) & 0xffffff
	if used := (c.pi - ci) & 0xffffff; used >= c.ncqe {
		if used > c.ncqe {
			d.protoErr("CQ %#x: set_ci %#x is ahead of the %#x CQEs written", c.cqn, ci, c.pi&0xffffff)
		}
		c.overrun = true
		c.stats.Dropped++
		return
	}
	c.stats.CQEs++
	slot := c.pi & (c.ncqe - 1)
	b := c.buf[slot*64 : slot*64+64]
	clear(b[:60])
	var opOwn uint8
	if e.isErr() {
		// struct mlx5_err_cqe
		binary.BigEndian.PutUint32(b[32:], e.srqnUidx)
		b[54] = vendorSyndrome(e.syndrome)
		b[55] = e.syndrome
		binary.BigEndian.PutUint32(b[56:], uint32(e.sqOpcode)<<24|e.qpn&0xffffff)
	} else {
		if e.inline != nil {
			// The payload occupies bytes 0-31; the fields there
			// (slid, flags_rqpn, ...) are not reported.
			copy(b[0:32], e.inline)
			opOwn |= inlineScatter
		} else {
			binary.BigEndian.PutUint16(b[22:], e.slid)
			binary.BigEndian.PutUint32(b[24:], e.flagsRqpn)
		}
		binary.BigEndian.PutUint32(b[32:], e.srqnUidx)
		binary.BigEndian.PutUint32(b[36:], e.immInval)
		binary.BigEndian.PutUint32(b[44:], e.byteCnt)
		binary.BigEndian.PutUint32(b[56:], uint32(e.sqOpcode)<<24|e.qpn&0xffffff)
	}
	opOwn |= e.opcode << 4
	if e.solicited {
		opOwn |= 0x2
	}
	if c.pi&c.ncqe != 0 {
		opOwn |= 1
	}
	var last [4]byte
	binary.BigEndian.PutUint16(last[0:], e.wqeCounter)
	last[2] = 0 // signature
	last[3] = opOwn
	storeRaw32(b[60:], last)
	c.notify[slot] = e.solicited || e.isErr()
	c.pi++
	if c.armed && (!c.armSol || c.notify[slot]) {
		d.fire(c)
	}
}

// arm handles an arm request: cmd bit 24 = solicited only, ci = consumer
// index the driver had polled up to. A CQE already present at or after ci
// that satisfies the request fires the event at once.
func (d *Device) arm(c *cq, word uint32) {
	sol := word&(1<<24) != 0
	ci := word & 0xffffff
	c.armed, c.armSol = true, sol
	if c.overrun {
		return
	}
	pending := (c.pi - ci) & 0xffffff
	if pending > c.ncqe {
		d.protoErr("CQ %#x: armed with consumer index %#x, ahead of the %#x CQEs written", c.cqn, ci, c.pi&0xffffff)
		return
	}
	for i := uint32(0); i < pending; i++ {
		if !sol || c.notify[(ci+i)&(c.ncqe-1)] {
			d.fire(c)
			return
		}
	}
}

func (d *Device) fire(c *cq) {
	c.armed = false
	c.stats.Events++
	d.events = append(d.events, c.cqn)
	select {
	case d.evReady <- struct{}{}:
	default:
	}
}

// checkArmDBR treats a change of the CQ doorbell record's arm word as an arm
// request (backup for an arm doorbell overwritten on the shared UAR register
// before the emulator saw it).
func (d *Device) checkArmDBR(c *cq) int {
	w := loadBE32(c.dbr[4:])
	if w == c.lastArm {
		return 0
	}
	c.lastArm = w
	c.recArm = true
	c.stats.ArmsFromRecord++
	d.arm(c, w)
	return 1
}
