package rxe

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider/doorbell"
	"golang.org/x/sys/unix"
)

var testCap = verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}

// readyQP is a fake QP in RTS whose doorbell goes into a pipe.
func readyQP(t *testing.T, typ verbs.QPType) *fakeQP {
	k := newFakeKernel(t)
	f := k.newQP(typ, testCap, false)
	f.withPipeDoorbell(t)
	f.StateChanged(verbs.QPStateRTS)
	return f
}

// expectDoorbell reads one doorbell write from the pipe and checks it is the QP's POST_SEND command.
func (f *fakeQP) expectDoorbell(t *testing.T) {
	t.Helper()
	got := make([]byte, doorbell.Len)
	if _, err := io.ReadFull(f.bell, got); err != nil {
		t.Fatalf("read doorbell: %v", err)
	}
	want := f.db.Bytes()
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
	ah := &verbs.AHData{Handle: 3, Num: 42}
	sgl := []verbs.SGE{{Addr: 0x1000, Length: 100, LKey: 0x11}, {Addr: 0x2000, Length: 28, LKey: 0x22}}
	atomicSGL := []verbs.SGE{{Addr: 0x3000, Length: 8, LKey: 0x33}}
	tests := []struct {
		name string
		typ  verbs.QPType
		wr   verbs.SendWR
		want func(w *abi.RxeSendWqe)
	}{
		{"RDMA write", verbs.QPTypeRC, verbs.SendWR{WRID: 1, SGL: sgl, Opcode: verbs.WRRDMAWrite,
			Flags: verbs.SendSignaled | verbs.SendFence, RemoteAddr: 0xdead0000, RKey: 0x99, Imm: 0x55},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_RDMA_WRITE
				w.Wr.SendFlags = 3
				w.Wr.Rdma().RemoteAddr = 0xdead0000
				w.Wr.Rdma().Rkey = 0x99
				w.Iova = 0xdead0000
			}},
		{"RDMA write with imm", verbs.QPTypeUC, verbs.SendWR{WRID: 2, SGL: sgl, Opcode: verbs.WRRDMAWriteWithImm,
			RemoteAddr: 0xbeef0000, RKey: 0x98, Imm: 0x01020304},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
				w.Wr.Ex = [4]byte{1, 2, 3, 4}
				w.Wr.Rdma().RemoteAddr = 0xbeef0000
				w.Wr.Rdma().Rkey = 0x98
				w.Iova = 0xbeef0000
			}},
		{"RDMA read", verbs.QPTypeRC, verbs.SendWR{WRID: 3, SGL: sgl, Opcode: verbs.WRRDMARead,
			Flags: verbs.SendSignaled, RemoteAddr: 0x4000, RKey: 0x97},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_RDMA_READ
				w.Wr.SendFlags = 2
				w.Wr.Rdma().RemoteAddr = 0x4000
				w.Wr.Rdma().Rkey = 0x97
				w.Iova = 0x4000
			}},
		{"RC send", verbs.QPTypeRC, verbs.SendWR{WRID: 4, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendSolicited,
			RemoteQPN: 7, RemoteQKey: 8},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND
				w.Wr.SendFlags = 4
			}},
		{"RC send with imm", verbs.QPTypeRC, verbs.SendWR{WRID: 5, SGL: sgl, Opcode: verbs.WRSendWithImm, Imm: 0xa0b0c0d0},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND_WITH_IMM
				w.Wr.Ex = [4]byte{0xa0, 0xb0, 0xc0, 0xd0}
			}},
		{"UD send", verbs.QPTypeUD, verbs.SendWR{WRID: 6, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			AH: ah, RemoteQPN: 0x123, RemoteQKey: 0x11111111},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND
				w.Wr.SendFlags = 2
				w.Wr.Ud().RemoteQpn = 0x123
				w.Wr.Ud().RemoteQkey = 0x11111111
				w.Wr.Ud().AhNum = 42
			}},
		{"UD send with imm", verbs.QPTypeUD, verbs.SendWR{WRID: 7, SGL: sgl, Opcode: verbs.WRSendWithImm, Imm: 9,
			AH: ah, RemoteQPN: 0x124, RemoteQKey: 0x22},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND_WITH_IMM
				w.Wr.Ex = [4]byte{0, 0, 0, 9}
				w.Wr.Ud().RemoteQpn = 0x124
				w.Wr.Ud().RemoteQkey = 0x22
				w.Wr.Ud().AhNum = 42
			}},
		{"compare and swap", verbs.QPTypeRC, verbs.SendWR{WRID: 8, SGL: atomicSGL, Opcode: verbs.WRAtomicCmpAndSwp,
			RemoteAddr: 0x5008, RKey: 0x96, CompareAdd: 0x1111, Swap: 0x2222},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
				a := w.Wr.Atomic()
				a.RemoteAddr, a.CompareAdd, a.Swap, a.Rkey = 0x5008, 0x1111, 0x2222, 0x96
				w.Iova = 0x5008
			}},
		{"fetch and add", verbs.QPTypeRC, verbs.SendWR{WRID: 9, SGL: atomicSGL, Opcode: verbs.WRAtomicFetchAndAdd,
			RemoteAddr: 0x6000, RKey: 0x95, CompareAdd: 5},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
				a := w.Wr.Atomic()
				a.RemoteAddr, a.CompareAdd, a.Rkey = 0x6000, 5, 0x95
				w.Iova = 0x6000
			}},
		{"local invalidate", verbs.QPTypeRC, verbs.SendWR{WRID: 10, Opcode: verbs.WRLocalInv, Imm: 0x12345678},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_LOCAL_INV
				*w.Wr.InvalidateRkey() = 0x12345678
			}},
		{"send with invalidate", verbs.QPTypeRC, verbs.SendWR{WRID: 11, SGL: sgl, Opcode: verbs.WRSendWithInv, Imm: 0x87654321},
			func(w *abi.RxeSendWqe) {
				w.Wr.Opcode = abi.IB_UVERBS_WR_SEND_WITH_INV
				*w.Wr.InvalidateRkey() = 0x87654321
			}},
		{"bind MW", verbs.QPTypeUC, verbs.SendWR{WRID: 12, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled,
			Bind: verbs.MWBind{MWRKey: 0x100, NewRKey: 0x101, MRLKey: 0x200, Addr: 0x7000, Length: 0x800, Access: 0xe}},
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
			filler := []verbs.SendWR{{Opcode: verbs.WRSend}, {Opcode: verbs.WRSend}}
			if tc.typ == verbs.QPTypeUD {
				filler[0].AH, filler[1].AH = ah, ah
			}
			if n, err := errOf(f.PostSend(filler)); n != 2 || err != nil {
				t.Fatalf("post filler: %d, %v", n, err)
			}
			f.expectDoorbell(t)
			retire(f.sq)
			retire(f.sq)
			n, err := errOf(f.PostSend([]verbs.SendWR{tc.wr}))
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
			payload := unsafe.Slice((*verbs.SGE)(unsafe.Add(p, abi.SizeofRxeSendWqe)), len(tc.wr.SGL))
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
	f := readyQP(t, verbs.QPTypeRC)
	a, aAddr := userBuffer(t, "hello, ", 7)
	b, bAddr := userBuffer(t, "inline world", 12)
	sgl := []verbs.SGE{
		{Addr: aAddr, Length: uint32(len(a))},
		{Addr: 0, Length: 0},
		{Addr: bAddr, Length: uint32(len(b))},
	}
	n, err := errOf(f.PostSend([]verbs.SendWR{{WRID: 1, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendInline}}))
	if n != 1 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	p, _ := consume(f.sq)
	w := (*abi.RxeSendWqe)(p)
	want := "hello, inline world"
	if w.Dma.Length != uint32(len(want)) || w.Dma.Resid != uint32(len(want)) || w.Dma.NumSge != 3 {
		t.Errorf("dma = %+v, want length/resid %d num_sge 3", w.Dma, len(want))
	}
	if w.Wr.SendFlags != uint32(verbs.SendInline) {
		t.Errorf("send_flags %#x, want INLINE", w.Wr.SendFlags)
	}
	if got := unsafe.Slice((*byte)(unsafe.Add(p, abi.SizeofRxeSendWqe)), len(want)); string(got) != want {
		t.Errorf("inline payload %q, want %q", got, want)
	}
}

