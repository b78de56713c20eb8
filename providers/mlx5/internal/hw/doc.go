// Package hw holds the mlx5 (ConnectX) data-path building blocks behind package mlx5's provider: send, receive
// and shared receive queues, completion queues, UD address vectors, QP/SRQ sizing, UAR/BlueFlame doorbell
// registers, and the driver payloads ("udata") of the kernel commands that create them. It follows rdma-core's
// providers/mlx5 behaviour (v44 as installed on Debian bookworm, v58 for the BlueFlame capability flag). It is
// internal: users reach it only through package uverbs, which links the provider in.
//
// # Design
//
// Every queue is a self-contained value over memory the caller provides: the ring ([]byte, from mmap for a real
// device or from an emulator), the 8-byte doorbell record ([DoorbellRecord]), and for sends and CQ arming a UAR
// register window ([BFReg], [mmio.Reg]). QPN, CQN, sizes and the CQE version are given by the caller, so the same
// code runs against a kernel-created QP and against an emulated device. Nothing here issues a system call.
//
//   - [SendQueue.PostSend] builds WQEs (ctrl, remote address, atomic, data, inline with wrap-around, datagram)
//     for RC, UC and UD, then rings the doorbell exactly as rdma-core's post_send_db: barrier, doorbell record,
//     then either a BlueFlame copy of a single small WQE into the current half of the register (alternating halves,
//     under the register's lock when it is shared) or an 8-byte doorbell with the ctrl segment's first 8 bytes.
//   - [RecvQueue.PostRecv] and [SRQ.PostRecv] write scatter lists and publish them through the doorbell record only.
//   - [CQ.Poll] checks ownership of pre-stamped 64-byte CQEs, parses requester, responder and error CQEs into
//     work completions (immediate data, invalidated rkey, GRH, syndromes to statuses), retires unsignaled WQEs,
//     copies scatter-to-CQE payloads into the posted buffers, and publishes the consumer index. [CQ.Arm] writes the
//     arm word and rings the CQ doorbell with the arm sequence number; [CQ.BeginResize]/[CQ.CompleteResize] move
//     pending CQEs to a new buffer.
//   - [SizeQP] and [SizeSRQ] reproduce rdma-core's queue sizing; [DefaultAllocUcontextReq], [CreateCQReq],
//     [CreateQPReq], [CreateSRQReq], [ResizeCQReq] fill the abi driver structs; [CapsFromResp] reports
//     BlueFlame availability (MLX5DV_CONTEXT_FLAGS_BLUEFLAME: bf_reg_size != 0); [BuildUARAlloc]/[BuildUARDestroy]
//     build the commands for dynamic UAR objects (the provider runs them through the core), [MmapOffset] encodes mmap offsets, and [DynamicBfregs] locates
//     the send doorbell registers inside a mapped UAR page.
//
// Posting and polling return a provider.Status (the core's data-path error table), never an error value, and
// never allocate or box values in interfaces, whatever the outcome. Queues are not safe for concurrent use (as
// rdma-core with MLX5_SINGLE_THREADED): the caller serialises a QP's posts with the polling of its CQs. Only what
// unrelated queues share is locked internally: a shared BlueFlame register, and an SRQ (its free list is fed by
// every CQ its QPs complete into).
//
// # Performance
//
// The hot paths address their rings through base pointers and masked indexes (bounds established once, when a
// queue is created), classify opcodes with per-QP precomputed tables, write the ctrl segment as two single 8-byte
// big-endian stores, post a single work request without the batch loop, ring an unshared register with mmio's
// combined WCStart+store+FlushWrites routines, and decode a stream of successful send and receive completions of
// one QP inline in Poll. providers/mlx5/BENCH.md records the before/after CPU times and callgrind instruction
// counts and how they were measured.
//
// # Tests
//
// The byte formats are compared with vectors produced by a C program using rdma-core's mlx5dv.h
// (testdata/golden.txt, written by ../cmd/gengolden; TestGoldenUpToDate reruns it when gcc and mlx5dv.h are
// installed); the queues also run end to end against the emulated device in ../mlx5emu (emu_test.go). The
// package documentation of providers/mlx5 says what these tests prove and what only hardware can.
//
//go:generate go run ../cmd/gengolden -o testdata/golden.txt
package hw
