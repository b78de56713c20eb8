// Package uverbs is goverbs' verbs API: a pure-Go, cgo-free replacement for libibverbs. It talks to the
// kernel's /dev/infiniband/uverbsN interface itself (the RDMA_VERBS_IOCTL object/method/attribute ABI, with the
// legacy commands tunnelled through UVERBS_METHOD_INVOKE_WRITE, as rdma-core does on current kernels), and hands
// the driver-specific parts to the providers linked into it (rxe, mlx5).
//
// # Reading this documentation
//
// `go doc ./uverbs` lists each group of constants by its first name only (`const WCSuccess = verbs.WCSuccess
// ...`): `go doc -all ./uverbs` prints them all, `go doc ./uverbs WCSuccess` one group. The data-path types
// (SGE, SendWR, RecvWR, WC and their enums) are aliases of package verbs, and go doc does not follow an alias
// to its methods: read them with `go doc ./verbs WC.Err`.
//
// # Objects and lifetime
//
// Devices lists the devices (RDMA netlink, else sysfs); Open gives a Context, from which come PDs, completion
// channels and CQs; from a PD come MRs, MWs, QPs, SRQs and AHs. Every object has Close, which is idempotent and
// safe on nil. Close children before parents: the kernel refuses to destroy a PD, CQ or SRQ still in use (EBUSY),
// and Context.Close refuses while objects made from it are open. Closing the context's file (or the process
// exiting) makes the kernel destroy everything, which is the only thing a GC cleanup does here, as a safety net.
//
// Thread domains and parent domains (AllocTD, AllocParentDomain: td.go) are userspace objects: a parent domain
// is a PD standing for its protection domain that also carries a TD (objects used by one goroutine, posted
// without locks) and an Allocator for the provider's rings. mlx5 has them; rxe answers ErrNotSupported.
//
// Four optional verbs of libibverbs are provider capabilities as well (qpext.go): a QP's ECE options
// (QP.SetECE, applied by the next Modify, and QP.QueryECE), a QP's rate limit (QP.SetRateLimit), the device
// clock (Context.QueryRTValues) and the null MR (PD.AllocNullMR). mlx5 has them, as libmlx5; rxe and siw answer
// ErrNotSupported, as libibverbs answers for their rdma-core providers.
//
// Receive work queues and RSS indirection tables are too (wq.go): PD.CreateWQ, WQ.Modify, WQ.PostRecv,
// WQ.Close, Context.CreateRWQIndTable and RWQIndTable.Close. mlx5 has them, as libmlx5; rxe and siw answer
// ErrNotSupported. A WQ listed by a table cannot be closed before the table (EBUSY).
//
// Device memory is one as well (dm.go): Context.AllocDM, DM.CopyTo, DM.CopyFrom, PD.RegDMMR (zero-based MRs on
// it), Context.ImportDM (another context's DM by its handle) and DM.Close, which is EBUSY while an MR is
// registered on the DM (an imported DM it only forgets). mlx5 has it, as libmlx5 (MEMIC); rxe and siw answer
// ErrNotSupported. So is registering a dma-buf (dmabuf.go, PD.RegDmabufMR): mlx5 has it, as libmlx5; rxe and
// siw answer ErrNotSupported.
//
// Close may race with the object's other verbs, data path included (PostSend, PostRecv, Poll, ReqNotify,
// Modify, CompChannel.GetEvent): each either completes against the live object or fails with ErrClosed; none
// touches a released ring or a destroyed handle. Close waits for the verbs already running on the object (they
// are short: two atomic adds bracket each), then destroys it; a GetEvent waiting on a channel being closed
// returns ErrClosed. A Close the kernel refuses (EBUSY) leaves the object open, and verbs that raced with it
// failed with ErrClosed.
//
// # Errors
//
// Errors are *Error values naming the verb and the device; they unwrap to the kernel's errno, so
// errors.Is(err, unix.EINVAL) works. Everything the device or kernel does not support matches ErrNotSupported
// (the kernel's EOPNOTSUPP and EPROTONOSUPPORT), which is goverbs' one not-supported value and matches
// errors.ErrUnsupported too. Every verb on a closed object, data path included, matches ErrClosed. A create
// refused by the rdma cgroup controller is a *cgroup.LimitError (errors.Is(err, cgroup.ErrLimitReached) and
// errors.Is(err, unix.EAGAIN) both hold). A failed work request is not an error of PostSend or Poll but a
// completion whose WC.Err is its status (errors.Is(wc.Err(), WCRetryExcErr)).
//
// # Data-path errors
//
// PostSend, PostRecv, SRQ.PostRecv, WQ.PostRecv and Poll return preallocated errors (they never allocate), the same on every
// provider: "post send on rxe0: queue full: cannot allocate memory". The cause and its errno:
//
//	QP state does not allow posting          EINVAL   send before RTS, receive in RESET
//	queue full                               ENOMEM   n tells how many requests went in; poll, then post the rest
//	more SGEs than the queue's max_sge       EINVAL
//	SGE lengths add up to more than 2^32-1   EINVAL
//	inline data longer than max_inline_data  EINVAL
//	atomic: 8-byte aligned, at least 8 bytes EINVAL
//	BIND_MW: RC or UC, no SGEs, no imm       EINVAL
//	opcode not valid on this QP              EINVAL
//	opcode not supported by the provider     EOPNOTSUPP (ErrNotSupported; mlx5: memory windows, local invalidate;
//	                                                  FLUSH / ATOMIC WRITE on a device without the capability)
//	FLUSH: RC, no SGEs, type, level          EINVAL
//	ATOMIC WRITE: RC, no SGEs, 8-byte aligned EINVAL
//	UD send without an address handle        EINVAL
//	address handle not usable                EINVAL
//	QP has no receive queue (SRQ)            EINVAL
//	queue destroyed / object closed          ErrClosed
//	completion for an unknown queue (poll)   EIO
//	doorbell failed                          the system call's errno (rxe's POST_SEND write)
//
// # Data path
//
// QP.PostSend, QP.PostRecv, SRQ.PostRecv, WQ.PostRecv and CQ.Poll take caller-owned slices, allocate nothing and make one
// provider call per batch. Memory given to the device should come from AllocBuffer (anonymous mmap); Go memory
// registered with RegMR is kept reachable by the MR.
//
// libibverbs' extended data path has its counterparts: a QP created with QPInitAttr.SendOps builds chains of
// work requests in place with QP.StartWR (the ibv_wr_* calls: one method per operation and setter, Complete
// posts the chain whole or not at all), and a CQ made by Context.CreateCQEx is also read one completion at a
// time with StartPoll, NextPoll and EndPoll (ibv_start_poll …), the ibv_wc_read_* fields being the WC's. Both
// allocate nothing once made.
//
// # On-demand paging
//
// AccessOnDemand registers memory without pinning it: pages are faulted in when a transfer touches them, and
// the MR follows later changes of the mapping. DeviceAttr.ODP reports what the device takes on ODP MRs
// (ODPGeneralCap, ODPTransportCap per transport), and PD.AdviseMR prefetches ranges before the first transfer.
// rxe has ODP from Linux 6.15 and prefetch from 6.17; elsewhere both are ErrNotSupported (odp.go).
//
// # Events
//
// A completion channel has one way to wait, CompChannel.GetEvent, with the controls of an os.File: a context
// for the call, SetDeadline for the calls (no allocation per wait), Wake to end the current or next wait from
// another goroutine (ErrWoken), and Close, which ends every wait (ErrClosed). Where the waiter sleeps is fixed
// when the channel is made: on Go's runtime poller (the default: no blocked thread, for many channels or
// long idle waits), or in the kernel (CompChannelOptions.Wait: WaitEpoll, one epoll wait on the channel and
// an eventfd, then one read, which costs less per event, as rsocket's Read and Write wait; WaitRead, one
// read(2) where the wait has no deadline or context, as rdma-core's tools wait). docs/perf.md measures them. Context.AsyncEvent waits on Go's poller with a context.
package uverbs
