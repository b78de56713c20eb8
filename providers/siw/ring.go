package siw

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// maxRingEntries bounds the entry counts the kernel returns (num_cqe, num_sqe, num_rqe). siw's own limits are
// far lower (32Ki work requests per queue, 100 times that per CQ); the bound only keeps a corrupt response from
// asking for an absurd mapping.
const maxRingEntries = 1 << 24

// ring is one siw queue mapped from the uverbs command fd: num entries of size bytes, at the key (mmap offset)
// the create response returned. Unlike rxe's rings it has no shared indices: each side keeps its own position
// privately (rdma-core's sq_put / rq_put / cq_get, the kernel's sq_get / rq_get / cq_put), and an entry belongs
// to the side its VALID flag says: set by the producer after it wrote the entry, cleared by the consumer after
// it read it. So nothing read from the shared memory ever becomes an index or a length here.
//
// A ring has no lock of its own: its owner (CQ, send queue, receive queue) serializes the side it drives.
type ring struct {
	mem  []byte         // the whole mapping; nil when unmapped
	base unsafe.Pointer // entry 0
	num  uint32         // number of entries
	size uintptr        // entry size
}

// mapRing maps num entries of elem bytes plus extra bytes after them (the CQ's notify word) at key. The length
// is what rdma-core maps (num * sizeof(entry) [+ sizeof(struct siw_cq_ctrl)]); the kernel rounds it up to
// pages, as it did when it set the mapping up.
func mapRing(fd int, key uint64, num uint32, elem, extra int) (ring, error) {
	if key == abi.SIW_INVAL_UOBJ_KEY {
		return ring{}, fmt.Errorf("the kernel could not prepare the mapping (key SIW_INVAL_UOBJ_KEY)")
	}
	if num == 0 || num > maxRingEntries {
		return ring{}, fmt.Errorf("%d entries is out of range (1..%d)", num, maxRingEntries)
	}
	if key > 1<<62 {
		return ring{}, fmt.Errorf("mmap key %#x is out of range", key)
	}
	length := int(num)*elem + extra
	mem, err := unix.Mmap(fd, int64(key), length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return ring{}, fmt.Errorf("mmap %d entries (key %#x, %d bytes): %w", num, key, length, err)
	}
	return newRing(mem, num, elem), nil
}

// newRing is a ring over mem (at least num*elem bytes).
func newRing(mem []byte, num uint32, elem int) ring {
	return ring{mem: mem, base: unsafe.Pointer(&mem[0]), num: num, size: uintptr(elem)}
}

// mapped reports whether the ring has its mapping.
func (r *ring) mapped() bool { return r.mem != nil }

// slot is the address of entry i (i < r.num: callers keep their positions in range with next).
func (r *ring) slot(i uint32) unsafe.Pointer { return unsafe.Add(r.base, uintptr(i)*r.size) }

// next is the position after i.
func (r *ring) next(i uint32) uint32 {
	if i+1 == r.num {
		return 0
	}
	return i + 1
}

// prev is the position before i.
func (r *ring) prev(i uint32) uint32 {
	if i == 0 {
		return r.num - 1
	}
	return i - 1
}

// end is the address just past the entries (the CQ's struct siw_cq_ctrl).
func (r *ring) end() unsafe.Pointer { return unsafe.Add(r.base, uintptr(r.num)*r.size) }

// unmap releases the mapping and leaves r unmapped.
func (r *ring) unmap() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	*r = ring{}
	return err
}

// The flags word. Every siw queue element has a 32-bit word at offset 8 that holds its flags: in struct
// siw_sqe and struct siw_rqe the __u16 flags, then __u8 num_sge and __u8 opcode; in struct siw_cqe the __u8
// flags, __u8 opcode and __u16 status. Go has no 8- or 16-bit atomics, so the word is loaded and stored whole
// with sync/atomic (sequentially consistent: a release store and an acquire load, and a store followed by a
// load is not reordered, which the doorbell rule needs). Storing the whole word is harmless: the other fields
// in it belong to whoever owns the entry, which is the side storing.
const flagsOff = 8

var (
	_ [unsafe.Offsetof(abi.SiwSqe{}.Flags) - flagsOff]struct{}
	_ [flagsOff - unsafe.Offsetof(abi.SiwSqe{}.Flags)]struct{}
	_ [unsafe.Offsetof(abi.SiwSqe{}.Opcode) - (flagsOff + 3)]struct{}
	_ [flagsOff + 3 - unsafe.Offsetof(abi.SiwSqe{}.Opcode)]struct{}
	_ [unsafe.Offsetof(abi.SiwRqe{}.Flags) - flagsOff]struct{}
	_ [flagsOff - unsafe.Offsetof(abi.SiwRqe{}.Flags)]struct{}
	_ [unsafe.Offsetof(abi.SiwRqe{}.Opcode) - (flagsOff + 3)]struct{}
	_ [flagsOff + 3 - unsafe.Offsetof(abi.SiwRqe{}.Opcode)]struct{}
	_ [unsafe.Offsetof(abi.SiwCqe{}.Flags) - flagsOff]struct{}
	_ [flagsOff - unsafe.Offsetof(abi.SiwCqe{}.Flags)]struct{}
	_ [unsafe.Offsetof(abi.SiwCqe{}.Status) - (flagsOff + 2)]struct{}
	_ [flagsOff + 2 - unsafe.Offsetof(abi.SiwCqe{}.Status)]struct{}
)

// flagsWord is the flags word of the element at p.
func flagsWord(p unsafe.Pointer) *uint32 { return (*uint32)(unsafe.Add(p, flagsOff)) }

// wqeWord is the work queue element's flags word {flags, num_sge, opcode}, laid out as the C fields are on
// this machine (so it is right on either byte order).
type wqeWord struct {
	flags  uint16
	numSGE uint8
	opcode uint8
}

func (w wqeWord) pack() uint32 { return *(*uint32)(unsafe.Pointer(&w)) }

func unpackWQE(v uint32) wqeWord { return *(*wqeWord)(unsafe.Pointer(&v)) }

// cqeWord is the completion's flags word {flags, opcode, status}.
type cqeWord struct {
	flags  uint8
	opcode uint8
	status uint16
}

func unpackCQE(v uint32) cqeWord { return *(*cqeWord)(unsafe.Pointer(&v)) }

func (w cqeWord) pack() uint32 { return *(*uint32)(unsafe.Pointer(&w)) }

// wqeOwnedByKernel reports whether the work queue element at p is posted and not yet taken by the kernel: an
// acquire load, so that once it reports false the kernel's reads of the element are done and it may be
// rewritten.
func wqeOwnedByKernel(p unsafe.Pointer) bool {
	return unpackWQE(atomic.LoadUint32(flagsWord(p))).flags&abi.SIW_WQE_VALID != 0
}

// publishWQE hands the element at p, whose other fields are written, to the kernel: one release store of its
// flags word (with SIW_WQE_VALID), which must be the last store to the element.
func publishWQE(p unsafe.Pointer, w wqeWord) { atomic.StoreUint32(flagsWord(p), w.pack()) }
