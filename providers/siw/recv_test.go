package siw

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

func recvs(from, n, sges int) []verbs.RecvWR {
	wrs := make([]verbs.RecvWR, n)
	for i := range wrs {
		id := uint64(from + i)
		wrs[i].WRID = id
		for j := 0; j < sges; j++ {
			wrs[i].SGL = append(wrs[i].SGL, verbs.SGE{Addr: id<<12 | uint64(j), Length: uint32(j + 1), LKey: uint32(id)})
		}
	}
	return wrs
}

// checkRecvs takes n receives off q as the kernel does and checks they are from..from+n-1 with sges SGEs.
func checkRecvs(t *testing.T, q ring, get *uint32, from, n, sges int) {
	t.Helper()
	for i := 0; i < n; i++ {
		e, ok := takeRQE(t, q, get)
		id := uint64(from + i)
		if !ok || e.Id != id || int(e.NumSge) != sges {
			t.Fatalf("kernel took %+v (ok %v), want receive %d with %d SGEs", e, ok, id, sges)
		}
		for j := 0; j < sges; j++ {
			if e.Sge[j] != (abi.SiwSge{Laddr: id<<12 | uint64(j), Length: uint32(j + 1), Lkey: uint32(id)}) {
				t.Fatalf("receive %d: sge[%d] = %+v", id, j, e.Sge[j])
			}
		}
	}
	if e, ok := takeRQE(t, q, get); ok {
		t.Fatalf("kernel found an extra receive %+v", e)
	}
}

// A QP's receive queue: shared memory only (no doorbell), full when the next entry is still the kernel's,
// wraps around, and refuses more SGEs than granted. Zero-SGE receives are posted.
func TestPostRecv(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 2}, false, false)
	f.withPipeDoorbell(t)
	next := 0
	for round := 0; round < 50; round++ {
		sges := round % 3
		n, err := errOf(f.PostRecv(recvs(next, 5, sges)))
		if n != 4 || !errors.Is(err, unix.ENOMEM) {
			t.Fatalf("round %d: PostRecv of 5 into 4 free entries = %d, %v", round, n, err)
		}
		checkRecvs(t, f.rq, &f.rqGet, next, 4, sges)
		next += 4
	}
	if f.doorbells(t) != 0 {
		t.Fatal("posting receives rang the send doorbell")
	}
	if n, st := f.PostRecv(recvs(0, 2, 3)); n != 0 || st != provider.TooManySGE {
		t.Fatalf("PostRecv with 3 SGEs (max 2) = %d, %v", n, st.Err())
	}
	huge := []verbs.RecvWR{{SGL: []verbs.SGE{{Length: 1 << 31}, {Length: 1 << 31}}}}
	if n, st := f.PostRecv(huge); n != 0 || st != provider.TooLong {
		t.Fatalf("PostRecv of 2^32 bytes = %d, %v", n, st.Err())
	}
	if n, err := errOf(f.PostRecv(nil)); n != 0 || err != nil {
		t.Fatalf("empty PostRecv = %d, %v", n, err)
	}
}

// A QP on an SRQ has no receive queue of its own; one created with no receive entries and no SRQ has an empty
// one (every post finds it full).
func TestQPReceiveQueueKinds(t *testing.T) {
	k := newFakeKernel(t)
	onSRQ := k.newQP(verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}, true, false)
	if _, st := onSRQ.PostRecv(recvs(0, 1, 1)); st != provider.NoRecvQueue {
		t.Errorf("PostRecv on an SRQ's QP: %v, want NoRecvQueue", st.Err())
	}
	sendOnly := k.newQP(verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 0, MaxSendSGE: 1}, false, false)
	if _, st := sendOnly.PostRecv(recvs(0, 1, 0)); st != provider.QueueFull {
		t.Errorf("PostRecv on a QP with no receive entries: %v, want QueueFull", st.Err())
	}
	sendOnly.Destroyed()
	if _, st := sendOnly.PostRecv(recvs(0, 1, 0)); st != provider.QueueFull {
		t.Errorf("PostRecv on a destroyed QP with no receive entries: %v", st.Err())
	}
}

// fakeSRQ is an SRQ and the kernel's view of its queue.
type fakeSRQ struct {
	*srq
	k   ring
	get uint32
}

func (k *fakeKernel) newSRQ(num, maxSGE uint32) *fakeSRQ {
	k.t.Helper()
	key, kr := k.region(num, abi.SizeofSiwRqe, 0)
	s, _, err := k.context().CreateSRQ(provider.SRQParams{MaxWR: num, MaxSGE: maxSGE},
		respond[provider.SRQParams](&abi.SiwUrespCreateSrq{NumRqe: num, SrqKey: key}, provider.SRQResult{MaxWR: num, MaxSGE: maxSGE, Handle: 5}))
	if err != nil {
		k.t.Fatalf("CreateSRQ: %v", err)
	}
	k.t.Cleanup(s.(*srq).Destroyed)
	return &fakeSRQ{srq: s.(*srq), k: kr}
}

func TestSRQ(t *testing.T) {
	k := newFakeKernel(t)
	s := k.newSRQ(8, 9) // the granted SGE count is bounded by SIW_MAX_SGE
	if s.rq.maxSGE != abi.SIW_MAX_SGE {
		t.Fatalf("SRQ SGE limit %d, want %d", s.rq.maxSGE, abi.SIW_MAX_SGE)
	}
	next := 0
	for round := 0; round < 40; round++ {
		sges := round % 7
		n, err := errOf(s.PostRecv(recvs(next, 9, sges)))
		if n != 8 || !errors.Is(err, unix.ENOMEM) {
			t.Fatalf("round %d: SRQ PostRecv of 9 into 8 = %d, %v", round, n, err)
		}
		checkRecvs(t, s.k, &s.get, next, 8, sges)
		next += 8
	}
	if _, st := s.PostRecv(recvs(0, 1, 7)); st != provider.TooManySGE {
		t.Fatalf("SRQ PostRecv with 7 SGEs: %v", st.Err())
	}
	// MODIFY_SRQ: no driver data, the kernel's answer returned, the queue untouched.
	calls := 0
	err := s.Modify(16, func(in, out []byte) error {
		calls++
		if len(in) != 0 || len(out) != 0 {
			t.Errorf("MODIFY_SRQ driver data: in %d out %d", len(in), len(out))
		}
		return unix.EOPNOTSUPP // the kernel refuses a resize
	})
	if calls != 1 || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("Modify = %v after %d calls", err, calls)
	}
	if err := s.Modify(0, func([]byte, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n, err := errOf(s.PostRecv(recvs(next, 1, 1))); n != 1 || err != nil {
		t.Fatalf("PostRecv after Modify = %d, %v", n, err)
	}
	s.Destroyed()
	if _, st := s.PostRecv(recvs(0, 1, 1)); st != provider.Destroyed {
		t.Fatalf("SRQ PostRecv after Destroyed: %v", st.Err())
	}
}
