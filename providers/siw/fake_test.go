package siw

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/internal/provider/doorbell"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// fakeKernel stands in for the siw kernel driver in unit tests. Its "command fd" is a memfd: each queue is a
// page-aligned region of it whose offset is the key the create response returns, so the provider maps it
// with the same mmap(fd, key) call it uses on a real device, and the test maps the same pages again to play
// the kernel's side (siw_sqe_get / siw_rqe_get / siw_cqe_complete: look at the entry's flags, copy it, clear
// them; or write an entry, then set its VALID flag).
type fakeKernel struct {
	t    testing.TB
	fd   int
	next int64
}

const fakeName = "siw-fake-uverbs"

func newFakeKernel(t testing.TB) *fakeKernel {
	t.Helper()
	fd, err := unix.MemfdCreate(fakeName, unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd_create: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &fakeKernel{t: t, fd: fd, next: int64(os.Getpagesize())} // keys start one page in
}

// region sets up a queue of num entries of elem bytes plus extra bytes, as siw_mmap_entry_insert does, and
// returns its key and the kernel's view of it.
func (k *fakeKernel) region(num uint32, elem, extra int) (uint64, ring) {
	k.t.Helper()
	size := int(num)*elem + extra
	page := int64(os.Getpagesize())
	off := k.next
	k.next += (int64(size) + page - 1) / page * page
	if err := unix.Ftruncate(k.fd, k.next); err != nil {
		k.t.Fatalf("ftruncate: %v", err)
	}
	mem, err := unix.Mmap(k.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		k.t.Fatalf("mmap kernel view: %v", err)
	}
	k.t.Cleanup(func() { unix.Munmap(mem) })
	return uint64(off), newRing(mem, num, elem)
}

// respond is a core command that checks there is no driver request and answers with resp as the driver
// response and res as the kernel's result.
func respond[Req, Res, T any](resp *T, res Res) provider.Create[Req, Res] {
	return func(_ Req, in, out []byte) (Res, error) {
		if len(in) != 0 {
			return res, fmt.Errorf("unexpected driver request of %d bytes", len(in))
		}
		want := rawcmd.Bytes(resp)
		if len(out) != len(want) {
			return res, fmt.Errorf("driver response buffer is %d bytes, want %d", len(out), len(want))
		}
		copy(out, want)
		return res, nil
	}
}

// fail is a core command the kernel refuses with err.
func fail[Req, Res any](err error) provider.Create[Req, Res] {
	return func(Req, []byte, []byte) (Res, error) {
		var zero Res
		return zero, err
	}
}

func (k *fakeKernel) context() *context {
	return newContext(&provider.Device{Name: "siw-test", FD: k.fd, DriverID: abi.RDMA_DRIVER_SIW, ABI: 1, PageSize: os.Getpagesize()})
}

// fakeCQ is a CQ and the kernel's view of it.
type fakeCQ struct {
	*cq
	k   ring
	put uint32 // the kernel's cq_put
}

func (k *fakeKernel) newCQ(num uint32) *fakeCQ {
	k.t.Helper()
	key, kr := k.region(num, abi.SizeofSiwCqe, abi.SizeofSiwCqCtrl)
	*(*uint32)(kr.end()) = 0xdead // whatever was there: creation disarms
	c, _, err := k.context().CreateCQ(provider.CQParams{CQE: int(num)},
		respond[provider.CQParams](&abi.SiwUrespCreateCq{CqId: 3, NumCqe: num, CqKey: key}, provider.CQResult{CQE: int(num), Handle: 0x77}))
	if err != nil {
		k.t.Fatalf("CreateCQ: %v", err)
	}
	// Unmap the provider's view at the end of the test, as the core's Close would: a fuzz iteration is a test,
	// and leaked mappings add up.
	k.t.Cleanup(c.(*cq).Destroyed)
	return &fakeCQ{cq: c.(*cq), k: kr}
}

// produce writes a completion as siw_cqe_complete does: only into a free entry (flags 0), all fields first,
// then the flags (VALID, and e.Flags' other bits). false when the entry is still the user's (CQ overflow).
func (f *fakeCQ) produce(e abi.SiwCqe) bool {
	p := f.k.slot(f.put)
	fw := flagsWord(p)
	if unpackCQE(atomic.LoadUint32(fw)).flags != 0 {
		return false
	}
	c := (*abi.SiwCqe)(p)
	c.Id, c.Bytes, c.ImmData, c.BaseQp = e.Id, e.Bytes, e.ImmData, e.BaseQp
	atomic.StoreUint32(fw, cqeWord{flags: e.Flags | abi.SIW_WQE_VALID, opcode: e.Opcode, status: e.Status}.pack())
	f.put = f.k.next(f.put)
	return true
}

// notify is the CQ's notify flags as the kernel reads them.
func (f *fakeCQ) notify() uint32 { return atomic.LoadUint32((*uint32)(f.k.end())) }

// fakeQP is a QP, the kernel's views of its queues, and the read end of its doorbell.
type fakeQP struct {
	*qp
	sq, rq       ring
	sqGet, rqGet uint32 // the kernel's positions
	bell         int    // read end of the doorbell pipe, or -1
	granted      verbs.QPCap
}

var testCap = verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 6, MaxRecvSGE: 6, MaxInlineData: 80}

