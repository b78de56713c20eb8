// Package uverbs is goverbs' verbs API: a pure-Go, cgo-free replacement for libibverbs. It talks to the
// kernel's /dev/infiniband/uverbsN interface itself (the RDMA_VERBS_IOCTL object/method/attribute ABI, with the
// legacy commands tunnelled through UVERBS_METHOD_INVOKE_WRITE, as rdma-core does on current kernels), and hands
// the driver-specific parts to the providers linked into it (rxe, mlx5).
//
// # Objects and lifetime
//
// Devices lists the devices (RDMA netlink, else sysfs); Open gives a Context, from which come PDs, completion
// channels and CQs; from a PD come MRs, MWs, QPs, SRQs and AHs. Every object has Close, which is idempotent and
// safe on nil. Close children before parents: the kernel refuses to destroy a PD, CQ or SRQ still in use (EBUSY),
// and Context.Close refuses while objects made from it are open. Closing the context's file (or the process
// exiting) makes the kernel destroy everything, which is the only thing a GC cleanup does here, as a safety net.
//
// # Errors
//
// Errors are *Error values naming the verb and the device; they unwrap to the kernel's errno, so
// errors.Is(err, unix.EINVAL) works. Everything the device or kernel does not support matches ErrNotSupported
// (the kernel's EOPNOTSUPP and EPROTONOSUPPORT). A create refused by the rdma cgroup controller is a
// *cgroup.LimitError (errors.Is(err, cgroup.ErrLimitReached) and errors.Is(err, unix.EAGAIN) both hold).
//
// # Data path
//
// QP.PostSend, QP.PostRecv, SRQ.PostRecv and CQ.Poll take caller-owned slices, allocate nothing and make one
// provider call per batch. Memory given to the device should come from AllocBuffer (anonymous mmap); Go memory
// registered with RegMR is kept reachable by the MR.
//
// # Events
//
// CompChannel.GetEvent and Context.AsyncEvent wait on Go's runtime poller (no blocked threads) and take a
// context.Context for cancellation.
package uverbs
