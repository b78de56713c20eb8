package rxe

import (
	"fmt"
	"math/bits"
	"os"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// fakeKernel stands in for the rxe kernel driver in unit tests. Its "command fd" is a memfd: rings are carved
// out of it at page-aligned offsets and described by mminfo exactly as rxe_queue_init/rxe_create_mmap_info do,
// so the provider maps them with the same mmap(fd, offset) call it uses on a real device, and the test maps the
// same pages again to play the kernel's side of each ring.
type fakeKernel struct {
	t    testing.TB
	fd   int
	next int64
}

func newFakeKernel(t testing.TB) *fakeKernel {
	t.Helper()
	fd, err := unix.MemfdCreate("rxe-fake-uverbs", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd_create: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &fakeKernel{t: t, fd: fd, next: int64(os.Getpagesize())} // offsets start one page in, as rxe's do
}

func roundUpPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// ring creates a kernel ring for numElem entries of elemSize bytes: slots = roundup_pow2(numElem+1), stride =
// roundup_pow2(elemSize) but at least a cache line. It returns the mminfo for the provider and the kernel's view.
func (k *fakeKernel) ring(numElem, elemSize int) (abi.Mminfo, queue) {
	k.t.Helper()
	slots := roundUpPow2(numElem + 1)
	stride := max(roundUpPow2(elemSize), 64)
	size := abi.SizeofRxeQueueBuf + slots*stride
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
	hdr := (*abi.RxeQueueBuf)(unsafe.Pointer(&mem[0]))
	hdr.Log2ElemSize = uint32(bits.TrailingZeros(uint(stride)))
	hdr.IndexMask = uint32(slots - 1)
	q, err := newQueue(mem, elemSize)
	if err != nil {
		k.t.Fatalf("kernel view: %v", err)
	}
	return abi.Mminfo{Offset: uint64(off), Size: uint32(size)}, q
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
	return newContext(&provider.Device{Name: "rxe-test", FD: k.fd, DriverID: abi.RDMA_DRIVER_RXE, ABI: 2, PageSize: os.Getpagesize()})
}

// fakeCQ is a CQ and the kernel's view of its ring.
type fakeCQ struct {
	*cq
	k queue
}

func (k *fakeKernel) newCQ(cqe int) fakeCQ {
	k.t.Helper()
	mi, kq := k.ring(cqe, abi.SizeofIbUverbsWc)
	p := provider.CQParams{CQE: cqe}
	c, _, err := k.context().CreateCQ(p, respond[provider.CQParams](&abi.RxeCreateCqResp{Mi: mi},
		provider.CQResult{CQE: kq.capacity(), Handle: 0x77}))
	if err != nil {
		k.t.Fatalf("CreateCQ: %v", err)
	}
	// Unmap the provider's view at the end of the test, as the core's Close would: a fuzz iteration is a test,
	// and ~65000 leaked mappings end in ENOMEM (make fuzz met it).
	k.t.Cleanup(c.(*cq).Destroyed)
	return fakeCQ{cq: c.(*cq), k: kq}
}

// produce writes a completion into the kernel's side of the ring as rxe_cq_post does; false when full.
func (f fakeCQ) produce(wc abi.IbUverbsWc) bool {
	prod := f.k.produced()
	if f.k.consumer() == (prod+1)&f.k.mask {
		return false
	}
	*(*abi.IbUverbsWc)(f.k.elem(prod)) = wc
	f.k.publish(prod)
	return true
}

// fakeQP is a QP, the kernel's views of its rings, and the read end of its doorbell.
type fakeQP struct {
	*qp
	sq, rq queue
	cap    verbs.QPCap
	bell   *os.File
}

// sendWQESize is the kernel's send element payload for the requested caps (rxe_init_sq).
func sendWQESize(c verbs.QPCap) int {
	return max(int(c.MaxSendSGE)*abi.SizeofRxeSge, int(c.MaxInlineData))
}

func (k *fakeKernel) newQP(typ verbs.QPType, c verbs.QPCap, hasSRQ bool) *fakeQP {
	k.t.Helper()
	f := &fakeQP{}
	var resp abi.RxeCreateQpResp
	wqe := sendWQESize(c)
	resp.SqMi, f.sq = k.ring(int(c.MaxSendWR), abi.SizeofRxeSendWqe+wqe)
	granted := c
	granted.MaxSendSGE = uint32(wqe / abi.SizeofRxeSge)
	granted.MaxInlineData = uint32(wqe)
	if !hasSRQ {
		resp.RqMi, f.rq = k.ring(int(c.MaxRecvWR), abi.SizeofRxeRecvWqe+int(c.MaxRecvSGE)*abi.SizeofRxeSge)
	}
	p := provider.QPParams{Type: typ, Cap: c, HasSRQ: hasSRQ}
	q, _, err := k.context().CreateQP(p, respond[provider.QPParams](&resp,
		provider.QPResult{Cap: granted, Handle: 0x1234, QPN: 0x11}))
	if err != nil {
		k.t.Fatalf("CreateQP: %v", err)
	}
	f.qp = q.(*qp)
	f.cap = granted
	return f
}

// rtsQP is an RC QP in RTS (without an SRQ) that rings its doorbell into /dev/null: a send queue to post on.
func (k *fakeKernel) rtsQP(c verbs.QPCap) *fakeQP {
	k.t.Helper()
	f := k.newQP(verbs.QPTypeRC, c, false)
	f.withNullDoorbell(k.t)
	f.StateChanged(verbs.QPStateRTS)
	return f
}

// withPipeDoorbell makes the QP ring its doorbell into a pipe the test reads.
func (f *fakeQP) withPipeDoorbell(t testing.TB) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	f.bell = r
	f.dbFD = int(w.Fd())
}

// withNullDoorbell makes the QP ring its doorbell into /dev/null (for benchmarks and long runs).
func (f *fakeQP) withNullDoorbell(t testing.TB) {
	n, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	f.dbFD = int(n.Fd())
}

// consumeSend takes the oldest send WQE off the kernel's side, with its payload area; ok false when empty.
func consume(q queue) (unsafe.Pointer, bool) {
	cons := q.consumer()
	if cons == q.produced() {
		return nil, false
	}
	p := q.elem(cons)
	return p, true
}

// retire advances the kernel's consumer index past the oldest entry.
func retire(q queue) { q.release(q.consumer()) }

// pending is the number of entries between the consumer and the producer.
func pending(q queue) int { return int((q.produced() - q.consumer()) & q.mask) }

func unsafeBytes(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

// errOf turns a data-path status into an error for the assertions (nil for OK, else the errno).
func errOf(n int, st provider.Status) (int, error) { return n, st.Err() }

// polled drops Poll's status where a test only counts completions.
func pollN(n int, _ provider.Status) int { return n }

// userBuffer is memory an SGE may name by address, as a registered buffer is: mapped outside the Go heap, so
// it neither moves nor is collected while only its address (a number) refers to it. A Go slice there would be
// wrong twice: it may live on the goroutine's stack, which moves when the stack grows (checkptr: "found bad
// pointer in Go heap" under -race), and the collector may free it.
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
