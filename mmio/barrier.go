package mmio

// ToDeviceBarrier orders this CPU's earlier stores to normal (write-back) memory before its later stores to
// normal memory as seen by a DMA device: WQEs before the doorbell record, the doorbell record before the MMIO
// doorbell. rdma-core: udma_to_device_barrier. amd64: compiler barrier only; arm64: DMB OSHST.
func ToDeviceBarrier()

// FromDeviceBarrier orders an earlier load (a CQE ownership check) before later loads of memory the device
// wrote (the rest of the CQE). rdma-core: udma_from_device_barrier. amd64: LFENCE; arm64: DMB OSHLD.
func FromDeviceBarrier()

// FlushWrites makes earlier write-combining MMIO stores (BlueFlame, doorbells) leave this CPU before any later
// store. rdma-core: mmio_flush_writes. amd64: SFENCE; arm64: DSB ST.
func FlushWrites()

// WCStart must precede a sequence of write-combining MMIO stores so that earlier normal-memory stores (the
// doorbell record) are visible first. rdma-core: mmio_wc_start, which is mmio_flush_writes on both architectures.
func WCStart()

// write64 stores v at p with a single aligned 8-byte store instruction.
//
//go:noescape
func write64(p *uint64, v uint64)

// copy64 copies 64 bytes from src to dst in ascending address order (amd64: eight 8-byte loads/stores;
// arm64: one 4-register VLD1 and one 4-register VST1, as rdma-core's vld4q/vst4q pair).
//
//go:noescape
func copy64(dst, src *uint64)

// wcWrite64 is WCStart, write64(p, v), FlushWrites in one call.
//
//go:noescape
func wcWrite64(p *uint64, v uint64)

// wcCopy64 is WCStart, copy64(dst, src), FlushWrites in one call.
//
//go:noescape
func wcCopy64(dst, src *uint64)
