package rxe

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// FLUSH and ATOMIC WRITE WQEs as rdma-core's rxe provider (wr_flush, wr_atomic_write) lays them out in struct
// rxe_send_wqe of Linux 6.2+: flush {remote_addr u64, length u32 (left 0), rkey u32, type u8, level u8} over the
// wr union, the length in dma; the atomic-write value in dma's atomic_wr, rdma {remote_addr, rkey}.
func TestFlushAtomicWriteWQE(t *testing.T) {
	f := readyQP(t, verbs.QPTypeRC)
	f.qp.limit.setCaps(capFlushGlobal | capFlushPersistent | capAtomicWrite)
	wrs := []verbs.SendWR{
		{WRID: 7, Opcode: verbs.WRFlush, Flags: verbs.SendSignaled, RemoteAddr: 0x7f0012345000, RKey: 0xabcd,
			Flush: verbs.Flush{Length: 4096, Type: verbs.FlushGlobal, Level: verbs.FlushMR}},
		{WRID: 8, Opcode: verbs.WRAtomicWrite, Flags: verbs.SendSignaled, RemoteAddr: 0x7f0012345008, RKey: 0xabce,
			Swap: 0x1122334455667788},
	}
	if n, err := errOf(f.PostSend(wrs)); n != 2 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	f.expectDoorbell(t)

	p, _ := consume(f.sq)
	w := (*abi.RxeSendWqe)(p)
	u := (*[24]byte)(unsafe.Pointer(w.Wr.Rdma()))
	ne := binary.NativeEndian
	if w.Wr.WrId != 7 || w.Wr.Opcode != 14 || w.Wr.SendFlags != uint32(verbs.SendSignaled) {
		t.Errorf("flush wr = %+v", w.Wr)
	}
	if ne.Uint64(u[0:]) != 0x7f0012345000 || ne.Uint32(u[8:]) != 0 || ne.Uint32(u[12:]) != 0xabcd || u[16] != 1 || u[17] != 1 {
		t.Errorf("flush union % x", u[:18])
	}
	if w.Dma.Length != 4096 || w.Dma.Resid != 4096 || w.Dma.NumSge != 0 || w.Iova != 0x7f0012345000 || w.Ssn != 0 {
		t.Errorf("flush dma %+v iova %#x ssn %d", w.Dma, w.Iova, w.Ssn)
	}

	retire(f.sq)
	p, _ = consume(f.sq)
	w = (*abi.RxeSendWqe)(p)
	r := w.Wr.Rdma()
	if w.Wr.WrId != 8 || w.Wr.Opcode != 15 || r.RemoteAddr != 0x7f0012345008 || r.Rkey != 0xabce || r.Reserved != 0 {
		t.Errorf("atomic write wr = %+v rdma %+v", w.Wr, *r)
	}
	val := unsafe.Slice((*byte)(unsafe.Add(p, abi.SizeofRxeSendWqe)), 8)
	if ne.Uint64(val) != 0x1122334455667788 || w.Dma.Length != 8 || w.Dma.Resid != 8 || w.Dma.NumSge != 0 ||
		w.Iova != 0x7f0012345008 || w.Ssn != 1 {
		t.Errorf("atomic write dma %+v value % x iova %#x ssn %d", w.Dma, val, w.Iova, w.Ssn)
	}
}

func TestFlushAtomicWriteValidation(t *testing.T) {
	global := verbs.Flush{Length: 8, Type: verbs.FlushGlobal}
	tests := []struct {
		name  string
		caps  uint64
		typ   verbs.QPType
		wr    verbs.SendWR
		errno unix.Errno
	}{
		{"flush with an SGE", capFlushGlobal, verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRFlush, Flush: global,
			SGL: []verbs.SGE{{Length: 8}}}, unix.EINVAL},
		{"flush without a type", capFlushGlobal, verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRFlush}, unix.EINVAL},
		{"flush with an unknown type", capFlushGlobal, verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRFlush,
			Flush: verbs.Flush{Type: 4}}, unix.EINVAL},
		{"flush with an unknown level", capFlushGlobal, verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRFlush,
			Flush: verbs.Flush{Type: verbs.FlushGlobal, Level: 2}}, unix.EINVAL},
		{"persistent flush, device has global only", capFlushGlobal, verbs.QPTypeRC, verbs.SendWR{
			Opcode: verbs.WRFlush, Flush: verbs.Flush{Type: verbs.FlushPersistent}}, unix.EOPNOTSUPP},
		{"flush on UD", capFlushGlobal, verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRFlush, Flush: global},
			unix.EOPNOTSUPP},
		{"atomic write misaligned", capAtomicWrite, verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRAtomicWrite,
			RemoteAddr: 0x1004}, unix.EINVAL},
		{"atomic write with an SGE", capAtomicWrite, verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRAtomicWrite,
			SGL: []verbs.SGE{{Length: 8}}}, unix.EINVAL},
		{"atomic write, device has flush only", capFlushGlobal, verbs.QPTypeRC, verbs.SendWR{
			Opcode: verbs.WRAtomicWrite}, unix.EOPNOTSUPP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := readyQP(t, tc.typ)
			f.qp.limit.setCaps(tc.caps)
			n, err := errOf(f.PostSend([]verbs.SendWR{tc.wr}))
			if n != 0 || !errors.Is(err, tc.errno) {
				t.Fatalf("PostSend = %d, %v; want 0, %v", n, err, tc.errno)
			}
			if got := pending(f.sq); got != 0 {
				t.Errorf("%d WQEs in the ring, want 0", got)
			}
		})
	}
}
