package rsocket

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// TestConnDataRstream decodes the bytes captured from C rstream (rdma-cm.md §5.1) and encodes them back.
func TestConnDataRstream(t *testing.T) {
	b, _ := hex.DecodeString("0102018000000000" + "000055cc70592000" + "00000326" + "00000002" + "00007f9b9afaa000" + "0000043d" + "00080000")
	d, err := parseConnData(b)
	if err != nil {
		t.Fatal(err)
	}
	want := connData{Version: 1, Flags: flagIOMap, Credits: 384, TargetSGL: sge{0x55cc70592000, 0x326, 2},
		DataBuf: sge{0x7f9b9afaa000, 0x43d, 0x80000}}
	if d != want {
		t.Fatalf("parsed %+v, want %+v", d, want)
	}
	out := make([]byte, connDataLen)
	d.marshal(out)
	if !bytes.Equal(out, b) {
		t.Fatalf("marshal %x, want %x", out, b)
	}
	b[0] = 2
	if _, err := parseConnData(b); err == nil {
		t.Fatal("version 2 accepted")
	}
	if _, err := parseConnData(b[:39]); !errors.Is(err, ErrProtocol) {
		t.Fatalf("short data: %v", err)
	}
}

func TestScale(t *testing.T) {
	for _, c := range []struct {
		v int
		s uint8
	}{{0, 0}, {1, 1}, {128, 128}, {256, 0x81}, {512, 0x82}, {0x7f00, 0xff}} {
		if got := valueToScale(c.v); got != c.s {
			t.Errorf("valueToScale(%d) = %#x, want %#x", c.v, got, c.s)
		}
		if got := scaleToValue(c.s); got != c.v {
			t.Errorf("scaleToValue(%#x) = %d, want %d", c.s, got, c.v)
		}
	}
}