// Validation, with the errnos rdma-core gives; the failing request and everything after it stay unposted.
func TestSendValidation(t *testing.T) {
	ok := verbs.SendWR{Opcode: verbs.WRSend}
	long := verbs.SGE{Addr: 0x1000, Length: 1 << 20}
	tests := []struct {
		name  string
		typ   verbs.QPType
		wr    verbs.SendWR
		errno unix.Errno
	}{
		{"too many SGEs", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend, SGL: make([]verbs.SGE, 5)}, unix.EINVAL},
		{"inline too long", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline,
			SGL: []verbs.SGE{long}}, unix.EINVAL},
		{"atomic misaligned", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, RemoteAddr: 0x1004,
			SGL: []verbs.SGE{{Length: 8}}}, unix.EINVAL},
		{"atomic short", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, RemoteAddr: 0x1000,
			SGL: []verbs.SGE{{Length: 4}}}, unix.EINVAL},
		{"bind MW on UD", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRBindMW}, unix.EINVAL},
		{"bind MW with SGE", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRBindMW, SGL: []verbs.SGE{{}}}, unix.EINVAL},
		{"bind MW with imm", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRBindMW, Imm: 1}, unix.EINVAL},
		{"UD send without AH", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRSend}, unix.EINVAL},
		{"UD send AH without number", verbs.QPTypeUD, verbs.SendWR{Opcode: verbs.WRSend, AH: &verbs.AHData{}}, unix.EINVAL},
		{"unknown opcode", verbs.QPTypeRC, verbs.SendWR{Opcode: 12}, unix.EINVAL},
		{"defined opcode rxe does not build (TSO)", verbs.QPTypeRC, verbs.SendWR{Opcode: 10}, unix.EOPNOTSUPP},
		{"ATOMIC_WRITE on a device without it", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRAtomicWrite}, unix.EOPNOTSUPP},
		{"FLUSH on a device without it", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRFlush,
			Flush: verbs.Flush{Type: verbs.FlushGlobal}}, unix.EOPNOTSUPP},
		{"length over 32 bits", verbs.QPTypeRC, verbs.SendWR{Opcode: verbs.WRSend,
			SGL: []verbs.SGE{{Length: 1 << 31}, {Length: 1 << 31}}}, unix.EINVAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := readyQP(t, tc.typ)
			good := ok
			if tc.typ == verbs.QPTypeUD {
				good.AH = &verbs.AHData{Num: 1}
			}
			n, err := errOf(f.PostSend([]verbs.SendWR{good, tc.wr, good}))
			if n != 1 || !errors.Is(err, tc.errno) {
				t.Fatalf("PostSend = %d, %v; want 1, %v", n, err, tc.errno)
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
	f := readyQP(t, verbs.QPTypeRC)
	wrs := []verbs.SendWR{
		{Opcode: verbs.WRAtomicCmpAndSwp, RemoteAddr: 0x1008, SGL: []verbs.SGE{{Length: 8}}},
		{Opcode: verbs.WRAtomicFetchAndAdd, RemoteAddr: 0x2000, SGL: []verbs.SGE{{Length: 16}}},
		{Opcode: verbs.WRBindMW},
		{Opcode: verbs.WRSend, Flags: verbs.SendInline, SGL: []verbs.SGE{{Length: 0}}},
		{Opcode: verbs.WRSend, SGL: make([]verbs.SGE, 4)},
	}
	if n, err := errOf(f.PostSend(wrs)); n != len(wrs) || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
}

func TestSendQueueFull(t *testing.T) {
	f := readyQP(t, verbs.QPTypeRC)
	wrs := make([]verbs.SendWR, f.sq.capacity()+3)
	for i := range wrs {
		wrs[i] = verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRSend}
	}
	n, err := errOf(f.PostSend(wrs))
	if n != f.sq.capacity() || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("PostSend = %d, %v; want %d, ENOMEM", n, err, f.sq.capacity())
	}
	f.expectDoorbell(t)
	// The kernel consumes two; two more fit, in order after the first batch.
	retire(f.sq)
	retire(f.sq)
	n, err = errOf(f.PostSend(wrs[n:]))
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
	f := k.newQP(verbs.QPTypeRC, testCap, false)
	f.withNullDoorbell(t)
	wr := []verbs.SendWR{{Opcode: verbs.WRSend}}
	for _, st := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR} {
		f.StateChanged(st)
		if n, err := errOf(f.PostSend(wr)); n != 0 || !errors.Is(err, unix.EINVAL) {
			t.Errorf("state %d: PostSend = %d, %v; want 0, EINVAL", st, n, err)
		}
	}
	if pending(f.sq) != 0 {
		t.Fatal("refused sends reached the ring")
	}
	for _, st := range []verbs.QPState{verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr} {
		f.StateChanged(st)
		if n, err := errOf(f.PostSend(wr)); n != 1 || err != nil {
			t.Errorf("state %d: PostSend = %d, %v", st, n, err)
		}
	}
}

