package conformance

import (
	"encoding/binary"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
	"github.com/goverbs/goverbs/verbs"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pyverbs: test_qpex.QpExTestCase — each operation on a QP created with that operation alone in its SendOps (as
// pyverbs' QpEx* resources are), posted through the work-request builder (player.post builds every request),
// with TestTraffic's and TestAtomic's checks of the data and the completions.
func TestQPExTraffic(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    playerOpts
		op   uverbs.WROpcode
		kind string // "send", "rdma", "atomic"
	}{
		{"UD/send", playerOpts{qpType: uverbs.QPTypeUD, sendOps: uverbs.SendOpSend}, uverbs.WRSend, "send"},
		{"UD/zero_size", playerOpts{qpType: uverbs.QPTypeUD, zero: true, sendOps: uverbs.SendOpSend}, uverbs.WRSend, "send"},
		{"UD/send_imm", playerOpts{qpType: uverbs.QPTypeUD, sendOps: uverbs.SendOpSendWithImm}, uverbs.WRSendWithImm, "send"},
		{"RC/send", playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpSend}, uverbs.WRSend, "send"},
		{"RC/send_imm", playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpSendWithImm}, uverbs.WRSendWithImm, "send"},
		{"RC/rdma_write", playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpRDMAWrite}, uverbs.WRRDMAWrite, "rdma"},
		{"RC/rdma_write_imm", playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpRDMAWriteWithImm}, uverbs.WRRDMAWriteWithImm, "send"},
		{"RC/rdma_write_zero_size", playerOpts{qpType: uverbs.QPTypeRC, zero: true, sendOps: uverbs.SendOpRDMAWrite}, uverbs.WRRDMAWrite, "rdma"},
		{"RC/rdma_read", playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpRDMARead}, uverbs.WRRDMARead, "rdma"},
		{"RC/rdma_read_zero_size", playerOpts{qpType: uverbs.QPTypeRC, zero: true, sendOps: uverbs.SendOpRDMARead}, uverbs.WRRDMARead, "rdma"},
		{"RC/atomic_cmp_swp", playerOpts{qpType: uverbs.QPTypeRC, msgSize: 8, sendOps: uverbs.SendOpAtomicCmpAndSwp}, uverbs.WRAtomicCmpAndSwp, "atomic"},
		{"RC/atomic_fetch_add", playerOpts{qpType: uverbs.QPTypeRC, msgSize: 8, sendOps: uverbs.SendOpAtomicFetchAndAdd}, uverbs.WRAtomicFetchAndAdd, "atomic"},
		{"UC/send", playerOpts{qpType: uverbs.QPTypeUC, sendOps: uverbs.SendOpSend}, uverbs.WRSend, "send"},
		{"UC/rdma_write", playerOpts{qpType: uverbs.QPTypeUC, sendOps: uverbs.SendOpRDMAWrite}, uverbs.WRRDMAWrite, "rdma"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.kind == "atomic" {
				e.requireAtomics()
			}
			client, server := e.pair(tc.o)
			switch tc.kind {
			case "send":
				traffic(t, client, server, tc.op)
			case "rdma":
				rdmaTraffic(t, client, server, tc.op)
			default:
				atomicTraffic(t, client, server, tc.op)
			}
		})
	}
}

// A chain of three requests posted with one Complete, as the closing example of ibv_wr_post(3): two RDMA WRITEs
// (unsignaled) and a SEND with immediate data that tells the peer they are there. The peer sees the SEND after
// both writes' bytes; the requester sees one completion, the SEND's.
func TestQPExChain(t *testing.T) {
	e := newEnv(t)
	ops := uverbs.SendOpRDMAWrite | uverbs.SendOpSendWithImm
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, msgSize: 256, sendOps: ops})
	src := client.buf.Bytes()[client.sendOff() : client.sendOff()+256]
	dst := server.buf.Bytes()[server.recvOff() : server.recvOff()+256]
	fill(src, 7)
	clear(dst)
	server.postRecv(0x5e)
	raddr, rkey := server.mr.Addr()+uint64(server.recvOff()), server.mr.RKey()
	b := client.qp.StartWR()
	b.RDMAWrite(1, 0, rkey, raddr).SetSGE(client.mr.LKey(), client.mr.Addr(), 128)
	b.RDMAWrite(2, 0, rkey, raddr+128).SetSGE(client.mr.LKey(), client.mr.Addr()+128, 128)
	b.SendImm(3, uverbs.SendSignaled, 0x1234)
	require.Equal(t, 3, b.Len())
	require.NoError(t, b.Complete())
	swc := pollOne(t, client.cq)
	rwc := pollOne(t, server.cq)
	requireSuccess(t, swc, rwc)
	require.Equal(t, uint64(3), swc.WRID)
	require.Equal(t, uverbs.WCSend, swc.Opcode)
	require.Equal(t, uint64(0x5e), rwc.WRID)
	require.Equal(t, uint32(0x1234), rwc.Imm)
	require.Zero(t, rwc.ByteLen)
	checkFill(t, dst, 7)
	n, err := client.cq.Poll(make([]uverbs.WC, 4))
	require.NoError(t, err)
	require.Zero(t, n, "unsignaled writes completed visibly")
}

