package mmio

// On x86 the locked CMPXCHG that takes a WCLock already serialises earlier stores ("serialization within the spin
// lock is enough", rdma-core mmio_wc_spinlock).
const wcLockNeedsStart = false
