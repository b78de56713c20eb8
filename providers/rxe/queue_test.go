package rxe

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// anonRing is plain anonymous memory laid out as a kernel ring header says (no kernel, no fd).
func anonRing(t testing.TB, size int, log2, mask uint32) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	binary.NativeEndian.PutUint32(mem[0:], log2)
	binary.NativeEndian.PutUint32(mem[4:], mask)
	return mem
}

func TestNewQueueHeader(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		log2    uint32
		mask    uint32
		minElem int
		ok      bool
	}{
		{"exact fit", 384 + 8*64, 6, 7, 48, true},
		{"larger mapping", 4096, 6, 7, 48, true},
		{"one slot short", 384 + 7*64, 6, 7, 48, false},
		{"mask not 2^k-1", 4096, 6, 6, 48, false},
		{"mask zero", 4096, 6, 0, 48, false},
		{"element smaller than entry", 4096, 5, 7, 48, false},
		{"huge element", 4096, 40, 1, 48, false},
		{"huge mask", 4096, 6, 0xffffffff, 48, false},
		{"header only", 384, 6, 1, 48, false},
		{"shorter than header", 100, 6, 1, 48, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := anonRing(t, max(tc.size, 8), tc.log2, tc.mask)[:tc.size]
			q, err := newQueue(mem, tc.minElem)
			if tc.ok != (err == nil) {
				t.Fatalf("newQueue: err = %v, want ok %v", err, tc.ok)
			}
			if err == nil && (q.capacity() != int(tc.mask) || q.elemSize() != 1<<tc.log2) {
				t.Errorf("capacity %d elem %d, want %d and %d", q.capacity(), q.elemSize(), tc.mask, 1<<tc.log2)
			}
		})
	}
}

// The header is read once: a later change to the shared header cannot move accesses outside the mapping,
// and indices are masked wherever they are read.
func TestQueueGeometryFixedAndIndicesMasked(t *testing.T) {
	mem := anonRing(t, 384+4*64, 6, 3)
	q, err := newQueue(mem, 48)
	if err != nil {
		t.Fatal(err)
	}
	hdr := (*abi.RxeQueueBuf)(unsafe.Pointer(&mem[0]))
	hdr.IndexMask = 0xffff
	hdr.Log2ElemSize = 12
	hdr.ProducerIndex = 0xfffffff6 // masked: 2
	hdr.ConsumerIndex = 0x11       // masked: 1
	if q.produced() != 2 || q.consumer() != 1 || q.producer() != 2 {
		t.Errorf("indices not masked: prod %d cons %d", q.produced(), q.consumer())
	}
	end := uintptr(unsafe.Pointer(&mem[len(mem)-1]))
	for i := uint32(0); i < 100; i++ {
		if p := uintptr(q.elem(i)) + 63; p > end {
			t.Fatalf("slot %d ends at %#x beyond the mapping's end %#x", i, p, end)
		}
	}
}

// Produce and consume through many wrap-arounds: FIFO order, full at capacity (one slot unused), empty when
// caught up.
func TestQueueWrapAround(t *testing.T) {
	const slots = 8
	mem := anonRing(t, 384+slots*64, 6, slots-1)
	q, err := newQueue(mem, 8)
	if err != nil {
		t.Fatal(err)
	}
	var next, want uint64 // next value to produce, next value expected
	for round := 0; round < 1000; round++ {
		burst := round%slots + 1 // 1..8, so sometimes more than fits
		for i := 0; i < burst; i++ {
			prod := q.producer()
			if q.full(prod) {
				if got := int(next - want); got != slots-1 {
					t.Fatalf("round %d: full with %d entries, want %d", round, got, slots-1)
				}
				break
			}
			*(*uint64)(q.elem(prod)) = next
			next++
			q.publish(prod)
		}
		for i := 0; i < burst; i++ {
			cons := q.consumer()
			if cons == q.produced() {
				if next != want {
					t.Fatalf("round %d: empty with %d entries outstanding", round, next-want)
				}
				break
			}
			if got := *(*uint64)(q.elem(cons)); got != want {
				t.Fatalf("round %d: got entry %d, want %d", round, got, want)
			}
			want++
			q.release(cons)
		}
	}
	if next < 1000 {
		t.Fatalf("only %d entries went through", next)
	}
}

func TestMapQueueRejectsBadInfo(t *testing.T) {
	k := newFakeKernel(t)
	if _, err := mapQueue(k.fd, abi.Mminfo{Offset: 0, Size: 10}, 48); err == nil {
		t.Error("mapQueue accepted a ring smaller than its header")
	}
	// A header of zeros (a ring the kernel never laid out) is refused and unmapped.
	mi, _ := k.ring(4, 48)
	if _, err := unix.Pwrite(k.fd, make([]byte, 8), int64(mi.Offset)); err != nil {
		t.Fatal(err)
	}
	if _, err := mapQueue(k.fd, mi, 48); err == nil {
		t.Error("mapQueue accepted a ring with an all-zero header")
	}
}

// FuzzNewQueue feeds arbitrary ring headers and mapping sizes: newQueue either refuses them or yields a
// geometry whose every slot lies inside the mapping.
func FuzzNewQueue(f *testing.F) {
	f.Add(uint32(6), uint32(7), uint16(384+8*64), uint8(48))
	f.Add(uint32(0), uint32(0), uint16(0), uint8(0))
	f.Add(uint32(31), uint32(1), uint16(4096), uint8(1))
	f.Add(uint32(8), uint32(15), uint16(384+16*256), uint8(208))
	f.Fuzz(func(t *testing.T, log2, mask uint32, size uint16, minElem uint8) {
		mem := anonRing(t, 8192, log2, mask)[:int(size)%8193]
		q, err := newQueue(mem, int(minElem))
		if err != nil {
			return
		}
		if q.elemSize() < int(minElem) {
			t.Fatalf("element %d smaller than %d", q.elemSize(), minElem)
		}
		last := uintptr(q.elem(q.mask)) + uintptr(q.elemSize())
		if end := uintptr(unsafe.Pointer(&mem[0])) + uintptr(len(mem)); last > end {
			t.Fatalf("last slot ends at %#x, mapping at %#x", last, end)
		}
	})
}