// pyverbs: test_qpex.QpExTestCase.test_qp_ex_rc_bind_mw — the server binds a type 2 window without remote
// write through the builder; the client's RDMA WRITE through the window's new rkey fails with REM_ACCESS_ERR.
func TestQPExBindMW(t *testing.T) {
	e := newEnv(t)
	o := playerOpts{qpType: uverbs.QPTypeRC, mrAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessMWBind,
		sendOps: uverbs.SendOpRDMAWrite | uverbs.SendOpBindMW}
	client, server := e.pair(o)
	mw, err := server.pd.AllocMW(uverbs.MWType2)
	skipIfUnsupported(t, err, "memory window")
	require.NoError(t, err)
	cleanup(t, mw)
	newKey := verbs.IncRKey(mw.RKey())
	err = server.qp.StartWR().BindMW(0x123, uverbs.SendSignaled, mw, newKey,
		uverbs.MWBindInfo{MR: server.mr, Addr: server.mr.Addr(), Length: uint64(server.mr.Len()), Access: uverbs.AccessLocalWrite}).Complete()
	if e.ctx.DriverID() != uverbs.DriverRXE {
		skipIfUnsupported(t, err, "bind MW in the builder")
	}
	require.NoError(t, err)
	wc := pollOne(t, server.cq)
	requireSuccess(t, wc)
	require.Equal(t, uverbs.WCBindMW, wc.Opcode)
	mw.SetRKey(newKey)
	requireStatus(t, uverbs.WCRemAccessErr, rdmaWriteOnce(t, client, newKey, server.mr.Addr(), client.o.msgSize))
}

// pyverbs: test_qpex.QpExTestCase.test_qp_ex_rc_atomic_write, test_qp_ex_rc_flush, test_qp_ex_rc_flush_type_violate
// — in libibverbs ATOMIC WRITE and FLUSH exist only as builder operations. Where the device has them, an ATOMIC
// WRITE stores its 8 bytes, a FLUSH of an MR registered for global flushes succeeds at range and MR level (the
// responder's QP grants the placement too: rxe checks it as it checks remote write), and a FLUSH of an MR
// registered without flush access is REM_ACCESS_ERR (the violation case); where the device lacks them (rxe
// before 6.2), Complete refuses them with ErrNotSupported and posts nothing.
func TestQPExAtomicWriteFlush(t *testing.T) {
	e := newEnv(t)
	caps := e.dev.DeviceCapFlags
	ops := uverbs.SendOpAtomicWrite | uverbs.SendOpFlush
	if caps&uverbs.DeviceCapAtomicWrite == 0 || caps&uverbs.DeviceCapFlushGlobal == 0 {
		client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, msgSize: 8, sendOps: ops})
		err := client.qp.StartWR().AtomicWrite(1, uverbs.SendSignaled, server.mr.RKey(), server.mr.Addr(), 1).Complete()
		if err == nil && e.ctx.DriverID() != uverbs.DriverRXE {
			t.Skipf("device caps %v lack ATOMIC WRITE, yet the device took one", caps)
		}
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "ATOMIC WRITE without the capability")
		err = client.qp.StartWR().Flush(2, uverbs.SendSignaled, server.mr.RKey(), server.mr.Addr(), 8, uverbs.FlushGlobal, uverbs.FlushRange).Complete()
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "FLUSH without the capability")
		n, err := client.cq.Poll(make([]uverbs.WC, 2))
		require.NoError(t, err)
		require.Zero(t, n, "a refused chain completed")
		return
	}
	access := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessFlushGlobal
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, msgSize: 8, mrAccess: access, qpAccess: access, sendOps: ops})
	target := server.buf.Bytes()[server.recvOff() : server.recvOff()+8]
	raddr := server.mr.Addr() + uint64(server.recvOff())
	for i := 0; i < iters; i++ {
		clear(target)
		v := 0x0102030405060708 + uint64(i)
		require.NoError(t, client.qp.StartWR().AtomicWrite(uint64(i), uverbs.SendSignaled, server.mr.RKey(), raddr, v).Complete())
		requireSuccess(t, pollOne(t, client.cq))
		require.Equal(t, v, binary.NativeEndian.Uint64(target), "ATOMIC WRITE %d", i)
	}
	for _, level := range []uverbs.FlushLevel{uverbs.FlushRange, uverbs.FlushMR} {
		require.NoError(t, client.qp.StartWR().Flush(0xf1, uverbs.SendSignaled, server.mr.RKey(), raddr, 8, uverbs.FlushGlobal, level).Complete())
		requireSuccess(t, pollOne(t, client.cq))
	}
	plain := e.buffer(4096)
	mr, err := server.pd.RegMR(plain.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	require.NoError(t, err)
	cleanup(t, mr)
	require.NoError(t, client.qp.StartWR().Flush(0xf2, uverbs.SendSignaled, mr.RKey(), mr.Addr(), 8, uverbs.FlushGlobal, uverbs.FlushRange).Complete())
	requireStatus(t, uverbs.WCRemAccessErr, pollOne(t, client.cq))
}

