package rxe

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

func checkRecvWQE(t *testing.T, p unsafe.Pointer, wr verbs.RecvWR) {
	t.Helper()
	got := *(*abi.RxeRecvWqe)(p)
	var length uint32
	for _, s := range wr.SGL {
		length += s.Length
	}
	want := abi.RxeRecvWqe{WrId: wr.WRID}
	want.Dma.Length, want.Dma.Resid, want.Dma.NumSge = length, length, uint32(len(wr.SGL))
	if got != want {
		t.Errorf("recv WQE\n got %+v\nwant %+v", got, want)
	}
	sges := unsafe.Slice((*verbs.SGE)(unsafe.Add(p, abi.SizeofRxeRecvWqe)), len(wr.SGL))
	for i := range sges {
		if sges[i] != wr.SGL[i] {
			t.Errorf("sge[%d] = %+v, want %+v", i, sges[i], wr.SGL[i])
		}
	}
}

func TestPostRecv(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(verbs.QPTypeRC, testCap, false)
	wrs := []verbs.RecvWR{
		{WRID: 10, SGL: []verbs.SGE{{Addr: 0x1000, Length: 4096, LKey: 1}}},
		{WRID: 11, SGL: []verbs.SGE{{Addr: 0x2000, Length: 10, LKey: 2}, {Addr: 0x3000, Length: 20, LKey: 3}}},
		{WRID: 12},
	}
	if n, err := errOf(f.PostRecv(wrs)); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv in RESET = %d, %v; want 0, EINVAL", n, err)
	}
	f.StateChanged(verbs.QPStateInit)
	// Many rounds, so the ring wraps around several times.
	for round := 0; round < 50; round++ {
		if n, err := errOf(f.PostRecv(wrs)); n != len(wrs) || err != nil {
			t.Fatalf("round %d: PostRecv = %d, %v", round, n, err)
		}
		for i := range wrs {
			p, ok := consume(f.rq)
			if !ok {
				t.Fatalf("round %d: ring empty at %d", round, i)
			}
			checkRecvWQE(t, p, wrs[i])
			retire(f.rq)
		}
	}
}

func TestPostRecvErrors(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(verbs.QPTypeRC, testCap, false)
	f.StateChanged(verbs.QPStateRTR)
	n, err := errOf(f.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2, SGL: make([]verbs.SGE, 5)}, {WRID: 3}}))
	if n != 1 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("too many SGEs: PostRecv = %d, %v; want 1, EINVAL", n, err)
	}
	n, err = errOf(f.PostRecv([]verbs.RecvWR{{SGL: []verbs.SGE{{Length: 1 << 31}, {Length: 1 << 31}}}}))
	if n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("length over 32 bits: PostRecv = %d, %v; want 0, EINVAL", n, err)
	}
	wrs := make([]verbs.RecvWR, f.rq.capacity())
	n, err = errOf(f.PostRecv(wrs))
	if n != f.rq.capacity()-1 || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("full: PostRecv = %d, %v; want %d, ENOMEM", n, err, f.rq.capacity()-1)
	}
	// Full is checked before the SGE count, as in rdma-core.
	if _, err := errOf(f.PostRecv([]verbs.RecvWR{{SGL: make([]verbs.SGE, 5)}})); !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("full ring and bad SGE count: %v, want ENOMEM", err)
	}

	s := k.newQP(verbs.QPTypeRC, testCap, true)
	s.StateChanged(verbs.QPStateInit)
	if s.qp.rq != nil {
		t.Fatal("QP on an SRQ has a receive ring")
	}
	if n, err := errOf(s.PostRecv([]verbs.RecvWR{{}})); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv on SRQ QP = %d, %v; want 0, EINVAL", n, err)
	}
}

