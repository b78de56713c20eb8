package siw

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

func sends(ids ...uint64) []verbs.SendWR {
	wrs := make([]verbs.SendWR, len(ids))
	for i, id := range ids {
		wrs[i] = verbs.SendWR{WRID: id, Opcode: verbs.WRSend, SGL: []verbs.SGE{{Addr: 0x1000, Length: uint32(id), LKey: 1}}}
	}
	return wrs
}

func seq(from, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(from + i)
	}
	return ids
}

// rdma-core's doorbell rule, step by step: a post rings only if the SQE before its first one is no longer
// VALID (the kernel took everything before it and may be idle); a post that fills the whole queue always
// rings.
func TestDoorbellRule(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	post := func(ids ...uint64) {
		t.Helper()
		if n, err := errOf(f.PostSend(sends(ids...))); n != len(ids) || err != nil {
			t.Fatalf("PostSend(%v) = %d, %v", ids, n, err)
		}
	}
	expect := func(step string, want int) {
		t.Helper()
		if got := f.doorbells(t); got != want {
			t.Fatalf("%s: %d doorbells, want %d", step, got, want)
		}
	}
	take := func(id uint64) {
		t.Helper()
		e, ok := f.takeSQE()
		if !ok || e.Id != id {
			t.Fatalf("kernel took %d (ok %v), want %d", e.Id, ok, id)
		}
	}

	post(1)
	expect("first post on an idle queue", 1) // the entry before it (the last one) was never VALID
	post(2)
	expect("kernel has not taken 1", 0) // it will find 2 after 1 by itself
	take(1)
	post(3)
	expect("kernel took 1 but not 2", 0) // the entry before 3 is 2, still VALID
	take(2)
	take(3)
	post(4, 5)
	expect("kernel took everything", 1) // wraps: 4 in the last entry, 5 in the first
	take(4)
	take(5)
	post(6, 7, 8, 9)
	expect("a post that fills the whole queue", 1) // the entry before 6 is 9's own
	if n, err := errOf(f.PostSend(sends(10))); n != 0 || !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("PostSend on a full queue = %d, %v; want 0, ENOMEM", n, err)
	}
	expect("nothing posted", 0)
	for id := uint64(6); id <= 9; id++ {
		take(id)
	}
	// A post refused before writing anything rings nothing; a partial one follows the rule for what it wrote.
	bad := sends(10, 11)
	bad[1].Opcode = verbs.WRSendWithImm
	if n, st := f.PostSend(bad); n != 1 || st != provider.OpcodeNotSupported {
		t.Fatalf("PostSend with a bad second request = %d, %v", n, st.Err())
	}
	expect("partial post on an idle queue", 1)
	if n, st := f.PostSend(bad[1:]); n != 0 || st != provider.OpcodeNotSupported {
		t.Fatalf("PostSend of a bad request = %d, %v", n, st.Err())
	}
	expect("nothing posted", 0)
	take(10)
	if _, ok := f.takeSQE(); ok {
		t.Fatal("the refused request reached the queue")
	}
}

// A failed doorbell is reported with the kernel's errno, the requests stay posted, and every later post rings
// until a doorbell succeeds (rdma-core would not ring again while the kernel still holds an earlier entry, and
// the kernel might never have been told).
func TestDoorbellFailureIsSticky(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	good := f.dbFD
	ro, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ro)
	f.dbFD = ro
	n, st := f.PostSend(sends(1, 2))
	if n != 2 || st.Code() != provider.Doorbell || st.Errno() != unix.EBADF {
		t.Fatalf("PostSend with a failing doorbell = %d, %v (%#x); want 2 posted and EBADF", n, st.Err(), uint32(st))
	}
	f.dbFD = good
	// Entry 1 is still VALID, so rdma-core's rule alone would stay silent: the owed doorbell rings.
	if n, err := errOf(f.PostSend(sends(3))); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if got := f.doorbells(t); got != 1 {
		t.Fatalf("%d doorbells after a failed one, want 1", got)
	}
	if n, err := errOf(f.PostSend(sends(4))); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if got := f.doorbells(t); got != 0 {
		t.Fatalf("%d doorbells once the owed one rang, want 0 (the kernel holds entry 3)", got)
	}
	if got := f.drainSQ(); got != 4 {
		t.Fatalf("kernel took %d requests, want 4", got)
	}
}