// A doorbell the kernel refuses is reported with its errno; the WQEs stay posted.
func TestSendDoorbellError(t *testing.T) {
	f := readyQP(t, verbs.QPTypeRC)
	f.dbFD = -1
	n, err := errOf(f.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}}))
	if n != 1 || !errors.Is(err, unix.EBADF) {
		t.Fatalf("PostSend = %d, %v; want 1, EBADF", n, err)
	}
	if pending(f.sq) != 1 {
		t.Fatal("WQE not in the ring")
	}
}

func TestSendAfterDestroy(t *testing.T) {
	f := readyQP(t, verbs.QPTypeRC)
	f.Destroyed()
	if n, err := errOf(f.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}})); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostSend after Destroyed = %d, %v", n, err)
	}
	if n, err := errOf(f.PostRecv([]verbs.RecvWR{{}})); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv after Destroyed = %d, %v", n, err)
	}
	if n, err := errOf(f.PostSend(nil)); n != 0 || err != nil {
		t.Fatalf("empty PostSend = %d, %v", n, err)
	}
}

// PostSendAll (the extended QP's Complete): a chain is written and published together, with one doorbell, WQEs
// identical to PostSend's; a chain with a request the ring or the validation refuses publishes nothing and rings
// nothing, and the QP posts on as before.
func TestPostSendAll(t *testing.T) {
	wrs := []verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend}, {WRID: 2, Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x10, RKey: 3},
		{WRID: 3, Opcode: verbs.WRSendWithImm, Imm: 9}}
	a, b := readyQP(t, verbs.QPTypeRC), readyQP(t, verbs.QPTypeRC)
	if n, err := errOf(a.PostSend(wrs)); n != 3 || err != nil {
		t.Fatalf("PostSend = %d, %v", n, err)
	}
	if n, err := errOf(b.PostSendAll(wrs)); n != 3 || err != nil {
		t.Fatalf("PostSendAll = %d, %v", n, err)
	}
	a.expectDoorbell(t)
	b.expectDoorbell(t)
	for i := range wrs {
		pa, oka := consume(a.sq)
		pb, okb := consume(b.sq)
		if !oka || !okb || !bytes.Equal(unsafe.Slice((*byte)(pa), abi.SizeofRxeSendWqe), unsafe.Slice((*byte)(pb), abi.SizeofRxeSendWqe)) {
			t.Fatalf("WQE %d differs between PostSend and PostSendAll", i)
		}
		retire(a.sq)
		retire(b.sq)
	}

	f := readyQP(t, verbs.QPTypeRC)
	full := make([]verbs.SendWR, f.sq.capacity()+1)
	for i := range full {
		full[i] = verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRSend}
	}
	bad := append([]verbs.SendWR{{Opcode: verbs.WRSend}}, verbs.SendWR{Opcode: verbs.WRSend, SGL: make([]verbs.SGE, 5)})
	for _, c := range []struct {
		name string
		wrs  []verbs.SendWR
		bad  int
		want error
	}{
		{"more than the ring", full, f.sq.capacity(), unix.ENOMEM},
		{"too many SGEs second", bad, 1, unix.EINVAL},
	} {
		n, err := errOf(f.PostSendAll(c.wrs))
		if n != c.bad || !errors.Is(err, c.want) {
			t.Errorf("%s: PostSendAll = %d, %v; want %d, %v", c.name, n, err, c.bad, c.want)
		}
		if pending(f.sq) != 0 {
			t.Fatalf("%s: a refused chain published %d WQEs", c.name, pending(f.sq))
		}
		fds := []unix.PollFd{{Fd: int32(f.bell.Fd()), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); n != 0 || err != nil {
			t.Fatalf("%s: a refused chain rang the doorbell (poll %d, %v)", c.name, n, err)
		}
	}
	if n, err := errOf(f.PostSend(wrs[:1])); n != 1 || err != nil {
		t.Fatalf("PostSend after refused chains = %d, %v", n, err)
	}
	f.expectDoorbell(t)
	p, _ := consume(f.sq)
	if got := (*abi.RxeSendWqe)(p).Wr.WrId; got != 1 {
		t.Fatalf("the ring's first WQE is wr_id %d, want 1", got)
	}
}
