package rxe

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/uverbs/abi"
	"golang.org/x/sys/unix"
)

var testCap = provider.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}

// readyQP is a fake QP in RTS whose doorbell goes into a pipe.
func readyQP(t *testing.T, typ provider.QPType) *fakeQP {
	k := newFakeKernel(t)
	f := k.newQP(typ, testCap, false)
	f.withPipeDoorbell(t)
	f.StateChanged(provider.QPSRTS)
	return f
}

// expectDoorbell reads one doorbell write from the pipe and checks it is the QP's POST_SEND command.
func (f *fakeQP) expectDoorbell(t *testing.T) {
	t.Helper()
	got := make([]byte, doorbellLen)
	if _, err := io.ReadFull(f.bell, got); err != nil {
		t.Fatalf("read doorbell: %v", err)
	}
	want := unsafe.Slice((*byte)(unsafe.Pointer(&f.db.hdr)), doorbellLen)
	if !bytes.Equal(got, want) {
		t.Fatalf("doorbell bytes %x, want %x", got, want)
	}
	cmd := (*abi.IbUverbsPostSend)(unsafe.Pointer(&got[abi.SizeofIbUverbsCmdHdr]))
	if cmd.QpHandle != 0x1234 {
		t.Fatalf("doorbell for QP handle %#x, want 0x1234", cmd.QpHandle)
	}
}

