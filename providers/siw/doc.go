// Package siw is the goverbs provider for soft-iWARP (the Linux siw driver, RDMA_DRIVER_SIW), the counterpart of
// rdma-core's providers/siw.
//
// Importing the package (package uverbs does) registers the provider with internal/provider; the verbs core
// then uses it for every device whose driver id is RDMA_DRIVER_SIW and whose ABI is SIW_ABI_VERSION (1).
//
// Status: written from rdma-core's siw provider and <rdma/siw-abi.h>, and tested against a fake of the kernel
// side (a memfd standing in for the mappings, a pipe for the doorbell). It is not yet proven against the
// kernel's siw; the lab test comes next. What to check there first is listed at the end.
//
// # What the provider does
//
// siw is a software device: the kernel runs iWARP over TCP, and userspace shares one array per queue with it.
// CREATE_CQ, CREATE_QP and CREATE_SRQ answer with the number of entries and a key (struct siw_uresp_create_*);
// the queue is mmap(2)ed from the uverbs command fd at that key, num_entries × sizeof(entry) bytes long: struct
// siw_cqe (32 bytes) for a CQ, followed by struct siw_cq_ctrl (its notify word); struct siw_sqe (120 bytes) for
// a send queue; struct siw_rqe (112 bytes) for a receive queue or SRQ. A key of SIW_INVAL_UOBJ_KEY fails the
// create, as in rdma-core.
//
// There are no shared indices. Each side keeps its position privately and each entry has an owner, told by
// the SIW_WQE_VALID bit of its flags: the producer writes an entry and then sets VALID; the consumer reads it
// and then clears the flags. So:
//
//   - PostSend writes struct siw_sqe entries and PostRecv (QP or SRQ) struct siw_rqe entries, each published by
//     one store of its flags word after every other field (see below); an entry still VALID means the queue is
//     full (QueueFull, ENOMEM, as rdma-core's "overflow"). Receives need no system call.
//   - Poll reads entries while VALID, oldest first, and clears each one's flags after reading it.
//   - Arm stores the notify flags in struct siw_cq_ctrl (SIW_NOTIFY_SOLICITED, or SOLICITED|NEXT_COMPLETION),
//     no system call; the kernel clears them when it raises the event.
//   - Sends need the kernel told, sometimes: the doorbell is a 32-byte write() of IB_USER_VERBS_CMD_POST_SEND
//     with no work requests (rdma-core's siw_db), rung by the rule below.
//
// # Memory ordering
//
// Go has no 8- or 16-bit atomics, and the flags are a __u16 (SQE, RQE) or __u8 (CQE): every entry's 32-bit word
// at offset 8 (flags, num_sge, opcode; or flags, opcode, status) is loaded and stored whole with sync/atomic,
// whose operations are sequentially consistent. Publishing an SQE or RQE is the release store of that word
// (flags with VALID, num_sge, opcode), made after every other field is written; the encoders never touch the
// word (a test checks). Seeing an entry free is an acquire load, so the kernel's reads of it are done before it
// is rewritten. Poll's acquire load of a VALID flag orders the kernel's writes of the entry before Poll reads
// it, and its release store of 0 orders Poll's reads before the kernel may reuse the entry. These are rdma-core's
// atomic_load / atomic_store on the flags.
//
// # The doorbell rule
//
// rdma-core's siw_post_send rings the doorbell only when the SQE just before the first one it wrote is no
// longer VALID: the kernel had taken every earlier request and may have found the queue empty and stopped.
// While that SQE is VALID the kernel has not reached it, and when it does it continues to the new ones by
// itself, so a busy queue costs no system calls. A post that refills the whole queue always rings. The rule
// needs a store-then-load order on this side (store the new SQE's flags, then load the previous one's: Go's
// sequentially consistent atomics give it) matched by the kernel clearing a finished SQE's flags with a full
// barrier before it looks at the next one. The provider rings under the send queue's lock, as rdma-core does.
// One addition: a failed doorbell is remembered, and every post rings until one succeeds, since the kernel may
// hold requests it was never told about.
//
// # What is implemented, and what is refused
//
// Following rdma-core's siw provider:
//
//   - send opcodes: RDMA WRITE, SEND, RDMA READ, SEND_WITH_INV (SIW_OP_WRITE, _SEND, _READ, _SEND_REMOTE_INV);
//     flags SIGNALED (and every request on a QP created with sq_sig_all), SOLICITED, FENCE (SIW_WQE_READ_FENCE),
//     INLINE;
//   - refused with OpcodeNotSupported (EOPNOTSUPP; rdma-core says EINVAL): RDMA WRITE and SEND with immediate
//     data (siw's user ABI carries none), the atomics (siw leaves them unsupported), LOCAL_INV and BIND_MW (no
//     user opcode for them), TSO, DRIVER1, FLUSH and ATOMIC WRITE; an undefined opcode is BadOpcode (EINVAL);
//   - at most min(max_send_sge, SIW_MAX_SGE = 6) SGEs (TooManySGE); inline data up to min(max_inline_data,
//     SIW_MAX_INLINE = 80) bytes, copied into sge[1..] and described by sge[0] (InlineTooLong beyond), from any
//     number of SGEs;
//   - receives with at most min(max_recv_sge, 6) SGEs, on the QP's receive queue or an SRQ; MODIFY_SRQ with no
//     driver data (the kernel arms the limit and refuses a resize);
//   - completions: rdma-core's opcode and status tables; the QP number from qp_id; no immediate data;
//   - no address handles (iWARP has no UD; CreateAH is EOPNOTSUPP without a command), no CQ resize
//     (EOPNOTSUPP), no extended-QP send operations (rdma-core's siw has no ibv_qp_ex ops, so such QPs are
//     refused by the core), no thread or parent domains. Context import is left to the kernel, which has no
//     query_ucontext (EOPNOTSUPP).
//   - REG_MR's driver data (struct siw_ureq_reg_mr in, struct siw_uresp_reg_mr out), which rdma-core always
//     sends, is offered through provider.MRDriverData, which uverbs sends with every registration.
//
// # Differences from rdma-core
//
//   - Posting is refused (NotReady, EINVAL) after the core moved the QP to RESET or ERR: in ERR the kernel
//     flushed the queues when the QP entered it and does not look at them again, so a request posted then would
//     never complete. A new QP counts as INIT (siw's IDLE, which it reports as INIT), and RTS is never
//     required, since siw moves a QP to RTS itself when rdma_cm establishes the connection: before that, the
//     doorbell answers ENOTCONN (DoorbellFailed) and the requests stay queued.
//   - SEND_WITH_INV puts the STag to invalidate (SendWR.Imm, libibverbs' invalidate_rkey) in the SQE's rkey,
//     where the kernel reads it; rdma-core puts wr.rdma.rkey there, which callers do not set for this opcode.
//   - SendInline is ignored on RDMA READ (there is nothing to copy: its SGE is the sink), and refused on
//     SEND_WITH_INV (OpcodeNotSupported): the kernel's siw carries inline data for SEND and WRITE only.
//   - An RDMA READ takes at most one SGE (TooManySGE): iWARP's read request names one sink buffer and the
//     kernel's siw uses sge[0] only. SGE lengths adding up to more than 2^32-1 are TooLong.
//   - Inline SQEs say num_sge 1 (0 without data) instead of the request's SGE count; unused fields of an SQE
//     (rkey, raddr, sge[0] of an empty request) are zeroed instead of keeping what the union held.
//   - A receive with no SGE is posted (a zero-length receive); rdma-core refuses it with EINVAL.
//   - A QP created with max_recv_wr 0 and no SRQ works (its receive queue is always full: QueueFull); rdma-core
//     fails to create it (it maps 0 bytes).
//   - Poll bounds the CQE's opcode and status (rdma-core indexes its tables with them unchecked): an entry
//     outside them is returned as a failed completion, WCGeneralErr, with VendorErr = opcode<<16 | status.
//     A CQE flagged SIW_WQE_REM_INVAL reports WCWithInv with the STag in Imm (rdma-core reports no flags). The
//     fields siw has no notion of are zeroed (rdma-core leaves the caller's values).
//   - An empty PostSend is a no-op.
//
// # Locks and allocation
//
// As in the rxe provider, one mutex per queue: the send queue's (held across the doorbell), the receive queue's
// or SRQ's, and the CQ's (Poll and Arm). The QP state is an atomic. The data path (PostSend, PostSendAll,
// PostRecv, Poll, Arm) never allocates (TestDataPathAllocations) and reports a provider.Status the core turns
// into its preallocated error.
//
// # To check against the kernel first
//
//   - The doorbell rule under load: that the kernel clears an SQE's VALID flag, with a barrier, before it looks
//     at the next entry; a send queue that stalls with VALID entries means it does not.
//   - The posting gates: that a QP made RTS by rdma_cm runs sends posted in INIT or RTR once a doorbell
//     succeeds; that the doorbell before RTS fails with ENOTCONN; that nothing posted after ERR completes.
//   - SEND_WITH_INV: that the invalidated STag is the SQE's rkey, and what the receiver's CQE carries.
//   - Inline: 80 bytes round trip on SEND and WRITE; that num_sge 1 is accepted.
//   - REG_MR with provider.MRDriverData's buffers (which uverbs sends), and the QP caps the kernel grants
//     (max_inline_data).
//   - Zero-length receives, a READ with no SGE, and a QP with no receive queue.
//   - Arming: an event after Arm(false) for the next completion, after Arm(true) only for a solicited one.
package siw