// fakeSRQ creates an SRQ on the fake kernel and returns it with the kernel's view of its ring.
func (k *fakeKernel) newSRQ(maxWR, maxSGE int) (*srq, queue) {
	k.t.Helper()
	mi, kq := k.ring(maxWR, abi.SizeofRxeRecvWqe+maxSGE*abi.SizeofRxeSge)
	p := provider.SRQParams{MaxWR: uint32(maxWR), MaxSGE: uint32(maxSGE)}
	s, _, err := k.context().CreateSRQ(p, respond[provider.SRQParams](&abi.RxeCreateSrqResp{Mi: mi, SrqNum: 5},
		provider.SRQResult{MaxWR: uint32(kq.capacity()), MaxSGE: uint32(maxSGE), SRQN: 5}))
	if err != nil {
		k.t.Fatalf("CreateSRQ: %v", err)
	}
	return s.(*srq), kq
}

func TestSRQPostAndResize(t *testing.T) {
	k := newFakeKernel(t)
	s, kq := k.newSRQ(4, 2)
	wr := verbs.RecvWR{WRID: 7, SGL: []verbs.SGE{{Addr: 1, Length: 2, LKey: 3}}}
	if n, err := errOf(s.PostRecv([]verbs.RecvWR{wr, wr})); n != 2 || err != nil {
		t.Fatalf("PostRecv = %d, %v", n, err)
	}
	p, _ := consume(kq)
	checkRecvWQE(t, p, wr)
	if n, err := errOf(s.PostRecv([]verbs.RecvWR{{SGL: make([]verbs.SGE, 3)}})); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("too many SGEs: %d, %v", n, err)
	}

	// A modify that changes only the limit: the kernel leaves the mminfo untouched.
	var sawAddr uint64
	limitOnly := func(in, out []byte) error {
		if len(in) != abi.SizeofRxeModifySrqCmd || len(out) != 0 {
			t.Errorf("modify SRQ udata in %d out %d bytes", len(in), len(out))
		}
		sawAddr = (*abi.RxeModifySrqCmd)(unsafe.Pointer(&in[0])).MmapInfoAddr
		return nil
	}
	if err := s.Modify(0, limitOnly); err != nil {
		t.Fatalf("Modify (limit): %v", err)
	}
	if sawAddr != uint64(uintptr(unsafe.Pointer(&s.mod.mi))) {
		t.Fatalf("mmap_info_addr %#x does not point at the SRQ's mminfo", sawAddr)
	}
	if !s.rq.q.mapped() {
		t.Fatal("limit-only modify unmapped the ring")
	}

	// A resize: the kernel fills the mminfo through the pointer with a new ring, which the SRQ switches to.
	newMI, newKQ := k.ring(16, abi.SizeofRxeRecvWqe+2*abi.SizeofRxeSge)
	resize := func(in, out []byte) error {
		addr := (*abi.RxeModifySrqCmd)(unsafe.Pointer(&in[0])).MmapInfoAddr
		*(*abi.Mminfo)(addrPointer(addr)) = newMI
		return nil
	}
	if err := s.Modify(16, resize); err != nil {
		t.Fatalf("Modify (resize): %v", err)
	}
	if s.rq.q.capacity() != newKQ.capacity() {
		t.Fatalf("capacity %d after resize, want %d", s.rq.q.capacity(), newKQ.capacity())
	}
	wrs := make([]verbs.RecvWR, newKQ.capacity())
	if n, err := errOf(s.PostRecv(wrs)); n != newKQ.capacity() || err != nil {
		t.Fatalf("PostRecv after resize = %d, %v", n, err)
	}
	if pending(newKQ) != newKQ.capacity() {
		t.Fatalf("new ring holds %d, want %d", pending(newKQ), newKQ.capacity())
	}

	// A failing modify changes nothing.
	if err := s.Modify(32, func(in, out []byte) error { return unix.EINVAL }); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Modify error = %v", err)
	}
	s.Destroyed()
	if n, err := errOf(s.PostRecv([]verbs.RecvWR{{}})); n != 0 || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostRecv after Destroyed = %d, %v", n, err)
	}
}
