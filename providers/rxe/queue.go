package rxe

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// maxLog2ElemSize bounds log2_elem_size from a ring header: the kernel's largest elements (send WQEs with the
// maximum inline data) are a few KiB, far below this.
const maxLog2ElemSize = 20

// queue is one rxe shared ring (struct rxe_queue_buf) mapped from the kernel.
//
// The geometry (element size and index mask) is read from the header once, when the ring is mapped, checked
// against the mapping's size and kept here, so a header changed later (the mapping is writable by this process)
// can never make an access leave the mapping. Every index read from the shared header is masked before use.
//
// A queue has no lock of its own: the owner (CQ, send queue, receive queue) serializes the side it drives.
type queue struct {
	mem      []byte         // the whole mapping; nil when unmapped
	data     unsafe.Pointer // first element, at abi.SizeofRxeQueueBuf
	prod     *uint32        // producer_index in the header
	cons     *uint32        // consumer_index in the header
	mask     uint32         // index_mask: number of slots - 1
	log2Elem uint32         // log2 of the element stride
}

// newQueue checks the ring header at the start of mem (a mapping of a kernel ring) and returns a queue over it.
// minElem is the size of the entries the caller reads or writes: the kernel's element stride must hold them.
func newQueue(mem []byte, minElem int) (queue, error) {
	if len(mem) < abi.SizeofRxeQueueBuf {
		return queue{}, fmt.Errorf("ring of %d bytes is shorter than its %d-byte header", len(mem), abi.SizeofRxeQueueBuf)
	}
	hdr := (*abi.RxeQueueBuf)(unsafe.Pointer(&mem[0]))
	log2 := hdr.Log2ElemSize
	mask := hdr.IndexMask
	if log2 > maxLog2ElemSize {
		return queue{}, fmt.Errorf("ring header: log2_elem_size %d out of range", log2)
	}
	if 1<<log2 < minElem {
		return queue{}, fmt.Errorf("ring header: element size %d is smaller than the %d-byte entries", 1<<log2, minElem)
	}
	if mask == 0 || mask&(mask+1) != 0 {
		return queue{}, fmt.Errorf("ring header: index_mask %#x is not 2^k-1 with k >= 1", mask)
	}
	slots := uint64(mask) + 1
	if need := uint64(abi.SizeofRxeQueueBuf) + slots<<log2; need > uint64(len(mem)) {
		return queue{}, fmt.Errorf("ring header: %d slots of %d bytes need %d bytes, the mapping has %d",
			slots, 1<<log2, need, len(mem))
	}
	return queue{
		mem:      mem,
		data:     unsafe.Pointer(&mem[abi.SizeofRxeQueueBuf]),
		prod:     &hdr.ProducerIndex,
		cons:     &hdr.ConsumerIndex,
		mask:     mask,
		log2Elem: log2,
	}, nil
}

// mapped reports whether the queue has a ring.
func (q *queue) mapped() bool { return q.mem != nil }

// elemSize is the element stride in bytes.
func (q *queue) elemSize() int { return 1 << q.log2Elem }

// capacity is the number of entries the ring holds at once (one slot always stays unused).
func (q *queue) capacity() int { return int(q.mask) }

// elem returns the address of slot i (masked).
func (q *queue) elem(i uint32) unsafe.Pointer {
	return unsafe.Add(q.data, uintptr(i&q.mask)<<q.log2Elem)
}

// Producer side (send, receive and shared receive queues: userspace produces, the kernel consumes).

// producer returns this side's producer index. Only the producer writes it, so no ordering is needed.
func (q *queue) producer() uint32 { return atomic.LoadUint32(q.prod) & q.mask }

// full reports whether no slot is free after producer index prod. The acquire load of the consumer index orders
// the kernel's reads of the slot before the slot is reused.
func (q *queue) full(prod uint32) bool {
	return atomic.LoadUint32(q.cons)&q.mask == (prod+1)&q.mask
}

// publish makes the entry in slot prod visible: release store of prod+1.
func (q *queue) publish(prod uint32) uint32 {
	next := (prod + 1) & q.mask
	atomic.StoreUint32(q.prod, next)
	return next
}

// next is the slot after prod, without publishing anything.
func (q *queue) next(prod uint32) uint32 { return (prod + 1) & q.mask }

// setProducer publishes every entry before slot prod: release store of prod.
func (q *queue) setProducer(prod uint32) { atomic.StoreUint32(q.prod, prod) }

// Consumer side (completion queues: the kernel produces, userspace consumes).

// consumer returns this side's consumer index.
func (q *queue) consumer() uint32 { return atomic.LoadUint32(q.cons) & q.mask }

// produced returns the kernel's producer index with acquire ordering: entries before it are fully written.
func (q *queue) produced() uint32 { return atomic.LoadUint32(q.prod) & q.mask }

// release hands slot cons back to the kernel: release store of cons+1, after the entry has been read.
func (q *queue) release(cons uint32) uint32 {
	next := (cons + 1) & q.mask
	atomic.StoreUint32(q.cons, next)
	return next
}

// mapQueue maps a kernel ring described by mi from the uverbs command fd (each mminfo can be mapped once) and
// checks its header.
func mapQueue(fd int, mi abi.Mminfo, minElem int) (queue, error) {
	if mi.Size < abi.SizeofRxeQueueBuf || mi.Offset > 1<<62 {
		return queue{}, fmt.Errorf("kernel ring description offset %#x size %d is invalid", mi.Offset, mi.Size)
	}
	mem, err := unix.Mmap(fd, int64(mi.Offset), int(mi.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return queue{}, fmt.Errorf("mmap ring (offset %#x, %d bytes): %w", mi.Offset, mi.Size, err)
	}
	q, err := newQueue(mem, minElem)
	if err != nil {
		unix.Munmap(mem)
		return queue{}, err
	}
	return q, nil
}

// unmap releases the ring's mapping and leaves q unmapped.
func (q *queue) unmap() error {
	if q.mem == nil {
		return nil
	}
	err := unix.Munmap(q.mem)
	*q = queue{}
	return err
}