// Every opcode's WQE, field by field against struct rxe_send_wqe as the kernel reads it.
func TestSendWQEEncoding(t *testing.T) {
	ah := &provider.AHData{Handle: 3, Num: 42}
	sgl := []provider.SGE{{Addr: 0x1000, Length: 100, LKey: 0x11}, {Addr: 0x2000, Length: 28, LKey: 0x22}}
	atomicSGL := []provider.SGE{{Addr: 0x3000, Length: 8, LKey: 0x33}}
	tests := []struct {
		name string
		typ  provider.QPType
		wr   provider.SendWR
		want func(w *abi.RxeSendWqe)
	}{
		{"RDMA write", provider.QPTRC, provider.SendWR{WRID: 1, SGL: sgl, Opcode: provider.WRRDMAWrite,
			Flags: provider.SendSignaled | provider.SendFence, RemoteAddr: 0xdead0000, RKey: 0x99, Imm: 0x55},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_RDMA_WRITE
				w.Wr.SendFlags = 3
				w.Wr.Rdma().RemoteAddr = 0xdead0000
				w.Wr.Rdma().Rkey = 0x99
				w.Iova = 0xdead0000
			}},
		{"RDMA write with imm", provider.QPTUC, provider.SendWR{WRID: 2, SGL: sgl, Opcode: provider.WRRDMAWriteWithImm,
			RemoteAddr: 0xbeef0000, RKey: 0x98, Imm: 0x01020304},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
				w.Wr.Ex = [4]byte{1, 2, 3, 4}
				w.Wr.Rdma().RemoteAddr = 0xbeef0000
				w.Wr.Rdma().Rkey = 0x98
				w.Iova = 0xbeef0000
			}},
		{"RDMA read", provider.QPTRC, provider.SendWR{WRID: 3, SGL: sgl, Opcode: provider.WRRDMARead,
			Flags: provider.SendSignaled, RemoteAddr: 0x4000, RKey: 0x97},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_RDMA_READ
				w.Wr.SendFlags = 2
				w.Wr.Rdma().RemoteAddr = 0x4000
				w.Wr.Rdma().Rkey = 0x97
				w.Iova = 0x4000
			}},
		{"RC send", provider.QPTRC, provider.SendWR{WRID: 4, SGL: sgl, Opcode: provider.WRSend, Flags: provider.SendSolicited,
			RemoteQPN: 7, RemoteQKey: 8},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND
				w.Wr.SendFlags = 4
			}},
		{"RC send with imm", provider.QPTRC, provider.SendWR{WRID: 5, SGL: sgl, Opcode: provider.WRSendWithImm, Imm: 0xa0b0c0d0},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND_WITH_IMM
				w.Wr.Ex = [4]byte{0xa0, 0xb0, 0xc0, 0xd0}
			}},
		{"UD send", provider.QPTUD, provider.SendWR{WRID: 6, SGL: sgl, Opcode: provider.WRSend, Flags: provider.SendSignaled,
			AH: ah, RemoteQPN: 0x123, RemoteQKey: 0x11111111},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND
				w.Wr.SendFlags = 2
				w.Wr.Ud().RemoteQpn = 0x123
				w.Wr.Ud().RemoteQkey = 0x11111111
				w.Wr.Ud().AhNum = 42
			}},
		{"UD send with imm", provider.QPTUD, provider.SendWR{WRID: 7, SGL: sgl, Opcode: provider.WRSendWithImm, Imm: 9,
			AH: ah, RemoteQPN: 0x124, RemoteQKey: 0x22},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND_WITH_IMM
				w.Wr.Ex = [4]byte{0, 0, 0, 9}
				w.Wr.Ud().RemoteQpn = 0x124
				w.Wr.Ud().RemoteQkey = 0x22
				w.Wr.Ud().AhNum = 42
			}},
		{"compare and swap", provider.QPTRC, provider.SendWR{WRID: 8, SGL: atomicSGL, Opcode: provider.WRAtomicCmpAndSwp,
			RemoteAddr: 0x5008, RKey: 0x96, CompareAdd: 0x1111, Swap: 0x2222},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
				a := w.Wr.Atomic()
				a.RemoteAddr, a.CompareAdd, a.Swap, a.Rkey = 0x5008, 0x1111, 0x2222, 0x96
				w.Iova = 0x5008
			}},
		{"fetch and add", provider.QPTRC, provider.SendWR{WRID: 9, SGL: atomicSGL, Opcode: provider.WRAtomicFetchAndAdd,
			RemoteAddr: 0x6000, RKey: 0x95, CompareAdd: 5},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
				a := w.Wr.Atomic()
				a.RemoteAddr, a.CompareAdd, a.Rkey = 0x6000, 5, 0x95
				w.Iova = 0x6000
			}},
		{"local invalidate", provider.QPTRC, provider.SendWR{WRID: 10, Opcode: provider.WRLocalInv, Imm: 0x12345678},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_LOCAL_INV
				*w.Wr.InvalidateRkey() = 0x12345678
			}},
		{"send with invalidate", provider.QPTRC, provider.SendWR{WRID: 11, SGL: sgl, Opcode: provider.WRSendWithInv, Imm: 0x87654321},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND_WITH_INV
				*w.Wr.InvalidateRkey() = 0x87654321
			}},
		{"bind MW", provider.QPTUC, provider.SendWR{WRID: 12, Opcode: provider.WRBindMW, Flags: provider.SendSignaled,
			Bind: provider.MWBind{MWRKey: 0x100, NewRKey: 0x101, MRLKey: 0x200, Addr: 0x7000, Length: 0x800, Access: 0xe}},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_BIND_MW
				w.Wr.SendFlags = 2
				m := w.Wr.Mw()
				m.Addr, m.Length, m.MrLkey, m.MwRkey, m.Rkey, m.Access = 0x7000, 0x800, 0x200, 0x100, 0x101, 0xe
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := readyQP(t, tc.typ)
			// A few WQEs first so the one under test is not in slot 0 and has a non-zero ssn.
			filler := []provider.SendWR{{Opcode: provider.WRSend}, {Opcode: provider.WRSend}}
			if tc.typ == provider.QPTUD {
				filler[0].AH, filler[1].AH = ah, ah
			}
			if n, err := f.PostSend(filler); n != 2 || err != nil {
				t.Fatalf("post filler: %d, %v", n, err)
			}
			f.expectDoorbell(t)
			retire(f.sq)
			retire(f.sq)
			n, err := f.PostSend([]provider.SendWR{tc.wr})
			if n != 1 || err != nil {
				t.Fatalf("PostSend = %d, %v", n, err)
			}
			f.expectDoorbell(t)
			p, ok := consume(f.sq)
			if !ok {
				t.Fatal("no WQE in the send ring")
			}
			got := *(*abi.RxeSendWqe)(p)
			var want abi.RxeSendWqe
			want.Wr.WrId = tc.wr.WRID
			tc.want(&want)
			var length uint32
			for _, s := range tc.wr.SGL {
				length += s.Length
			}
			want.Dma.Length, want.Dma.Resid, want.Dma.NumSge = length, length, uint32(len(tc.wr.SGL))
			want.Ssn = 2
			if got != want {
				t.Errorf("WQE\n got %+v\nwant %+v", got, want)
			}
			payload := unsafe.Slice((*provider.SGE)(unsafe.Add(p, abi.SizeofRxeSendWqe)), len(tc.wr.SGL))
			for i := range payload {
				if payload[i] != tc.wr.SGL[i] {
					t.Errorf("sge[%d] = %+v, want %+v", i, payload[i], tc.wr.SGL[i])
				}
			}
		})
	}
}