// Negative: the builder's refusals (pyverbs' test_post_send_qp_state_bad_flow on an extended QP, and what
// libibverbs' providers refuse at creation). Every refused chain posts nothing.
func TestNegQPExBuilder(t *testing.T) {
	e := newEnv(t)
	// Send operations the provider does not build for the QP type: ErrNotSupported at creation.
	cq := e.cq(8)
	_, err := e.pd().CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeUD, SendCQ: cq, RecvCQ: cq, SendOps: uverbs.SendOpRDMAWrite,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.ErrorIs(t, err, uverbs.ErrNotSupported, "UD QP with RDMA_WRITE")
	_, err = e.pd().CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SendOps: uverbs.SendOpTSO,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.ErrorIs(t, err, uverbs.ErrNotSupported, "RC QP with TSO")

	// A QP in RESET: Complete is EINVAL, as ibv_wr_complete's post in a bad state.
	lone := e.newPlayer(playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpSend})
	err = lone.qp.StartWR().Send(1, uverbs.SendSignaled).SetSGEList(lone.sendSGE(8)).Complete()
	requireErrno(t, err, unix.EINVAL, "Complete in RESET")

	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, sendOps: uverbs.SendOpSend,
		cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	// An operation not among the QP's SendOps: EINVAL naming the request; the SEND before it is not posted.
	b := client.qp.StartWR()
	b.Send(1, uverbs.SendSignaled).SetSGEList(client.sendSGE(8))
	b.RDMAWrite(2, uverbs.SendSignaled, server.mr.RKey(), server.mr.Addr())
	err = b.Complete()
	requireErrno(t, err, unix.EINVAL, "RDMA WRITE on a SEND-only QP")
	require.Contains(t, err.Error(), "request 1 ")
	// More requests than the send queue holds: ENOMEM, nothing posted.
	b = client.qp.StartWR()
	for i := 0; i <= int(client.qp.Cap().MaxSendWR); i++ {
		b.Send(uint64(i), uverbs.SendSignaled).SetSGEList(client.sendSGE(8))
	}
	requireErrno(t, b.Complete(), unix.ENOMEM, "a chain longer than the send queue")
	// Abort: nothing posted.
	client.qp.StartWR().Send(9, uverbs.SendSignaled).SetSGEList(client.sendSGE(8)).Abort()
	n, err := client.cq.Poll(make([]uverbs.WC, 8))
	require.NoError(t, err)
	require.Zero(t, n, "a refused or aborted chain completed")
	// The QP still works, through the builder and through PostSend.
	server.postRecv(1)
	server.postRecv(2)
	client.post(client.sendWR(uverbs.WRSend, 8))
	_, err = client.qp.PostSend([]uverbs.SendWR{client.sendWR(uverbs.WRSend, 8)})
	require.NoError(t, err)
	requireSuccess(t, poll(t, client.cq, 2)...)
	requireSuccess(t, poll(t, server.cq, 2)...)
	// A QP created without SendOps has no builder: EINVAL.
	plain := e.newPlayer(playerOpts{qpType: uverbs.QPTypeRC})
	requireErrno(t, plain.qp.StartWR().Send(1, 0).Complete(), unix.EINVAL, "builder of a QP without SendOps")
}
