package rsocket

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Protocol constants of librdmacm's stream rsockets (rsocket.c, wire version 1).
const (
	connDataLen   = 40 // struct rs_conn_data
	connVersion   = 1
	flagNet       = 1 << 0    // RS_CONN_FLAG_NET: the sender is big-endian
	flagIOMap     = 1 << 1    // RS_CONN_FLAG_IOMAP: an iomap table follows the target SGL array
	sglSize       = 2         // RS_SGL_SIZE: entries of the target SGL array
	sgeLen        = 16        // struct rs_sge {addr u64, key u32, length u32}
	iomapLen      = 24        // struct rs_iomap {offset u64, rs_sge}
	maxIOMapSize  = 0x7F << 8 // the largest table size rs_conn_data's scaled byte can say
	ctrlSlots     = 4         // RS_QP_CTRL_SIZE: send WQEs kept for control messages
	sndLowat      = 2048      // RS_SNDLOWAT
	olapStart     = 2048      // RS_OLAP_START_SIZE
	maxTransfer   = 65536     // RS_MAX_TRANSFER
	qpMinSize     = 16        // RS_QP_MIN_SIZE
	qpMaxSize     = 0xFFFE    // RS_QP_MAX_SIZE
	recvWRIDFlag  = 1 << 63   // RS_WR_ID_FLAG_RECV
	msgSendFlag   = 1 << 62   // RS_WR_ID_FLAG_MSG_SEND: the wr_id of the SEND that follows a WRITE in message-send mode
	msgWordLen    = 4         // RS_MSG_SIZE: the message word a SEND carries in message-send mode
	msgDataMask   = 0x1FFFFFFF
	ctrlDisc      = 0 // RS_CTRL_DISCONNECT
	ctrlKeepalive = 1 // RS_CTRL_KEEPALIVE
	ctrlShutdown  = 2 // RS_CTRL_SHUTDOWN
)

// Message opcodes: bits 31:29 of the 32-bit immediate data.
const (
	opData     = 0
	opWrite    = 2 // local bookkeeping only (riowrite, keepalive); never in an immediate
	opSGL      = 4
	opIOMapSGL = 6
	opCtrl     = 7
)

func msg(op, data uint32) uint32 { return op<<29 | data&msgDataMask }
func msgOp(m uint32) uint32      { return m >> 29 }
func msgData(m uint32) uint32    { return m & msgDataMask }

// putMsgWord writes the message word m as a SEND of message-send mode
// carries it: in the sender's own byte order, as librdmacm sends the 32-bit
// value it would otherwise put in the immediate (rs_post_msg,
// rs_post_write_msg).
func putMsgWord(b []byte, m uint32) { binary.NativeEndian.PutUint32(b, m) }