// Posting through many wrap-arounds with the kernel taking a varying number each round: every request arrives
// once, in order; the queue holds exactly its number of entries (all of them usable: ownership is per entry).
func TestPostSendWrapAround(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	var next, want uint64
	for round := 0; round < 500; round++ {
		burst := round%11 + 1
		n, err := errOf(f.PostSend(sends(seq(int(next), burst)...)))
		outstanding := int(next - want)
		if exp := min(burst, 8-outstanding); n != exp {
			t.Fatalf("round %d: posted %d of %d with %d outstanding, want %d", round, n, burst, outstanding, exp)
		}
		if n < burst && !errors.Is(err, unix.ENOMEM) || n == burst && err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		next += uint64(n)
		for i := 0; i < round%7+1; i++ {
			e, ok := f.takeSQE()
			if !ok {
				break
			}
			if e.Id != want || e.Sge[0].Length != uint32(want) {
				t.Fatalf("round %d: kernel took %d (length %d), want %d", round, e.Id, e.Sge[0].Length, want)
			}
			want++
		}
		f.doorbells(t)
	}
	if want < 1000 {
		t.Fatalf("only %d requests went through", want)
	}
}

// PostSendAll posts all or nothing: a refusal anywhere, or too little room for all, leaves the queue and the
// doorbell as they were.
func TestPostSendAll(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	bad := sends(1, 2, 3)
	bad[2].SGL = append(bad[2].SGL, verbs.SGE{Length: 1}) // 2 SGEs, max 1
	if i, st := f.PostSendAll(bad); i != 2 || st != provider.TooManySGE {
		t.Fatalf("PostSendAll = %d, %v; want 2, TooManySGE", i, st.Err())
	}
	if _, ok := f.takeSQE(); ok || f.doorbells(t) != 0 || f.sqPut != 0 {
		t.Fatal("a refused PostSendAll wrote into the queue or rang")
	}
	if i, st := f.PostSendAll(sends(1, 2, 3, 4, 5)); i != 4 || st != provider.QueueFull {
		t.Fatalf("PostSendAll of 5 into 4 entries = %d, %v", i, st.Err())
	}
	if i, err := errOf(f.PostSendAll(sends(1, 2, 3))); i != 3 || err != nil {
		t.Fatalf("PostSendAll = %d, %v", i, err)
	}
	if f.doorbells(t) != 1 {
		t.Fatal("PostSendAll on an idle queue did not ring once")
	}
	if i, st := f.PostSendAll(sends(4, 5)); i != 1 || st != provider.QueueFull {
		t.Fatalf("PostSendAll of 2 into 1 free entry = %d, %v", i, st.Err())
	}
	if i, err := errOf(f.PostSendAll(sends(4))); i != 1 || err != nil {
		t.Fatal(i, err)
	}
	if f.doorbells(t) != 0 {
		t.Fatal("PostSendAll behind VALID entries rang")
	}
	for id := uint64(1); id <= 4; id++ {
		if e, ok := f.takeSQE(); !ok || e.Id != id {
			t.Fatalf("kernel took %d, want %d", e.Id, id)
		}
	}
	if i, err := errOf(f.PostSendAll(nil)); i != 0 || err != nil {
		t.Fatal(i, err)
	}
}