// Inline sends copy the bytes of every SGE, back to back, into the WQE payload; dma describes the total.
func TestSendInline(t *testing.T) {
	f := readyQP(t, provider.QPTRC)
	a, b := []byte("hello, "), []byte("inline world")
	sgl := []provider.SGE{
		{Addr: uint64(uintptr(unsafe.Pointer(&a[0]))), Length: uint32(len(a))},
		{Addr: 0, Length: 0},
		{Addr: uint64(uintptr(unsafe.Pointer(&b[0]))), Length: uint32(len(b))},
	}
	n, err := f.PostSend([]provider.SendWR{{WRID: 1, SGL: sgl, Opcode: provider.WRSend, Flags: provider.SendInline}})
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	if n != 1 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	p, _ := consume(f.sq)
	w := (*abi.RxeSendWqe)(p)
	want := "hello, inline world"
	if w.Dma.Length != uint32(len(want)) || w.Dma.Resid != uint32(len(want)) || w.Dma.NumSge != 3 {
		t.Errorf("dma = %+v, want length/resid %d num_sge 3", w.Dma, len(want))
	}
	if w.Wr.SendFlags != uint32(provider.SendInline) {
		t.Errorf("send_flags %#x, want INLINE", w.Wr.SendFlags)
	}
	if got := unsafe.Slice((*byte)(unsafe.Add(p, abi.SizeofRxeSendWqe)), len(want)); string(got) != want {
		t.Errorf("inline payload %q, want %q", got, want)
	}
}

// Validation, with the errnos rdma-core gives; the failing request and everything after it stay unposted.
func TestSendValidation(t *testing.T) {
	ok := provider.SendWR{Opcode: provider.WRSend}
	long := provider.SGE{Addr: 0x1000, Length: 1 << 20}
	tests := []struct {
		name  string
		typ   provider.QPType
		wr    provider.SendWR
		errno unix.Errno
	}{
		{"too many SGEs", provider.QPTRC, provider.SendWR{Opcode: provider.WRSend, SGL: make([]provider.SGE, 5)}, unix.EINVAL},
		{"inline too long", provider.QPTRC, provider.SendWR{Opcode: provider.WRSend, Flags: provider.SendInline,
			SGL: []provider.SGE{long}}, unix.EINVAL},
		{"atomic misaligned", provider.QPTRC, provider.SendWR{Opcode: provider.WRAtomicFetchAndAdd, RemoteAddr: 0x1004,
			SGL: []provider.SGE{{Length: 8}}}, unix.EINVAL},
		{"atomic short", provider.QPTRC, provider.SendWR{Opcode: provider.WRAtomicCmpAndSwp, RemoteAddr: 0x1000,
			SGL: []provider.SGE{{Length: 4}}}, unix.EINVAL},
		{"bind MW on UD", provider.QPTUD, provider.SendWR{Opcode: provider.WRBindMW}, unix.EINVAL},
		{"bind MW with SGE", provider.QPTRC, provider.SendWR{Opcode: provider.WRBindMW, SGL: []provider.SGE{{}}}, unix.EINVAL},
		{"bind MW with imm", provider.QPTRC, provider.SendWR{Opcode: provider.WRBindMW, Imm: 1}, unix.EINVAL},
		{"UD send without AH", provider.QPTUD, provider.SendWR{Opcode: provider.WRSend}, unix.EINVAL},
		{"UD send AH without number", provider.QPTUD, provider.SendWR{Opcode: provider.WRSend, AH: &provider.AHData{}}, unix.EINVAL},
		{"unknown opcode", provider.QPTRC, provider.SendWR{Opcode: 10}, unix.EINVAL},
		{"length over 32 bits", provider.QPTRC, provider.SendWR{Opcode: provider.WRSend,
			SGL: []provider.SGE{{Length: 1 << 31}, {Length: 1 << 31}}}, unix.EINVAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := readyQP(t, tc.typ)
			good := ok
			if tc.typ == provider.QPTUD {
				good.AH = &provider.AHData{Num: 1}
			}
			n, err := f.PostSend([]provider.SendWR{good, tc.wr, good})
			if n != 1 || !errors.Is(err, tc.errno) {
				t.Fatalf("PostSend = %d, %v; want 1, %v", n, err, tc.errno)
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != opPostSend {
				t.Errorf("error %v is not a post-send *Error", err)
			}
			if got := pending(f.sq); got != 1 {
				t.Errorf("%d WQEs in the ring, want 1", got)
			}
			f.expectDoorbell(t) // the valid first request was posted: doorbell rung once
		})
	}
}

