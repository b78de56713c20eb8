package mlx5emu_test

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/providers/mlx5/internal/mlx5emu"
)

func mem(n int) []byte {
	b, err := unix.Mmap(-1, 0, (n+4095)&^4095, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	return b[:n]
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// A driver's view: create a CQ and two connected RC QPs, post a receive
// and an inline SEND (8-byte doorbell), run the device and read the CQEs.
func Example() {
	dev, err := mlx5emu.New(mlx5emu.Options{BFRegSize: 512})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	// CQ: 8 CQEs stamped MLX5_CQE_INVALID << 4, plus a doorbell record.
	cqBuf, cqDBR := mem(8*64), mem(8)
	for i := 0; i < 8; i++ {
		cqBuf[i*64+63] = 0xf0
	}
	cqn, _ := dev.CreateCQ(cqBuf, cqDBR)

	// QPs: RQ of 4 x 64 bytes at offset 0, SQ of 8 basic blocks after it.
	newQP := func() (uint32, []byte, []byte) {
		buf, dbr := mem(4*64+8*64), mem(8)
		qpn, err := dev.CreateQP(mlx5emu.QPConfig{Type: mlx5emu.RC, PDN: 1, Buf: buf,
			SQWQECnt: 8, RQWQECnt: 4, RQWQEShift: 6, DBR: dbr, SendCQN: cqn, RecvCQN: cqn})
		if err != nil {
			panic(err)
		}
		return qpn, buf, dbr
	}
	a, aBuf, aDBR := newQP()
	b, bBuf, bDBR := newQP()
	for _, p := range [][2]uint32{{a, b}, {b, a}} {
		_ = dev.ModifyQP(p[0], mlx5emu.QPAttr{State: mlx5emu.StateInit, Access: mlx5emu.AccessLocalWrite})
		_ = dev.ModifyQP(p[0], mlx5emu.QPAttr{State: mlx5emu.StateRTR, DestQPN: p[1]})
		_ = dev.ModifyQP(p[0], mlx5emu.QPAttr{State: mlx5emu.StateRTS, RNRRetry: 7})
	}

	// Receive buffer and its WQE (one data segment + end marker).
	rbuf := mem(64)
	lkey, _, _ := dev.RegisterMR(rbuf, mlx5emu.AccessLocalWrite, 1)
	binary.BigEndian.PutUint32(bBuf[0:], 64)
	binary.BigEndian.PutUint32(bBuf[4:], lkey)
	binary.BigEndian.PutUint64(bBuf[8:], addrOf(rbuf))
	binary.BigEndian.PutUint32(bBuf[20:], 0x100)
	binary.BigEndian.PutUint32(bDBR[0:], 1)

	// SEND, signaled, with 5 bytes inline: ctrl + inline segment (ds = 2).
	sq := aBuf[4*64:]
	binary.BigEndian.PutUint32(sq[0:], 0<<8|0x0a)
	binary.BigEndian.PutUint32(sq[4:], a<<8|2)
	sq[11] = 0x08
	binary.BigEndian.PutUint32(sq[16:], 5|0x80000000)
	copy(sq[20:], "hello")
	binary.BigEndian.PutUint32(aDBR[4:], 1)
	copy(dev.UAR()[mlx5emu.BFOffset:], sq[:8]) // the 8-byte doorbell

	dev.Process()
	for i := 0; i < 2; i++ {
		cqe := cqBuf[i*64 : i*64+64]
		fmt.Printf("opcode %d qpn %#x byte_cnt %d\n", cqe[63]>>4, binary.BigEndian.Uint32(cqe[56:])&0xffffff,
			binary.BigEndian.Uint32(cqe[44:]))
	}
	fmt.Printf("%s, errors: %d\n", rbuf[:5], len(dev.Errors()))
	// Output:
	// opcode 2 qpn 0x101 byte_cnt 5
	// opcode 0 qpn 0x100 byte_cnt 5
	// hello, errors: 0
}
