// Package rxe is the goverbs provider for Soft-RoCE (the Linux rdma_rxe driver, RDMA_DRIVER_RXE).
//
// Importing the package (usually for its side effect) registers the provider with internal/provider; the verbs
// core (package uverbs) then uses it for every device whose driver id is RDMA_DRIVER_RXE.
//
// # What the provider does
//
// rxe is a software device: the kernel runs the transport, and userspace shares one ring per queue with it.
// Each ring is a struct rxe_queue_buf the kernel describes in its CREATE_CQ / CREATE_QP / CREATE_SRQ / RESIZE_CQ /
// MODIFY_SRQ driver response (a struct mminfo: mmap offset and size on the uverbs command fd):
//
//   - a 384-byte header (log2_elem_size, index_mask, then the producer and consumer indices on their own cache
//     lines), followed by index_mask+1 slots of 1<<log2_elem_size bytes;
//   - indices are stored masked; the ring is empty when producer == consumer and full when
//     consumer == (producer+1) & index_mask, so one slot is always unused;
//   - the side that owns an index publishes it with a release store after writing (or before reusing) the slot,
//     and the other side reads it with an acquire load (sync/atomic here).
//
// Send and receive queues are produced by userspace: PostRecv writes struct rxe_recv_wqe entries and needs no
// system call (the kernel looks at the ring when packets arrive); PostSend writes struct rxe_send_wqe entries and
// then rings the doorbell, a 32-byte write() of IB_USER_VERBS_CMD_POST_SEND with no work requests that makes the
// kernel run the QP's requester. Completion queues are produced by the kernel: Poll copies the 48-byte
// struct ib_uverbs_wc entries out. Arm sends the legacy REQ_NOTIFY_CQ command through the INVOKE_WRITE tunnel.
//
// The data path (PostSend, PostRecv, Poll, Arm) takes one lock per call per queue, is safe for concurrent use,
// and does not allocate. It reports a provider status the verbs core turns into its preallocated error (package
// uverbs, "Data-path errors"), with rdma-core's errnos; a full queue is ENOMEM with the count of requests that
// did go in, so a poster reaps completions and posts the rest:
//
//	for len(wrs) > 0 {
//		n, err := qp.PostSend(wrs)
//		wrs = wrs[n:]
//		if errors.Is(err, unix.ENOMEM) {
//			cq.Poll(wc) // frees send-queue slots
//			continue
//		}
//		if err != nil {
//			return err
//		}
//	}
//
// # Differences from rdma-core
//
// The provider follows rdma-core's rxe provider (v44) in validation and error numbers, with these deliberate
// differences:
//
//   - PostSend refuses a QP that has not reached RTS before writing anything into the ring (rdma-core writes
//     the WQEs and then reports the kernel's EINVAL from the doorbell, leaving them queued);
//   - an unknown send opcode, and SGE lengths adding up to more than 2^32-1 (rdma-core's sum wraps), are
//     refused with EINVAL instead of being handed to the kernel;
//   - the immediate-data field of a WQE is only written for opcodes that carry immediate data or an rkey to
//     invalidate;
//   - an empty PostSend is a no-op (no doorbell) rather than EINVAL;
//   - Poll translates wc_flags from the kernel's ib_wc_flags numbering, which rxe writes into the ring, to
//     IBV_WC_* (rdma-core copies the raw value, so a C program sees IBV_WC_IP_CSUM_OK where a receive
//     invalidated an rkey; goverbs reports WCWithInv);
//   - address handles without a kernel AH number (kernels older than the ah_num interface) are refused at
//     creation with EOPNOTSUPP instead of building a userspace address vector.
package rxe