// Atomics at exactly 8 bytes and aligned, and BIND_MW on RC, pass validation.
func TestSendValidationAccepts(t *testing.T) {
	f := readyQP(t, provider.QPTRC)
	wrs := []provider.SendWR{
		{Opcode: provider.WRAtomicCmpAndSwp, RemoteAddr: 0x1008, SGL: []provider.SGE{{Length: 8}}},
		{Opcode: provider.WRAtomicFetchAndAdd, RemoteAddr: 0x2000, SGL: []provider.SGE{{Length: 16}}},
		{Opcode: provider.WRBindMW},
		{Opcode: provider.WRSend, Flags: provider.SendInline, SGL: []provider.SGE{{Length: 0}}},
		{Opcode: provider.WRSend, SGL: make([]provider.SGE, 4)},
	}
	if n, err := f.PostSend(wrs); n != len(wrs) || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
}

func TestSendQueueFull(t *testing.T) {
	f := readyQP(t, provider.QPTRC)
	wrs := make([]provider.SendWR, f.sq.capacity()+3)
	for i := range wrs {
		wrs[i] = provider.SendWR{WRID: uint64(i), Opcode: provider.WRSend}
	}
	n, err := f.PostSend(wrs)
	if n != f.sq.capacity() || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("PostSend = %d, %v; want %d, ENOMEM", n, err, f.sq.capacity())
	}
	f.expectDoorbell(t)
	// The kernel consumes two; two more fit, in order after the first batch.
	retire(f.sq)
	retire(f.sq)
	n, err = f.PostSend(wrs[n:])
	if n != 2 || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("second PostSend = %d, %v; want 2, ENOMEM", n, err)
	}
	for want := uint64(2); ; want++ {
		p, ok := consume(f.sq)
		if !ok {
			if want != uint64(f.sq.capacity()+2) {
				t.Fatalf("ring ended at wr_id %d", want)
			}
			break
		}
		if got := (*abi.RxeSendWqe)(p).Wr.WrId; got != want {
			t.Fatalf("wr_id %d, want %d", got, want)
		}
		retire(f.sq)
	}
}

// Sends are refused until RTS (the kernel's doorbell answers EINVAL before RTS), and allowed in the states after
// it: SQD, SQE and ERR (where the kernel flushes them with error completions).
func TestSendStateGate(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(provider.QPTRC, testCap, false)
	f.withNullDoorbell(t)
	wr := []provider.SendWR{{Opcode: provider.WRSend}}
	for _, st := range []provider.QPState{provider.QPSReset, provider.QPSInit, provider.QPSRTR} {
		f.StateChanged(st)
		if n, err := f.PostSend(wr); n != 0 || !errors.Is(err, unix.EINVAL) {
			t.Errorf("state %d: PostSend = %d, %v; want 0, EINVAL", st, n, err)
		}
	}
	if pending(f.sq) != 0 {
		t.Fatal("refused sends reached the ring")
	}
	for _, st := range []provider.QPState{provider.QPSRTS, provider.QPSSQD, provider.QPSSQE, provider.QPSErr} {
		f.StateChanged(st)
		if n, err := f.PostSend(wr); n != 1 || err != nil {
			t.Errorf("state %d: PostSend = %d, %v", st, n, err)
		}
	}
}

// A doorbell the kernel refuses is reported with its errno; the WQEs stay posted.
func TestSendDoorbellError(t *testing.T) {
	f := readyQP(t, provider.QPTRC)
	f.dbFD = -1
	n, err := f.PostSend([]provider.SendWR{{Opcode: provider.WRSend}})
	if n != 1 || !errors.Is(err, unix.EBADF) {
		t.Fatalf("PostSend = %d, %v; want 1, EBADF", n, err)
	}
	if pending(f.sq) != 1 {
		t.Fatal("WQE not in the ring")
	}
}

func TestSendAfterDestroy(t *testing.T) {
	f := readyQP(t, provider.QPTRC)
	f.Destroyed()
	if n, err := f.PostSend([]provider.SendWR{{Opcode: provider.WRSend}}); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostSend after Destroyed = %d, %v", n, err)
	}
	if n, err := f.PostRecv([]provider.RecvWR{{}}); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv after Destroyed = %d, %v", n, err)
	}
	if n, err := f.PostSend(nil); n != 0 || err != nil {
		t.Fatalf("empty PostSend = %d, %v", n, err)
	}
}