// Posting is refused where the kernel would never run the requests (RESET, ERR), and left to the kernel
// elsewhere: siw moves a connected QP to RTS by itself, so INIT and RTR post and ring (and the real kernel
// answers the doorbell with ENOTCONN until the connection is made).
func TestPostState(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(testCap, false, false)
	f.withPipeDoorbell(t)
	recv := []verbs.RecvWR{{WRID: 1}}
	if s := verbs.QPState(f.state.Load()); s != verbs.QPStateInit {
		t.Fatalf("new QP in %v, want INIT (siw's IDLE)", s)
	}
	for _, tc := range []struct {
		state verbs.QPState
		ok    bool
	}{
		{verbs.QPStateInit, true}, {verbs.QPStateRTR, true}, {verbs.QPStateRTS, true}, {verbs.QPStateSQD, true},
		{verbs.QPStateReset, false}, {verbs.QPStateErr, false},
	} {
		f.StateChanged(tc.state)
		want := provider.OK
		if !tc.ok {
			want = provider.NotReady
		}
		if _, st := f.PostSend(sends(1)); st != want {
			t.Errorf("PostSend in %v: %v, want %v", tc.state, st.Err(), want.Err())
		}
		if _, st := f.PostSendAll(sends(1)); st != want {
			t.Errorf("PostSendAll in %v: %v, want %v", tc.state, st.Err(), want.Err())
		}
		if _, st := f.PostRecv(recv); st != want {
			t.Errorf("PostRecv in %v: %v, want %v", tc.state, st.Err(), want.Err())
		}
		f.drainSQ()
		takeRQE(t, f.rq, &f.rqGet)
		f.doorbells(t)
	}
	f.StateChanged(verbs.QPStateRTS)
	f.Destroyed()
	if _, st := f.PostSend(sends(1)); st != provider.Destroyed {
		t.Errorf("PostSend after Destroyed: %v", st.Err())
	}
	if _, st := f.PostSendAll(sends(1)); st != provider.Destroyed {
		t.Errorf("PostSendAll after Destroyed: %v", st.Err())
	}
	if _, st := f.PostRecv(recv); st != provider.Destroyed {
		t.Errorf("PostRecv after Destroyed: %v", st.Err())
	}
	if n, st := f.PostSend(nil); n != 0 || st != provider.OK {
		t.Errorf("empty PostSend: %d, %v", n, st.Err())
	}
}

// The valid flag is stored last: a "kernel" spinning on the queue takes each request as soon as its flags say
// VALID and finds every other field already written, on every request, while the poster reuses entries with
// different contents. (Go's atomics make the flags store a release and the kernel's load an acquire; the
// deterministic half of this is TestSendSQEEncoding, which checks encodeSend never touches the flags word.)
func TestValidFlagPublishedLast(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 6, MaxRecvSGE: 1})
	f.withNullDoorbell(t)
	const total = 20000
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for want := uint64(0); want < total; {
			p := f.sq.slot(f.sqGet)
			if unpackWQE(atomic.LoadUint32(flagsWord(p))).flags&abi.SIW_WQE_VALID == 0 {
				if stop.Load() {
					return
				}
				runtime.Gosched()
				continue
			}
			e, _ := f.takeSQE()
			w := unpackWQE(*flagsWord(unsafe.Pointer(&e)))
			n := int(want%6) + 1
			if e.Id != want || int(w.numSGE) != n || e.Rkey != uint32(want) || e.Raddr != want<<8 {
				t.Errorf("request %d: id %d num_sge %d rkey %d raddr %#x", want, e.Id, w.numSGE, e.Rkey, e.Raddr)
				return
			}
			for i := 0; i < n; i++ {
				if e.Sge[i].Laddr != want<<16|uint64(i) || e.Sge[i].Length != uint32(i) || e.Sge[i].Lkey != uint32(want) {
					t.Errorf("request %d: sge[%d] = %+v", want, i, e.Sge[i])
					return
				}
			}
			want++
		}
	}()
	var sgl [6]verbs.SGE
	for id := uint64(0); id < total; {
		n := int(id%6) + 1
		for i := 0; i < n; i++ {
			sgl[i] = verbs.SGE{Addr: id<<16 | uint64(i), Length: uint32(i), LKey: uint32(id)}
		}
		wr := []verbs.SendWR{{WRID: id, Opcode: verbs.WRRDMAWrite, SGL: sgl[:n], RKey: uint32(id), RemoteAddr: id << 8}}
		if posted, err := errOf(f.PostSend(wr)); posted == 1 {
			id++
		} else if !errors.Is(err, unix.ENOMEM) {
			t.Fatal(err)
		} else {
			runtime.Gosched()
		}
		if t.Failed() {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
}
