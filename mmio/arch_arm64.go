package mmio

// On arm64 the acquire of a WCLock does not order earlier normal stores before write-combining device stores, so
// rdma-core's mmio_wc_spinlock adds mmio_wc_start (DSB ST).
const wcLockNeedsStart = true
