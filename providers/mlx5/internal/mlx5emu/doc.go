// Package mlx5emu is an emulated mlx5 (ConnectX) device for tests: it plays
// the part of the HCA and of the kernel's object setup over ordinary process
// memory, so that an mlx5 data path (WQE writers, doorbells, BlueFlame, CQ
// polling, arming) can be exercised without hardware.
//
// It was written from the published layouts (mlx5dv.h) and the documented
// hardware behaviour only, independently of this module's mlx5 provider, so
// that the two do not share a mistake.
//
// # Model
//
// A [Device] owns one or more 4096-byte UAR pages ([Device.UAR],
// [Device.UARPage]; Options.UARPages). The driver writes, exactly as to the
// real mmap'd UAR:
//   - send doorbells: the first 8 bytes of the last WQE's ctrl segment
//     (opmod_idx_opcode, qpn_ds), or BlueFlame copies of the whole WQE in
//     64-byte blocks, at BFOffset (0x800) + k*slot, where slot is
//     bf_reg_size/2 (the two alternating halves of each BlueFlame register)
//     or 0x100 without BlueFlame;
//   - CQ arm doorbells at CQDoorbellOffset (0x20): be32(sn<<28 | cmd | ci)
//     followed by be32(cqn), after writing the same be32 into the arm word
//     of the CQ doorbell record (a mismatch is recorded as an error).
//
// Objects are registered as the kernel would on create: RegisterMR (mkey,
// lkey == rkey, never 0x100), CreateCQ (ring of ncqe 64-byte CQEs stamped
// 0xF0, 8-byte doorbell record), CreateSRQ, CreateQP (RQ at offset 0 of the
// buffer, SQ after it; doorbell record with the RQ counter at 0 and the SQ
// counter at 4) and ModifyQP (RESET->INIT->RTR->RTS, any->RESET/ERROR).
// Protection domains are plain numbers chosen by the caller.
//
// The engine runs either synchronously ([Device.Process], deterministic) or
// in a background goroutine ([Device.Start]/[Device.Stop]). Each pass
//  1. consumes the UAR registers (a register is cleared after it is read; a
//     zero register means "nothing written"). A send doorbell must name a
//     posted WQE (its QPN and WQE index, with the same first 8 bytes as that
//     WQE's ctrl segment); anything written beyond those 8 bytes is a
//     BlueFlame copy and must equal the WQE's 64-byte blocks in the SQ
//     (wrapping at the SQ end), it must fit in buf_size, and the device
//     must have BlueFlame. Violations are recorded in [Device.Errors];
//  2. handles arm requests; a CQE already present at or after the armed
//     consumer index fires at once, otherwise the next CQE (solicited-only:
//     the next CQE with SE set or an error CQE) fires an event
//     ([Device.Events], [Device.EventReady]) and disarms the CQ;
//  3. executes, QP by QP in QPN order, the send WQEs between the QP's
//     consumer position and the SQ doorbell record counter (with
//     Options.RequireDoorbell: only those covered by a doorbell seen), as
//     loopback between QPs of the same device.
//
// Executed opcodes: NOP, SEND, SEND_IMM, SEND_INVAL, RDMA_WRITE,
// RDMA_WRITE_IMM, RDMA_READ, ATOMIC_CS, ATOMIC_FA (RC: all; UC: no READ or
// atomics; UD: SEND/SEND_IMM with the 48-byte extended address vector, the
// destination QP from dqp_dct, Q_Key checked with the controlled-Q_Key
// rule). Data segments are checked against the registered regions (key,
// PD, bounds, access); inline segments and any segment may wrap at the SQ
// end. Responders check rkey, PD, bounds, and both the region's and the
// QP's remote access rights. Receive WQEs come from the RQ (data segments
// up to the WQE size or the 0x100 end-marker lkey) or from an SRQ (a 16-byte
// mlx5_wqe_srq_next_seg, then data segments; the device starts at WQE 0 and
// follows next_wqe_index, consuming as many WQEs as the SRQ doorbell record
// counts). UD receives start with the 40-byte GRH area (written when the
// address vector has a GRH, left untouched otherwise, counted in byte_cnt
// either way). Atomics act on host-endian 64-bit words (the kernel sets
// the host-endianness atomic mode) and return the old value into the local
// segment.
//
// CQEs are 64-byte mlx5_cqe64 in big-endian: opcode and owner bit
// ((producer index / ncqe) & 1) in op_own, SE bit for solicited messages,
// wqe_counter (SQ WQE index; RQ counter; SRQ WQE index), byte_cnt,
// imm_inval_pkey, QPN and (requester) the WQE opcode in sop_drop_qpn,
// srqn_uidx (the QP's user index; SRQ number with CQE version 0),
// src QP, SL and GRH flag in flags_rqpn and slid for UD. With ScatterToCQE,
// received SENDs of up to 32 bytes are placed in CQE bytes 0-31 with
// MLX5_INLINE_SCATTER_32 in op_own. Requester CQEs are written for
// signaled (CQ_UPDATE) WQEs and for every error. The CQE's last four bytes
// (wqe_counter, signature, op_own) are stored last, as one 32-bit word.
//
// Errors follow the IB rules with mlx5 syndromes: a local gather/scatter
// fault is LOC_PROT_ERR, a receive buffer too small LOC_LEN_ERR (RC
// requester: REM_INV_REQ_ERR), a receive lkey fault at the responder
// LOC_PROT_ERR (RC requester: REM_OP_ERR), an rkey/access/bounds fault
// REM_ACCESS_ERR, a misaligned atomic REM_INV_REQ_ERR, an unsupported or
// malformed WQE LOC_QP_OP_ERR. An RC send finding no receive WQE is an RNR:
// the WQE stays at the head of the SQ and each Process pass is one retry,
// up to rnr_retry (7 = forever), then RNR_RETRY_EXC_ERR. An RC destination
// that does not exist, is not RTR/RTS, or is not connected back to the
// sender yields RETRY_EXC_ERR at once; UC and UD drop such messages (and
// UC drops messages failing rkey checks) and complete the sender
// successfully. A QP with an error completion moves to ERROR (RC responders
// too, for their own errors), and every outstanding or later posted WQE of
// a QP in ERROR completes with WR_FLUSH_ERR, one CQE per WQE, signaled or
// not. When a CQ would overflow (producer - set_ci == ncqe) it enters the
// overrun state ([Device.CQOverrun]) and drops that and every later CQE.
//
// # Use from a driver's tests
//
//	dev, _ := mlx5emu.New(mlx5emu.Options{BFRegSize: 512})
//	cqn, _ := dev.CreateCQ(cqBuf, cqDBR)             // what CREATE_CQ would register
//	qpn, _ := dev.CreateQP(mlx5emu.QPConfig{...})    // what CREATE_QP would register
//	dev.ModifyQP(qpn, mlx5emu.QPAttr{State: mlx5emu.StateInit, ...}) // ... RTR, RTS
//	lkey, rkey, _ := dev.RegisterMR(buf, access, pdn)
//	// the driver posts WQEs into QPConfig.Buf, updates the doorbell record
//	// and writes its doorbell / BlueFlame copy into dev.UAR()
//	dev.Process()                                    // the hardware runs
//	// the driver polls CQEs from cqBuf and updates set_ci
//	if errs := dev.Errors(); len(errs) != 0 { ... }  // protocol violations
//
// # Concurrency and the race detector
//
// All methods are safe for concurrent use. The engine reads doorbell
// records and UAR words with atomic loads and stores each CQE's last 32-bit
// word atomically; everything else (WQEs, CQE bodies, data buffers) is
// ordinary memory ordered by those. A driver whose doorbell-record stores
// and ownership-word loads are atomic (or done in assembly) is therefore
// race-detector clean against [Device.Start].
//
// # Limits (not modelled)
//
//   - Timing: no transport or RNR timers (a Process pass is one RNR retry;
//     transport retries fail at once), no packets, no MTU segmentation,
//     no ordering between QPs beyond QPN order within a pass. FENCE and
//     small-fence bits are accepted and trivially satisfied (execution is
//     in order and synchronous).
//   - QP states SQD and SQE: a UC/UD send-side error moves the QP to
//     ERROR (real devices use SQE and keep receiving).
//   - Doorbells overwritten on a register before a pass sees them are
//     lost: the doorbell record drives execution (unless RequireDoorbell),
//     so only the counters and the verification of the overwritten write
//     are affected. An 8-byte doorbell written over the remains of an
//     earlier BlueFlame copy to the same register is recognised as such
//     when the remains match some WQE of the device. A lost CQ arm
//     doorbell is recovered from a change of the CQ doorbell record's arm
//     word. In background mode a register may be read while being written;
//     such writes are counted in QPStats.UnverifiedUARWrites instead of
//     being reported as errors, so use Process for verification.
//   - 128-byte CQEs, CQE compression, requester scatter-to-CQE, resize CQ,
//     timestamps, checksums, vendor error syndromes other than those for
//     WR_FLUSH_ERR (0xf9), RETRY_EXC_ERR (0x81) and LOC_PROT_ERR (0x51)
//     (0), CQ error
//     async events (only the overrun flag), moving QPs to ERROR on CQ
//     overrun.
//   - XRC, DC, RAW_PACKET, UMR/memory windows/LOCAL_INV (SEND_INVAL
//     reports the rkey but invalidates nothing), masked atomics, TSO,
//     tag matching, signature, ODP, SRQ limit events and SRQ error
//     flushes, max_rd_atomic
//     limits, P_Keys, the MLX5_QP_SIGNATURE WQE signatures, the 32-byte
//     compact UD address vector, RoCE/IB addressing (paths are not
//     checked; LID and GID are plain options).
//   - The size checks the kernel does at create time are simplified to
//     what the emulator needs (power-of-two rings that fit the buffers).
package mlx5emu

// The C program below only prints mlx5dv.h layouts into test data for
// layout_test.go; it is not part of the build and needs rdma-core headers.
//go:generate sh -c "cc -o ${TMPDIR:-/tmp}/mlx5emu-genlayout testdata/genlayout.c && ${TMPDIR:-/tmp}/mlx5emu-genlayout > testdata/mlx5dv_layout.txt"