func (k *fakeKernel) newQP(c verbs.QPCap, hasSRQ, sigAll bool) *fakeQP {
	k.t.Helper()
	f := &fakeQP{bell: -1, granted: c}
	resp := abi.SiwUrespCreateQp{QpId: 0x11, NumSqe: c.MaxSendWR, NumRqe: c.MaxRecvWR}
	resp.SqKey, f.sq = k.region(c.MaxSendWR, abi.SizeofSiwSqe, 0)
	if hasSRQ {
		resp.NumRqe = 0
	} else if c.MaxRecvWR > 0 {
		resp.RqKey, f.rq = k.region(c.MaxRecvWR, abi.SizeofSiwRqe, 0)
	}
	p := provider.QPParams{Type: verbs.QPTypeRC, Cap: c, HasSRQ: hasSRQ, SigAll: sigAll}
	q, _, err := k.context().CreateQP(p, respond[provider.QPParams](&resp, provider.QPResult{Cap: c, Handle: 0x1234, QPN: 0x11}))
	if err != nil {
		k.t.Fatalf("CreateQP: %v", err)
	}
	f.qp = q.(*qp)
	k.t.Cleanup(f.qp.Destroyed)
	return f
}

// rtsQP is a QP in RTS whose doorbell goes into a pipe the test reads.
func (k *fakeKernel) rtsQP(c verbs.QPCap) *fakeQP {
	k.t.Helper()
	f := k.newQP(c, false, false)
	f.withPipeDoorbell(k.t)
	f.StateChanged(verbs.QPStateRTS)
	return f
}

// withPipeDoorbell makes the QP ring its doorbell into a non-blocking pipe the test reads (doorbells).
func (f *fakeQP) withPipeDoorbell(t testing.TB) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	f.bell, f.dbFD = p[0], p[1]
}

// withNullDoorbell makes the QP ring its doorbell into /dev/null (benchmarks, allocation and long runs).
func (f *fakeQP) withNullDoorbell(t testing.TB) {
	n, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	f.dbFD = int(n.Fd())
}

// doorbells reads every doorbell written since the last call, checks each is the QP's POST_SEND command with
// no work requests, and returns how many there were.
func (f *fakeQP) doorbells(t testing.TB) int {
	t.Helper()
	var buf [64 * doorbell.Len]byte
	n, err := unix.Read(f.bell, buf[:])
	if err == unix.EAGAIN {
		return 0
	}
	if err != nil {
		t.Fatalf("read doorbell pipe: %v", err)
	}
	if n%doorbell.Len != 0 {
		t.Fatalf("doorbell pipe holds %d bytes, not a multiple of %d", n, doorbell.Len)
	}
	want := f.db.Bytes()
	for i := 0; i < n; i += doorbell.Len {
		if !bytes.Equal(buf[i:i+doorbell.Len], want) {
			t.Fatalf("doorbell bytes %x, want %x", buf[i:i+doorbell.Len], want)
		}
	}
	return n / doorbell.Len
}

// takeSQE plays the kernel taking the SQE at its position: false if it is not VALID; else a copy of it, and
// its flags cleared (the kernel's smp_store_mb(sqe->flags, 0), which leaves num_sge and opcode).
func (f *fakeQP) takeSQE() (abi.SiwSqe, bool) {
	p := f.sq.slot(f.sqGet)
	fw := flagsWord(p)
	w := unpackWQE(atomic.LoadUint32(fw))
	if w.flags&abi.SIW_WQE_VALID == 0 {
		return abi.SiwSqe{}, false
	}
	e := *(*abi.SiwSqe)(p)
	w.flags = 0
	atomic.StoreUint32(fw, w.pack())
	f.sqGet = f.sq.next(f.sqGet)
	return e, true
}

// takeRQE plays the kernel taking a receive from q at *get (siw_rqe_get: flags must equal VALID).
func takeRQE(t testing.TB, q ring, get *uint32) (abi.SiwRqe, bool) {
	p := q.slot(*get)
	fw := flagsWord(p)
	w := unpackWQE(atomic.LoadUint32(fw))
	if w.flags&abi.SIW_WQE_VALID == 0 {
		return abi.SiwRqe{}, false
	}
	if w.flags != abi.SIW_WQE_VALID {
		t.Fatalf("RQE flags %#x, want exactly SIW_WQE_VALID", w.flags)
	}
	e := *(*abi.SiwRqe)(p)
	w.flags = 0
	atomic.StoreUint32(fw, w.pack())
	*get = q.next(*get)
	return e, true
}

// drainSQ takes every posted SQE.
func (f *fakeQP) drainSQ() int {
	n := 0
	for {
		if _, ok := f.takeSQE(); !ok {
			return n
		}
		n++
	}
}

// errOf turns a data-path status into an error for the assertions (nil for OK, else the errno).
func errOf(n int, st provider.Status) (int, error) { return n, st.Err() }

// pollN drops Poll's status where a test only counts completions.
func pollN(n int, _ provider.Status) int { return n }

func unsafeBytes(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

// userBuffer is memory an SGE may name by address, as a registered buffer is: mapped outside the Go heap, so
// it neither moves nor is collected while only its address refers to it.
func userBuffer(t testing.TB, data string, n int) ([]byte, uint64) {
	t.Helper()
	b, err := unix.Mmap(-1, 0, max(n, 1), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	copy(b, data)
	return b[:n], uint64(uintptr(unsafe.Pointer(&b[0])))
}

// fakeMappings counts this process's mappings of fake-kernel memfds.
func fakeMappings(t testing.TB) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), fakeName)
}