// TestRxCredits follows librdmacm's start-up and steady state: the first
// update publishes the second half, then halves alternate as they are read.
func TestRxCredits(t *testing.T) {
	const size = 8192
	r := newRx(size, 16)
	if !r.creditsDue() {
		t.Fatal("no credits due at start")
	}
	c := r.takeCredit()
	if !c.publish || c.offset != size/2 || c.sgeIndex != 1 || c.imm != msg(opSGL, 16) {
		t.Fatalf("first credit %+v", c)
	}
	if r.creditsDue() {
		t.Fatal("credits due with nothing read")
	}
	rbuf := make([]byte, size)
	for i := range rbuf {
		rbuf[i] = byte(i)
	}
	// The peer fills the whole buffer in 2 KiB messages.
	for i := 0; i < 4; i++ {
		if err := r.onRecv(msg(opData, 2048)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.onRecv(msg(opData, 1)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("overrun accepted: %v", err)
	}
	p := make([]byte, 3000)
	if n := r.read(p, rbuf); n != 3000 || !bytes.Equal(p, rbuf[:3000]) {
		t.Fatalf("read %d", n)
	}
	if r.rseqNo != 1 || r.ring[r.head] != 1096 {
		t.Fatalf("rseqNo %d head len %d", r.rseqNo, r.ring[r.head])
	}
	p = make([]byte, 1096)
	r.read(p, rbuf)
	if !r.creditsDue() {
		t.Fatal("half free, no credits due")
	}
	r.ctrlMaxSeqno++ // the first credit completed
	c = r.takeCredit()
	if !c.publish || c.offset != 0 || c.sgeIndex != 0 || c.imm != msg(opSGL, 2+16) {
		t.Fatalf("second credit %+v", c)
	}
	// Wrap: the remaining 4096 bytes are read across the end.
	if err := r.onRecv(msg(opData, 2048)); err != nil {
		t.Fatal(err)
	}
	p = make([]byte, 8192)
	if n := r.read(p, rbuf); n != 6144 || !bytes.Equal(p[:4096], rbuf[4096:]) || !bytes.Equal(p[4096:6144], rbuf[:2048]) {
		t.Fatalf("wrapped read %d", n)
	}
}

func TestRxMessages(t *testing.T) {
	r := newRx(1<<16, 16)
	r.takeCredit()
	for _, op := range []uint32{1, 2, 3, 5} {
		if err := r.onRecv(msg(op, 0)); !errors.Is(err, ErrProtocol) {
			t.Errorf("op %d: %v", op, err)
		}
	}
	if err := r.onRecv(msg(opSGL, 0x12345)); err != nil || r.sseqComp != 0x2345 {
		t.Errorf("SGL: %v, sseqComp %#x", err, r.sseqComp)
	}
	r.onRecv(msg(opCtrl, ctrlShutdown))
	r.onRecv(msg(opCtrl, ctrlDisc))
	if !r.shutReceived || !r.discReceived {
		t.Error("control messages not seen")
	}
	// More messages than the credits given is a violation, even when they are read in between.
	p := make([]byte, 1)
	var err error
	i := 0
	for ; i < 40 && err == nil; i++ {
		if err = r.onRecv(msg(opData, 1)); err == nil {
			r.read(p, make([]byte, 1<<16))
		}
	}
	if !errors.Is(err, ErrProtocol) || i != 17 {
		t.Fatalf("message %d with 16 credits: %v", i, err)
	}
	// A new grant allows rseqNo + rqSize.
	r.ctrlMaxSeqno++
	r.takeCredit()
	if r.granted != 16+16 {
		t.Fatalf("granted %d", r.granted)
	}
	for i := 16; i < 32; i++ {
		if err := r.onRecv(msg(opData, 1)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := r.onRecv(msg(opIOMapSGL, 0)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("IOMAP_SGL beyond credits: %v", err)
	}
}

// TestRxPeek: a peek copies what the next read returns (across messages, a partial message and the buffer's
// end) and leaves the receive state as it was (rs_peek).
func TestRxPeek(t *testing.T) {
	const size = 8192
	r := newRx(size, 16)
	rbuf := make([]byte, size)
	for i := range rbuf {
		rbuf[i] = byte(i * 13)
	}
	r.offset = size - 100 // the next bytes start 100 before the end
	for _, n := range []uint32{60, 90, 50} {
		if err := r.onRecv(msg(opData, n)); err != nil {
			t.Fatal(err)
		}
	}
	want := append(append([]byte{}, rbuf[size-100:]...), rbuf[:100]...)
	for _, n := range []int{1, 60, 61, 150, 200, 300} {
		before := r
		p := make([]byte, n)
		k := r.peek(p, rbuf)
		if k != min(n, 200) || !bytes.Equal(p[:k], want[:k]) {
			t.Fatalf("peek %d: %d bytes %x, want %x", n, k, p[:k], want[:min(n, 200)])
		}
		if r.head != before.head || r.offset != before.offset || r.unread != before.unread || r.ring[r.head] != before.ring[r.head] {
			t.Fatalf("peek %d changed the state", n)
		}
	}
	// Part of the first message read: a peek starts after it, inside that message.
	p := make([]byte, 10)
	r.read(p, rbuf)
	q := make([]byte, 300)
	if k := r.peek(q, rbuf); k != 190 || !bytes.Equal(q[:k], want[10:]) {
		t.Fatalf("peek after a partial read: %d bytes", k)
	}
	if n := r.read(q, rbuf); n != 190 || !bytes.Equal(q[:n], want[10:]) {
		t.Fatalf("read after peeks: %d bytes", n)
	}
	if r.haveData() || r.peek(q, rbuf) != 0 {
		t.Fatal("data left")
	}
}

// FuzzRx drives the receive bookkeeping with arbitrary messages and reads: it
// must never panic, and its invariants must hold whatever the peer sends.
func FuzzRx(f *testing.F) {
	f.Add([]byte{0, 0, 8, 0, 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, uint16(16), uint16(4096))
	f.Add([]byte{0xe0, 0, 0, 0, 0x80, 0, 1, 0}, uint16(1), uint16(1))
	f.Add([]byte{0, 0, 8, 0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xfd, 0xff, 0xff, 0xff, 0xfd}, uint16(16), uint16(4096))
	f.Fuzz(func(t *testing.T, data []byte, rq uint16, size uint16) {
		rq = uint16(clampQ(int(rq)))
		rsize := max(int(size)&^1, 2*sndLowat)
		r := newRx(rsize, rq)
		rbuf := make([]byte, rsize)
		p := make([]byte, 3000)
		for len(data) >= 4 {
			imm := uint32(data[0])<<24 | uint32(data[1])<<16 | uint32(data[2])<<8 | uint32(data[3])
			data = data[4:]
			switch {
			case imm == 0xffffffff:
				r.read(p, rbuf)
			case imm == 0xfffffffd:
				// A peek sees what the next read takes, and changes nothing.
				before := r
				q := make([]byte, len(p))
				k := r.peek(q, rbuf)
				if r.head != before.head || r.offset != before.offset || r.unread != before.unread || r.bytesAvail != before.bytesAvail || r.rseqNo != before.rseqNo {
					t.Fatal("peek changed the ring")
				}
				if n := r.read(p, rbuf); n != k || !bytes.Equal(p[:n], q[:k]) {
					t.Fatalf("peek saw %d bytes, read took %d", k, n)
				}
			case imm == 0xfffffffe:
				for r.creditsDue() {
					r.takeCredit()
					r.ctrlMaxSeqno++
				}
			default:
				before := r
				if err := r.onRecv(imm); err != nil {
					if r.unread != before.unread || r.tail != before.tail {
						t.Fatal("failed message changed the ring")
					}
				}
			}
			if r.unread < 0 || r.unread > rsize || r.bytesAvail < 0 || r.bytesAvail > rsize || r.unread > r.published() {
				t.Fatalf("invariant broken: %+v", r)
			}
		}
	})
}

// TestMsgWord: message-send mode's SEND carries the 32-bit message word in the sender's byte order
// (librdmacm sends the host-order value it would put in the immediate); the receiver reads it in the
// sender's order, which its NET flag says.
func TestMsgWord(t *testing.T) {
	m := msg(opSGL, 0x12345)
	b := make([]byte, msgWordLen)
	putMsgWord(b, m)
	want := []byte{0x45, 0x23, 0x01, 0x80} // 0x80012345 little-endian
	if hostBigEndian {
		want = []byte{0x80, 0x01, 0x23, 0x45}
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("putMsgWord(%#x) = %x, want %x", m, b, want)
	}
	if got := getMsgWord(b, hostBigEndian); got != m {
		t.Fatalf("getMsgWord of our own word = %#x, want %#x", got, m)
	}
	if got := getMsgWord([]byte{0xe0, 0, 0, 2}, true); got != msg(opCtrl, ctrlShutdown) {
		t.Fatalf("a big-endian sender's CTRL SHUTDOWN read as %#x", got)
	}
	if got := getMsgWord([]byte{0, 0x10, 0, 0}, false); got != msg(opData, 4096) {
		t.Fatalf("a little-endian sender's DATA 4096 read as %#x", got)
	}
}

// TestRxCreditsMsgSend: in message-send mode a credit needs two free control slots (rs_2ctrl_avail), and one
// that publishes a half takes both (its WRITE and its SEND); one that does not takes one.
func TestRxCreditsMsgSend(t *testing.T) {
	const size = 8192
	r := newRx(size, 16)
	r.msgSend = true
	c := r.takeCredit()
	if !c.publish || r.ctrlSeqno != 2 {
		t.Fatalf("first credit %+v took %d control slots, want a publishing one taking 2", c, r.ctrlSeqno)
	}
	// The peer used its credits without our reading a byte: a credit is due without a half to publish.
	r.rseqNo = r.rseqComp
	if c := r.takeCredit(); c.publish || r.ctrlSeqno != 3 {
		t.Fatalf("second credit %+v, control slots taken %d; want no publishing, 3", c, r.ctrlSeqno)
	}
	// One slot left of four: due without message-send mode, not with it.
	r.rseqNo = r.rseqComp
	r.msgSend = false
	if !r.creditsDue() {
		t.Fatal("one free control slot: no credit due even without message-send mode")
	}
	r.msgSend = true
	if r.creditsDue() {
		t.Fatalf("credit due with one free control slot in message-send mode (%d/%d)", r.ctrlSeqno, r.ctrlMaxSeqno)
	}
	r.ctrlMaxSeqno++ // a credit's completion
	if !r.creditsDue() {
		t.Fatalf("no credit due with two free control slots (%d/%d)", r.ctrlSeqno, r.ctrlMaxSeqno)
	}
}
