// Package mlx5 registers the mlx5 (ConnectX) provider with the verbs core. Programs use it through package
// uverbs, which links it in; this package exports nothing else a program could call (besides ErrNotSupported, the
// module's one not-supported sentinel). Its building blocks live under internal/: internal/hw (WQE builder,
// queues, CQE parsing, UAR/BlueFlame doorbells, udata) and internal/mlx5emu (an emulated device for tests).
//
// The provider behaves as rdma-core's mlx5 provider does on a 6.1 kernel: GET_CONTEXT with dynamic UARs and CQE
// version 1 (retried without DEVX), one NC UAR object for CQ arm doorbells, BlueFlame UAR objects carved into
// dedicated registers for QPs (or the shared NC register when the kernel reports no BlueFlame), doorbell records
// at cache-line strides, private anonymous mmaps for rings, user indexes, scatter-to-CQE, posting gated on the QP
// state (receives from INIT, sends from RTS). A QP created on an SRQ gets no receive queue; its receive
// completions retire WQEs through the SRQ's wr_id table and free list, as rdma-core does. UAR objects are
// created and destroyed through the core's driver-object hook (provider.Device.Objects), so the core counts them
// and maps a cgroup refusal to its typed limit error.
//
// # Concurrency
//
// As in rdma-core, a CQ takes a lock per call (Poll, Arm, event, attach/detach of its QPs), and a QP one lock per
// queue (PostSend, PostRecv); the CQ that retires a queue's WQEs shares its tail with the posters through an
// atomic (internal/hw tail.go), and retires a WQE only after the last read of it (its wr_id, a scatter-to-CQE
// copy into its buffers). So any number of goroutines may post to one QP while others poll its CQs
// (TestConcurrentPostPoll, under the race detector with the emulated device running in the background). A
// transition to RESET and the destruction of a QP remove its completions still in its CQs (rdma-core
// __mlx5_cq_clean, with the CQs locked), returning the WQEs of its SRQ receives, so no later poll meets a CQE of
// a QP it no longer knows. Closing an object while other goroutines use it is safe: the core waits for their
// calls (TestCloseRacesDataPath).
//
// Thread domains and parent domains follow libmlx5 (domain.go): a thread domain holds a dedicated BlueFlame
// register (the NC register without BlueFlame) that the QPs of its parent domains share; those QPs post without
// their queue locks, the thread domain's promise being one thread at a time; their CQs keep the lock, as in
// libmlx5. A parent domain's allocator supplies the QP, SRQ and CQ rings; doorbell records stay the provider's.
// TD and parent-domain closes are EBUSY while in use (TestThreadDomainRegister, TestDomainsBusy,
// TestThreadDomainTraffic).
//
// The optional verbs follow libmlx5 too (qpext.go): ECE on a QP (the ECE version 1 trigger in QP_CREATE where
// the kernel has ECE; SetECE's options sent by the next modify as the extended MODIFY_QP's driver data, the
// answer kept for QueryECE), a QP's rate limit (the extended MODIFY_QP with the burst information; burst and
// packet sizes refused, since the provider does not read the device's burst capability), the device clock
// (the HCA core clock page mapped read-only at context creation, read without a system call) and the null MR
// (the kernel's dump-fill mkey). TestLibmlx5OptionalVerbs compares each with what libmlx5 sends and answers for
// the same calls in the libmlx5 harness (internal/cmd/libmlx5emu, extdump mode).
//
// Receive work queues and RSS indirection tables follow libmlx5 (wq.go): a WQ's ring sized as
// mlx5_calc_rwq_size, its WQ_CREATE driver request, the zeroed MODIFY_WQ driver request and the reset of the
// ring on RESET->RDY, its receive WQEs and doorbell record, and an indirection table without driver data.
// TestLibmlx5WQ compares them with libmlx5's in the harness (wqdump mode). Device memory follows libmlx5's
// MEMIC (dm.go): the MEMIC type and the start-offset and page-index outputs added to DM_ALLOC, the page mapped
// through the command fd at libmlx5's offset, 4-byte word copies with libmlx5's refusals, the MR rights it
// accepts; TestLibmlx5DM compares them in the harness (dmdump mode), and TestLibmlx5ImportDM the import of a
// DM by its handle (libmlx5's DM query, the same mapping; no command to unimport). A dma-buf MR is the core's
// REG_DMABUF_MR with no driver data, as libmlx5's (dmabuf.go; TestLibmlx5DmabufMR, same mode).
//
// # Errors
//
// Posting and polling return the core's data-path statuses (internal/provider's table, which package uverbs
// documents), so a condition gives the same errno as on rxe: a full queue ENOMEM; too many SGEs, inline data over
// max_inline_data, SGE lengths over 2^32-1, an unaligned or short atomic, a UD send without an AH or with another
// provider's AH, an opcode the QP type cannot carry, a post in the wrong QP state: EINVAL; an opcode this provider
// does not build: EOPNOTSUPP; a CQE naming no known queue: EIO. Nothing on these paths allocates (internal/hw's
// TestZeroAllocs and TestZeroAllocsOnErrors). Control-path errors name what failed in the provider (the core adds
// the verb and the device) and wrap an errno, the kernel's or the one rdma-core's provider returns, or
// ErrNotSupported (TestDriverErrorsWrapErrnos).
//
// # What the tests prove
//
//   - Byte formats: every WQE shape the builder emits (17 cases, including inline and data-segment wrap-around,
//     the 16-bit WQE index wrap, UD with IB and RoCE address vectors, batches), the receive and SRQ WQEs, every
//     CQE case the poller consumes (requester, responder, immediate, invalidate, GRH, scatter-to-CQE, all error
//     syndromes), the CQ arm doorbell and record, and the driver payloads are compared byte for byte with vectors
//     produced by a C program that uses rdma-core's mlx5dv.h helpers (mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg,
//     mlx5dv_set_dgram_seg) and structs and the kernel's mlx5-abi.h (internal/hw/testdata/golden.txt,
//     regenerated by `go generate ./providers/mlx5/internal/hw`; TestGoldenUpToDate reruns the generator when
//     gcc and mlx5dv.h are installed).
//   - Doorbell protocol: which ring uses BlueFlame and which the 8-byte doorbell, the copy of a WQE that wraps
//     the ring, the alternating register halves, the doorbell-record values, partial posts on error, the shared
//     register's lock under the race detector.
//   - Completion bookkeeping: ownership across many CQ wraps, unsignaled-WQE retirement, SRQ free-list recycling
//     with out-of-order completions, resize, CQE version 0 and 1 demultiplexing; every golden CQE is polled both
//     cold and with the CQ's last-QP cache primed, so Poll's inline paths give the same completions as parse;
//     interleaved QPs and a detached QP exercise that cache; a fuzz target feeds arbitrary CQEs to Poll.
//   - End to end against internal/mlx5emu, an emulated ConnectX written independently from the same
//     specification (internal/hw/emu_test.go): RC send with immediate, RDMA write/read, atomics, UD with an address vector,
//     SRQ, scatter-to-CQE, error and flush completions, CQ arming and events, with and without BlueFlame, the
//     emulator verifying every doorbell and BlueFlame copy; and with the emulator running concurrently in its own
//     goroutine under the race detector (TestEmuBackground), which checks that WQEs, doorbell records and CQEs
//     cross to and from the device only through the orderings the data path provides. (In race builds the
//     doorbell-record store is a sync/atomic store so the detector sees that edge; otherwise it is the plain
//     store rdma-core uses. The CQE ownership word is always read with an atomic 32-bit load.) Through the
//     provider contract (driver_test.go): contexts, CQs, QPs, SRQs and QPs on an SRQ created by the provider with
//     the emulator playing the kernel; UAR objects created and destroyed only through a fake of the core's
//     driver-object hook, which checks each command and counts what is live (TestDriverUARsThroughCore). In
//     internal/hw, an SRQ shared by two QPs whose CQs are polled by two goroutines under the race detector
//     (TestEmuSRQConcurrent).
//   - Data-path refusals: every status a post can return, with the errno rxe gives for the same condition, and
//     that only the requests before the refused one are rung (internal/hw TestPostSendErrors, TestRecvQueue).
//   - The mmio primitives' instructions are pinned by disassembly for amd64 and arm64, and their functional
//     tests run as arm64 code under qemu-user when it is installed (package mmio).
//
// # What only hardware (or a faithful emulator) can prove
//
//   - That a ConnectX device accepts these WQEs and doorbells and writes CQEs as modelled: the formats are
//     rdma-core's, but no ConnectX was available; internal/mlx5emu is an independent emulation written from the
//     same specification.
//   - Memory ordering against a real PCIe device: that the barriers (compiler barrier / DMB OSHST before the
//     doorbell record, SFENCE / DSB ST around write-combining stores, LFENCE / DMB OSHLD after the ownership
//     check) are sufficient on real write-combining UAR mappings, and that the BlueFlame copy's 64-byte bursts are
//     delivered intact. They mirror rdma-core's choices exactly; the instructions are pinned, their effect is not
//     observable without a device.
//   - Kernel behaviour of the create commands (static versus dynamic UARs, bfreg assignment, the write-combining
//     self test that zeroes bf_reg_size).
//   - The optional verbs on a device: that the kernel answers the ECE trigger and the ECE-carrying modify as
//     the harness's fake kernel does, accepts the rate limit, maps a clock page that ticks, and that the
//     dump-fill mkey drops what is written through it.
//   - WQs on a device: that the kernel accepts the WQ_CREATE driver request as the harness's fake kernel does,
//     that the device fills the ring and reports its receives under the WQ's user index (the CQE for a WQ is
//     written by hand in the tests, as the emulator has no WQs), and that an indirection table spreads
//     packets (no raw packet QP is made: goverbs' mlx5 has none).
//   - Device memory on a device: that the kernel answers DM_ALLOC as the harness does, that the mapped page is
//     the device's MEMIC, that 32-bit stores through the mapping reach it, and that a DM MR's lkey works; that
//     the kernel answers the DM query of an imported DM as the harness does.
//   - dma-buf MRs on a device: that the kernel registers a real dma-buf (the harness passes a number, not an
//     exported buffer) and that traffic through the MR reaches the exporter's memory.
//
// # Not implemented
//
// Static bfregs (kernels without dynamic UARs), memory windows and local invalidate (UMR WQEs), XRC, raw
// packet/TSO (and so the RSS QP an indirection table is made for), striding-RQ WQs and WQE signatures on WQs,
// mlx5dv's SW ICM device memory, DC, tag matching, signature and compressed CQEs, 128-byte CQEs, the SRQ ODP
// wait queue, and the MLX5_QP_SIGNATURE WQE signatures. Such requests fail with an error matching ErrNotSupported (and EOPNOTSUPP). A
// send work request this provider does not build (IBV_WR_BIND_MW, IBV_WR_LOCAL_INV, TSO, atomics on a QP without
// them) fails at post time with the OpcodeNotSupported row of the data-path table (EOPNOTSUPP, "opcode not
// supported by the provider"); nothing of it is written, and the requests before it are posted and rung. UMR WQEs
// are left out deliberately: mlx5dv.h declares the UMR segment structs but not how rdma-core fills them for a
// bind or an invalidate (that is internal to its qp.c), so their bytes could not be pinned by golden vectors
// generated from mlx5dv.h. Unknown CQE opcodes complete with IBV_WC_GENERAL_ERR.
package mlx5