// getMsgWord reads a message word a peer's SEND left in a receive slot. The
// word is in the sender's byte order: senderBE is the peer's NET flag.
// librdmacm reads it in its own order (rs_poll_cq), which is the same
// whenever the two hosts agree, the only case where C to C works.
func getMsgWord(b []byte, senderBE bool) uint32 {
	if senderBE {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// ErrProtocol is what a connection fails with when the peer breaks the rsockets
// protocol (an unknown message, more data than it was given room or credits
// for, ...). It matches unix.EPROTO.
var ErrProtocol = fmt.Errorf("rsockets protocol violation: %w", unix.EPROTO)

// sge is struct rs_sge.
type sge struct {
	Addr   uint64
	Key    uint32
	Length uint32
}

// connData is struct rs_conn_data, the private data of CONNECT and ACCEPT.
type connData struct {
	Version   uint8
	Flags     uint8
	Credits   uint16 // the sender's receive queue size
	IOMapSize uint8  // scaled (rs_value_to_scale(n, 8))
	TargetSGL sge    // the sender's target SGL array; Length = number of entries
	DataBuf   sge    // the first half of the sender's receive buffer
}

// marshal writes the 40 bytes; everything is big-endian on the wire.
func (d *connData) marshal(b []byte) {
	_ = b[connDataLen-1]
	b[0], b[1] = d.Version, d.Flags
	binary.BigEndian.PutUint16(b[2:], d.Credits)
	b[4], b[5], b[6] = 0, 0, 0
	b[7] = d.IOMapSize
	putSGE(b[8:], d.TargetSGL, binary.BigEndian)
	putSGE(b[24:], d.DataBuf, binary.BigEndian)
}

// parseConnData reads a peer's rs_conn_data (the CM pads private data with
// zeroes, so b may be longer than 40 bytes).
func parseConnData(b []byte) (connData, error) {
	var d connData
	if len(b) < connDataLen {
		return d, fmt.Errorf("connection data is %d bytes, want %d: %w", len(b), connDataLen, ErrProtocol)
	}
	d.Version, d.Flags = b[0], b[1]
	d.Credits = binary.BigEndian.Uint16(b[2:])
	d.IOMapSize = b[7]
	d.TargetSGL = getSGE(b[8:], binary.BigEndian)
	d.DataBuf = getSGE(b[24:], binary.BigEndian)
	if d.Version != connVersion {
		return d, fmt.Errorf("rsockets version %d, want %d: %w", d.Version, connVersion, unix.ENOTSUP)
	}
	return d, nil
}

func putSGE(b []byte, s sge, o binary.ByteOrder) {
	o.PutUint64(b[0:], s.Addr)
	o.PutUint32(b[8:], s.Key)
	o.PutUint32(b[12:], s.Length)
}

func getSGE(b []byte, o binary.ByteOrder) sge {
	return sge{Addr: o.Uint64(b[0:]), Key: o.Uint32(b[8:]), Length: o.Uint32(b[12:])}
}

// valueToScale and scaleToValue are rs_value_to_scale / rs_scale_to_value
// with bits = 8: values up to 128 as they are, larger ones as 0x80 | n>>8.
func valueToScale(v int) uint8 {
	if v <= 1<<7 {
		return uint8(v)
	}
	return uint8(1<<7 | (v>>8)&0x7F)
}

func scaleToValue(s uint8) int {
	if s <= 1<<7 {
		return int(s)
	}
	return int(s&^(1<<7)) << 8
}

// hostBigEndian is whether this machine stores integers big-endian (the NET flag).
var hostBigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// rx is the receive half of a stream rsocket: the ring of received data
// messages over the two-half receive buffer and the credits given to the
// peer. It is pure bookkeeping (no verbs), so it can be tested and fuzzed on
// any host; Conn drives it from completions.
type rx struct {
	rbufSize int
	rqSize   uint16

	bytesAvail int // receive buffer bytes not yet published to the peer
	freeOffset int // where the next published half starts
	offset     int // where the next byte to read is
	unread     int // bytes received and not read yet

	ring       []uint32 // lengths of received data messages (rq_size+1 entries)
	head, tail int

	rseqNo, rseqComp uint16
	sseqComp         uint16 // the peer's credit limit for our sends (from its SGL messages)
	recvSeq          uint16 // credit-consuming messages received (DATA and IOMAP_SGL, as the sender counts them)
	granted          uint16 // the credit limit we last gave the peer

	ctrlSeqno, ctrlMaxSeqno uint32
	remoteSGE               int // entry of the peer's target SGL array we publish into next
	remoteSGLLen            int // number of entries (2)

	// msgSend is librdmacm's RS_OPT_MSG_SEND (iWARP): a credit message that publishes
	// a receive half is two work requests (a WRITE and a SEND) and takes two control slots.
	msgSend bool

	discReceived bool // CTRL DISCONNECT
	shutReceived bool // CTRL SHUTDOWN
	iomapUpdates int  // IOMAP_SGL messages seen (nothing to do on them)
}

func newRx(rbufSize int, rqSize uint16) rx {
	return rx{rbufSize: rbufSize, rqSize: rqSize, bytesAvail: rbufSize / 2, freeOffset: rbufSize / 2,
		ring: make([]uint32, int(rqSize)+1), rseqComp: rqSize / 2, granted: rqSize, ctrlMaxSeqno: ctrlSlots, remoteSGE: 1,
		remoteSGLLen: sglSize}
}

func (r *rx) haveData() bool { return r.head != r.tail }

// published is how many bytes the peer may have in flight or unread in our buffer.
func (r *rx) published() int { return r.rbufSize - r.bytesAvail }

// onRecv handles the immediate data of one receive completion. A message that
// breaks the protocol returns an error matching ErrProtocol and changes nothing.
func (r *rx) onRecv(imm uint32) error {
	op, data := msgOp(imm), msgData(imm)
	if (op == opData || op == opIOMapSGL) && int16(r.recvSeq-r.granted) >= 0 {
		return fmt.Errorf("message %d beyond the credit limit %d: %w", r.recvSeq, r.granted, ErrProtocol)
	}
	switch op {
	case opData:
		n := int(data)
		if r.unread+n > r.published() {
			return fmt.Errorf("data message of %d bytes with %d unread and %d published: %w", n, r.unread, r.published(), ErrProtocol)
		}
		next := r.tail + 1
		if next == len(r.ring) {
			next = 0
		}
		if next == r.head {
			return fmt.Errorf("more than %d data messages outstanding (credits exceeded): %w", r.rqSize, ErrProtocol)
		}
		r.ring[r.tail] = data
		r.tail = next
		r.unread += n
		r.recvSeq++
	case opSGL:
		r.sseqComp = uint16(data)
	case opIOMapSGL:
		r.iomapUpdates++
		r.recvSeq++
	case opCtrl:
		switch data {
		case ctrlDisc:
			r.discReceived = true
		case ctrlShutdown:
			r.shutReceived = true
		}
		// Other control values (KEEPALIVE never travels as an immediate) are ignored, as librdmacm does.
	default:
		return fmt.Errorf("message opcode %d (immediate %#08x): %w", op, imm, ErrProtocol)
	}
	return nil
}

// read copies received bytes from rbuf into p in arrival order, as rrecv does.
func (r *rx) read(p []byte, rbuf []byte) int {
	n := 0
	for n < len(p) && r.head != r.tail {
		left := len(p) - n
		size := int(r.ring[r.head])
		if left < size {
			size = left
			r.ring[r.head] -= uint32(left)
		} else {
			r.rseqNo++
			if r.head++; r.head == len(r.ring) {
				r.head = 0
			}
		}
		for size > 0 {
			c := copy(p[n:n+size], rbuf[r.offset:r.rbufSize])
			n += c
			size -= c
			r.unread -= c
			r.bytesAvail += c
			if r.offset += c; r.offset == r.rbufSize {
				r.offset = 0
			}
		}
	}
	return n
}

// peek copies received bytes into p as read does, without consuming them
// (rs_peek): the ring, the read offset and the counts are left as they are.
func (r *rx) peek(p []byte, rbuf []byte) int {
	n := 0
	off := r.offset
	for h := r.head; n < len(p) && h != r.tail; {
		size := min(int(r.ring[h]), len(p)-n)
		if h++; h == len(r.ring) {
			h = 0
		}
		for size > 0 {
			c := copy(p[n:n+size], rbuf[off:r.rbufSize])
			n += c
			size -= c
			if off += c; off == r.rbufSize {
				off = 0
			}
		}
	}
	return n
}

// creditsDue is rs_give_credits without the connected check: half the
// buffer is free to publish, or the peer is at or past its message credit, and
// a control slot is free (two in message-send mode, whichever message it is).
func (r *rx) creditsDue() bool {
	due := r.bytesAvail >= r.rbufSize/2 || int16(r.rseqNo-r.rseqComp) >= 0
	if r.msgSend {
		return due && int32(r.ctrlSeqno+1-r.ctrlMaxSeqno) < 0
	}
	return due && r.ctrlSeqno != r.ctrlMaxSeqno
}

// credit is one credit message to send (rs_send_credits): the message imm
// alone (a zero-length WRITE WITH IMM; in message-send mode a SEND of the
// word), or, with publish, with a write of the 16-byte SGE {rbuf+offset,
// rkey, rbufSize/2} to entry sgeIndex of the peer's target SGL array.
type credit struct {
	imm      uint32
	publish  bool
	offset   int
	sgeIndex int
	slot     int // control buffer slot for the SGE bytes
}

// takeCredit updates the bookkeeping for one credit message and says what to send.
func (r *rx) takeCredit() credit {
	c := credit{slot: int(r.ctrlSeqno & (ctrlSlots - 1))}
	r.ctrlSeqno++
	r.rseqComp = r.rseqNo + r.rqSize/2
	r.granted = r.rseqNo + r.rqSize
	c.imm = msg(opSGL, uint32(r.rseqNo)+uint32(r.rqSize))
	if r.bytesAvail >= r.rbufSize/2 {
		if r.msgSend {
			r.ctrlSeqno++ // the WRITE of the SGE and the SEND of the message word
		}
		c.publish, c.offset, c.sgeIndex = true, r.freeOffset, r.remoteSGE
		r.bytesAvail -= r.rbufSize / 2
		if r.freeOffset += r.rbufSize / 2; r.freeOffset >= r.rbufSize {
			r.freeOffset = 0
		}
		if r.remoteSGE++; r.remoteSGE == r.remoteSGLLen {
			r.remoteSGE = 0
		}
	}
	return c
}

// ioMap is struct rs_iomap: a buffer the writer of the entry mapped for the
// reader's riowrite (IOWrite), and the offset the reader addresses it by.
type ioMap struct {
	Offset uint64
	SGE    sge // Length = bytes of the buffer
}

// putIOMap writes the 24-byte rs_iomap in order o (the peer's byte order:
// librdmacm writes host order, swapped when the peers' NET flags differ).
func putIOMap(b []byte, m ioMap, o binary.ByteOrder) {
	_ = b[iomapLen-1]
	o.PutUint64(b, m.Offset)
	putSGE(b[8:], m.SGE, o)
}

func getIOMap(b []byte, o binary.ByteOrder) ioMap {
	_ = b[iomapLen-1]
	return ioMap{Offset: o.Uint64(b), SGE: getSGE(b[8:], o)}
}

// findIOMap is rs_find_iomap over an iomap table the peer writes (in our
// byte order): the first entry whose [offset, offset+length) holds off.
// Empty entries (length 0) never match; the arithmetic cannot overflow.
func findIOMap(table []byte, off uint64) (ioMap, bool) {
	for i := 0; i+iomapLen <= len(table); i += iomapLen {
		m := getIOMap(table[i:], binary.NativeEndian)
		if off >= m.Offset && off-m.Offset < uint64(m.SGE.Length) {
			return m, true
		}
	}
	return ioMap{}, false
}
