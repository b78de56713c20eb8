package conformance

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// Negative: the kernel's QP state machine (ib_modify_qp_is_ok) refuses transitions that skip states or lack the
// attributes a transition requires, with EINVAL; the QP stays where it was.
func TestNegQPTransitions(t *testing.T) {
	cases := []struct {
		name string
		typ  uverbs.QPType
		prep func(p *player) error // bring the QP to the starting state
		attr uverbs.QPAttr
		mask uverbs.QPAttrMask
		stay string
	}{
		{"RC/RESET->RTR", uverbs.QPTypeRC, nil,
			uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: pathMTU}, uverbs.QPAttrState | uverbs.QPAttrPathMTU, "RESET"},
		{"RC/RESET->RTS", uverbs.QPTypeRC, nil,
			uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState, "RESET"},
		{"UD/RESET->RTS", uverbs.QPTypeUD, nil,
			uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState, "RESET"},
		{"RC/INIT->RTS", uverbs.QPTypeRC, (*player).toInit,
			uverbs.QPAttr{State: uverbs.QPStateRTS, SQPSN: 1}, uverbs.QPAttrState | uverbs.QPAttrSQPSN, "INIT"},
		{"RC/RESET->INIT without port and access", uverbs.QPTypeRC, nil,
			uverbs.QPAttr{State: uverbs.QPStateInit}, uverbs.QPAttrState, "RESET"},
		{"UD/RESET->INIT without qkey", uverbs.QPTypeUD, nil,
			uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: 1}, uverbs.QPAttrState | uverbs.QPAttrPort | uverbs.QPAttrPKeyIndex, "RESET"},
		{"RC/INIT->RTR without destination", uverbs.QPTypeRC, (*player).toInit,
			uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: pathMTU}, uverbs.QPAttrState | uverbs.QPAttrPathMTU, "INIT"},
		{"RC/RTS->RTR", uverbs.QPTypeRC, func(p *player) error { p.connect(p); return nil },
			uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState, "RTS"},
		{"UD/RESET->INIT with qkey on RC-only attribute", uverbs.QPTypeUD, nil,
			uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: 1, QKey: udQKey, AccessFlags: uverbs.AccessRemoteWrite},
			uverbs.QPAttrState | uverbs.QPAttrPort | uverbs.QPAttrPKeyIndex | uverbs.QPAttrQKey | uverbs.QPAttrAccessFlags, "RESET"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.skipIWARP(gapStateMach)
			p := e.newPlayer(playerOpts{qpType: tc.typ})
			if tc.prep != nil {
				require.NoError(t, tc.prep(p))
			}
			a := tc.attr
			requireErrno(t, p.qp.Modify(a, tc.mask), unix.EINVAL)
			q, err := p.qp.Query(uverbs.QPAttrState)
			require.NoError(t, err)
			require.Equal(t, tc.stay, q.State.String())
		})
	}
}

// Negative: modify attributes out of range: a port beyond phys_port_cnt, a path MTU above the port's max MTU
// (the invalid MTU code 6): EINVAL.
func TestNegQPModifyOutOfRange(t *testing.T) {
	cases := []struct {
		name string
		prep bool
		attr func(e *env) (uverbs.QPAttr, uverbs.QPAttrMask)
	}{
		{"port", false, func(e *env) (uverbs.QPAttr, uverbs.QPAttrMask) {
			return uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: e.dev.PhysPortCnt + 1, AccessFlags: uverbs.AccessLocalWrite},
				uverbs.QPAttrState | uverbs.QPAttrPort | uverbs.QPAttrPKeyIndex | uverbs.QPAttrAccessFlags
		}},
		{"port 0", false, func(e *env) (uverbs.QPAttr, uverbs.QPAttrMask) {
			return uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: 0, AccessFlags: uverbs.AccessLocalWrite},
				uverbs.QPAttrState | uverbs.QPAttrPort | uverbs.QPAttrPKeyIndex | uverbs.QPAttrAccessFlags
		}},
		{"path MTU code 6", true, func(e *env) (uverbs.QPAttr, uverbs.QPAttrMask) {
			return uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: 6, DestQPN: 1, AHAttr: e.globalAH(), MaxDestRdAtomic: 1, MinRNRTimer: 12},
				uverbs.QPAttrState | uverbs.QPAttrAV | uverbs.QPAttrPathMTU | uverbs.QPAttrDestQPN | uverbs.QPAttrRQPSN |
					uverbs.QPAttrMaxDestRdAtomic | uverbs.QPAttrMinRNRTimer
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.prep {
				e.skipIWARP(gapStateMach) // siw takes the path MTU code 6 in its RTR
			}
			p := e.newPlayer(playerOpts{qpType: uverbs.QPTypeRC})
			if tc.prep {
				require.NoError(t, p.toInit())
			}
			a, mask := tc.attr(e)
			requireErrno(t, p.qp.Modify(a, mask), unix.EINVAL)
		})
	}
}

// pyverbs: test_qpex.QpExTestCase.test_post_receive_qp_state_bad_flow, test_post_send_qp_state_bad_flow —
// posting to a QP in RESET is EINVAL.
func TestNegPostInReset(t *testing.T) {
	e := newEnv(t)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeUD})
	require.NoError(t, server.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateReset}, uverbs.QPAttrState))
	_, err := server.qp.PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{server.mr.SGE(server.recvOff(), server.recvLen())}}})
	requireErrno(t, err, unix.EINVAL, "post recv in RESET")
	require.NoError(t, client.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateReset}, uverbs.QPAttrState))
	_, err = client.qp.PostSend([]uverbs.SendWR{client.sendWR(uverbs.WRSend, client.o.msgSize)})
	requireErrno(t, err, unix.EINVAL, "post send in RESET")
}

// pyverbs: test_qpex.QpExTestCase.test_full_rq_bad_flow — posting beyond the receive queue's capacity is
// ENOMEM. Also the send queue.
func TestNegQueueOverflow(t *testing.T) {
	e := newEnv(t)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeUD, cqDepth: 1000})
	q, err := server.qp.Query(uverbs.QPAttrCap)
	require.NoError(t, err)
	var rerr error
	for i := uint32(0); i <= q.Cap.MaxRecvWR && rerr == nil; i++ {
		_, rerr = server.qp.PostRecv([]uverbs.RecvWR{{WRID: uint64(i), SGL: []uverbs.SGE{server.mr.SGE(server.recvOff(), server.recvLen())}}})
	}
	requireErrno(t, rerr, unix.ENOMEM, "receive queue of %d", q.Cap.MaxRecvWR)

	// The send queue: one PostSend (one doorbell, so the device consumes nothing meanwhile) of far more requests
	// than max_send_wr; every granted slot is accepted, the ones beyond the ring are refused.
	n := 4*int(client.qp.Cap().MaxSendWR) + 1
	wrs := make([]uverbs.SendWR, n)
	for i := range wrs {
		wrs[i] = client.sendWR(uverbs.WRSend, client.o.msgSize)
		wrs[i].WRID = uint64(i)
	}
	posted, err := client.qp.PostSend(wrs)
	requireErrno(t, err, unix.ENOMEM, "send queue of %d", client.qp.Cap().MaxSendWR)
	require.GreaterOrEqual(t, posted, int(client.qp.Cap().MaxSendWR))
	require.Less(t, posted, n)
	requireSuccess(t, poll(t, client.cq, posted)...)
}

// pyverbs: test_qpex.QpExTestCase.test_rq_with_larger_sgl_bad_flow — a receive with more SGEs than max_recv_sge
// is EINVAL. Also sends with more than max_send_sge.
func TestNegTooManySGEs(t *testing.T) {
	e := newEnv(t)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeUD})
	sgl := make([]uverbs.SGE, server.qp.Cap().MaxRecvSGE+1)
	for i := range sgl {
		sgl[i] = server.mr.SGE(server.recvOff(), 8)
	}
	_, err := server.qp.PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: sgl}})
	requireErrno(t, err, unix.EINVAL, "recv with %d SGEs", len(sgl))
	ssgl := make([]uverbs.SGE, client.qp.Cap().MaxSendSGE+1)
	for i := range ssgl {
		ssgl[i] = client.mr.SGE(0, 8)
	}
	wr := client.sendWR(uverbs.WRSend, 0)
	wr.SGL = ssgl
	_, err = client.qp.PostSend([]uverbs.SendWR{wr})
	requireErrno(t, err, unix.EINVAL, "send with %d SGEs", len(ssgl))
}

// Negative: an inline send longer than the QP's max_inline_data is EINVAL.
func TestNegInlineTooLong(t *testing.T) {
	e := newEnv(t)
	client, _ := e.pair(playerOpts{qpType: uverbs.QPTypeRC,
		cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}})
	n := int(client.qp.Cap().MaxInlineData) + 1
	require.LessOrEqual(t, n, client.o.msgSize)
	wr := client.sendWR(uverbs.WRSend, n)
	wr.Flags |= uverbs.SendInline
	_, err := client.qp.PostSend([]uverbs.SendWR{wr})
	requireErrno(t, err, unix.EINVAL, "inline send of %d bytes", n)
}

// Completion-status negatives: each posts one request that the device must fail with a specific status.
func TestNegCompletionStatus(t *testing.T) {
	rw := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic
	cases := []struct {
		name string
		o    playerOpts
		// run posts on client towards server and returns the client's completion.
		run func(t *testing.T, client, server *player) uverbs.WC
		// want are the statuses accepted: the spec's first; where rxe reports another, it follows.
		want []uverbs.WCStatus
	}{
		{"send with wrong lkey", playerOpts{}, func(t *testing.T, c, s *player) uverbs.WC {
			s.postRecv(1)
			wr := c.sendWR(uverbs.WRSend, c.o.msgSize)
			wr.SGL[0].LKey++
			c.post(wr)
			return pollOne(t, c.cq)
		}, []uverbs.WCStatus{uverbs.WCLocProtErr, uverbs.WCLocQPOpErr}}, // rxe: local QP operation error (6.4+: flushed)
		{"RDMA write with wrong rkey", playerOpts{}, func(t *testing.T, c, s *player) uverbs.WC {
			return rdmaWriteOnce(t, c, s.mr.RKey()+1, s.mr.Addr()+uint64(s.recvOff()), c.o.msgSize)
		}, []uverbs.WCStatus{uverbs.WCRemAccessErr}},
		{"RDMA write beyond the MR", playerOpts{}, func(t *testing.T, c, s *player) uverbs.WC {
			return rdmaWriteOnce(t, c, s.mr.RKey(), s.mr.Addr()+uint64(s.mr.Len())-8, c.o.msgSize)
		}, []uverbs.WCStatus{uverbs.WCRemAccessErr}},
		{"RDMA write to MR without remote write", playerOpts{mrAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteRead}, func(t *testing.T, c, s *player) uverbs.WC {
			return rdmaWriteOnce(t, c, s.mr.RKey(), s.mr.Addr()+uint64(s.recvOff()), c.o.msgSize)
		}, []uverbs.WCStatus{uverbs.WCRemAccessErr}},
		{"RDMA write to QP without remote write", playerOpts{qpAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteRead}, func(t *testing.T, c, s *player) uverbs.WC {
			return rdmaWriteOnce(t, c, s.mr.RKey(), s.mr.Addr()+uint64(s.recvOff()), c.o.msgSize)
		}, []uverbs.WCStatus{uverbs.WCRemAccessErr, uverbs.WCRemInvReqErr}}, // rxe: the opcode is invalid for the QP
		{"RDMA read from MR without remote read", playerOpts{mrAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite}, func(t *testing.T, c, s *player) uverbs.WC {
			wr := c.sendWR(uverbs.WRRDMARead, c.o.msgSize)
			wr.RemoteAddr, wr.RKey = s.mr.Addr()+uint64(s.recvOff()), s.mr.RKey()
			c.post(wr)
			return pollOne(t, c.cq)
		}, []uverbs.WCStatus{uverbs.WCRemAccessErr}},
		{"RDMA read into a local MR without local write", playerOpts{mrAccess: uverbs.AccessRemoteRead}, func(t *testing.T, c, s *player) uverbs.WC {
			wr := c.sendWR(uverbs.WRRDMARead, c.o.msgSize)
			wr.RemoteAddr, wr.RKey = s.mr.Addr()+uint64(s.recvOff()), s.mr.RKey()
			c.post(wr)
			return pollOne(t, c.cq)
		}, []uverbs.WCStatus{uverbs.WCLocProtErr}},
		{"send larger than the posted receive", playerOpts{}, func(t *testing.T, c, s *player) uverbs.WC {
			_, err := s.qp.PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{s.mr.SGE(s.recvOff(), 16)}}})
			require.NoError(t, err)
			c.post(c.sendWR(uverbs.WRSend, c.o.msgSize))
			requireStatusIn(t, pollOne(t, s.cq), uverbs.WCLocLenErr, uverbs.WCLocQPOpErr) // rxe: local QP operation error
			return pollOne(t, c.cq)
		}, []uverbs.WCStatus{uverbs.WCRemInvReqErr, uverbs.WCRemOpErr}}, // rxe: remote operation error
		{"send without a posted receive, rnr_retry 0", playerOpts{noRNR: true}, func(t *testing.T, c, s *player) uverbs.WC {
			c.post(c.sendWR(uverbs.WRSend, c.o.msgSize))
			return pollOne(t, c.cq)
		}, []uverbs.WCStatus{uverbs.WCRNRRetryExcErr}},
		{"request after an error is flushed", playerOpts{}, func(t *testing.T, c, s *player) uverbs.WC {
			wr := c.sendWR(uverbs.WRRDMAWrite, c.o.msgSize)
			wr.RemoteAddr, wr.RKey = s.mr.Addr(), s.mr.RKey()+1
			c.post(wr)
			c.post(wr)
			requireStatus(t, uverbs.WCRemAccessErr, pollOne(t, c.cq))
			return pollOne(t, c.cq)
		}, []uverbs.WCStatus{uverbs.WCWRFlushErr}},
		// pyverbs: test_atomic.AtomicTest.test_atomic_invalid_qp_access
		{"atomic on QP without remote atomic", playerOpts{msgSize: 8, qpAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite}, atomicOnce(0, 0), []uverbs.WCStatus{uverbs.WCRemAccessErr, uverbs.WCRemInvReqErr}},
		// pyverbs: test_atomic.AtomicTest.test_atomic_invalid_mr_access
		{"atomic on MR without remote atomic", playerOpts{msgSize: 8, mrAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite}, atomicOnce(0, 0), []uverbs.WCStatus{uverbs.WCRemAccessErr}},
		// pyverbs: test_atomic.AtomicTest.test_atomic_invalid_lkey
		{"atomic with wrong lkey", playerOpts{msgSize: 8}, atomicOnce(1, 0), []uverbs.WCStatus{uverbs.WCLocProtErr}},
		// pyverbs: test_atomic.AtomicTest.test_atomic_invalid_rkey
		{"atomic with wrong rkey", playerOpts{msgSize: 8}, atomicOnce(0, 1), []uverbs.WCStatus{uverbs.WCRemAccessErr}},
	}
	// The cases whose error the requester detects while building the request (see requesterErrStatuses).
	requesterSide := map[string]bool{"send with wrong lkey": true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.skipIWARP(gapRemoteErr)
			if tc.o.msgSize == 8 {
				e.requireAtomics()
			}
			o := tc.o
			if o.mrAccess == 0 {
				o.mrAccess = rw
			}
			client, server := e.pair(o)
			wc := tc.run(t, client, server)
			want := tc.want
			if requesterSide[tc.name] {
				want = e.requesterErrStatuses(t, want...)
			}
			requireStatusIn(t, wc, want...)
			// The error moves the client QP to ERR, after its completion on rxe (labtest.WaitQPErr).
			require.Equal(t, uverbs.QPStateErr, labtest.WaitQPErr(t, client.qp), "requester QP %#x", client.qp.QPN())
			// A remote error moves the responder's QP to ERR too, and rxe's responder does that after it sent
			// the NAK the requester's completion reports: a RESET of the server before that would be undone by
			// it (the next RESET->INIT then fails EINVAL, seen once on 7.3.4). Wait for the server's ERR first.
			switch wc.Status {
			case uverbs.WCRemAccessErr, uverbs.WCRemInvReqErr, uverbs.WCRemOpErr, uverbs.WCWRFlushErr:
				labtest.WaitQPErr(t, server.qp)
			}
			// pyverbs' restate_qps: RESET and reconnect, and traffic flows again.
			client.restate()
			server.restate()
			if o.mrAccess&uverbs.AccessLocalWrite == 0 {
				return // the receive buffer is not locally writable
			}
			s := client.sendWR(uverbs.WRSend, 8)
			server.postRecv(9)
			client.post(s)
			requireSuccess(t, pollOne(t, client.cq), pollOne(t, server.cq))
		})
	}
}

// atomicOnce posts one fetch-and-add from client to server with the lkey and rkey bumped by the given amounts.
func atomicOnce(lkeyDelta, rkeyDelta uint32) func(t *testing.T, c, s *player) uverbs.WC {
	return func(t *testing.T, c, s *player) uverbs.WC {
		wr := c.sendWR(uverbs.WRAtomicFetchAndAdd, 8)
		wr.SGL[0].LKey += lkeyDelta
		wr.RemoteAddr, wr.RKey, wr.CompareAdd = s.mr.Addr()+uint64(s.recvOff()), s.mr.RKey()+rkeyDelta, 1
		c.post(wr)
		return pollOne(t, c.cq)
	}
}

// pyverbs: test_atomic.AtomicTest.test_atomic_non_aligned_addr — an atomic on an address that is not 8-byte
// aligned fails: refused at post (EINVAL, as rdma-core's rxe provider does) or completed with a remote invalid
// request error (as hardware does).
func TestNegAtomicNonAligned(t *testing.T) {
	e := newEnv(t)
	e.requireAtomics()
	client, server := e.pair(playerOpts{msgSize: 16})
	wr := client.sendWR(uverbs.WRAtomicFetchAndAdd, 8)
	wr.RemoteAddr, wr.RKey, wr.CompareAdd = server.mr.Addr()+uint64(server.recvOff())+1, server.mr.RKey(), 1
	_, err := client.qp.PostSend([]uverbs.SendWR{wr})
	if err != nil {
		requireErrno(t, err, unix.EINVAL)
		return
	}
	requireStatus(t, uverbs.WCRemInvReqErr, pollOne(t, client.cq))
}

// Negative: closing a parent while children use it. The kernel refuses with EBUSY (PD with an MR, CQ with a
// QP); goverbs refuses the same for a context with objects and a completion channel with CQs. After the children
// close, the parent closes.
func TestNegCloseParentWithChildren(t *testing.T) {
	e := newEnv(t)
	t.Run("PD with MR", func(t *testing.T) {
		pd, err := e.ctx.AllocPD()
		require.NoError(t, err)
		buf := e.buffer(4096)
		mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
		require.NoError(t, err)
		requireBusyUntil(t, pd, mr)
	})
	t.Run("PD with QP", func(t *testing.T) {
		pd, err := e.ctx.AllocPD()
		require.NoError(t, err)
		cq := e.cq(16)
		qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		require.NoError(t, err)
		requireBusyUntil(t, pd, qp)
	})
	t.Run("CQ with QP", func(t *testing.T) {
		pd := e.pd()
		cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
		require.NoError(t, err)
		qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: e.dgramType(), SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		require.NoError(t, err)
		requireBusyUntil(t, cq, qp)
	})
	t.Run("context with PD", func(t *testing.T) {
		ctx, err := uverbs.Open(labtest.Device())
		require.NoError(t, err)
		pd, err := ctx.AllocPD()
		require.NoError(t, err)
		requireBusyUntil(t, ctx, pd)
	})
	t.Run("completion channel with CQ", func(t *testing.T) {
		ch, err := e.ctx.CreateCompChannel(nil)
		require.NoError(t, err)
		cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: 4, Channel: ch})
		require.NoError(t, err)
		requireBusyUntil(t, ch, cq)
	})
	t.Run("SRQ with QP", func(t *testing.T) {
		pd := e.pd()
		cq := e.cq(16)
		srq, err := pd.CreateSRQ(uverbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
		skipIfUnsupported(t, err, "SRQ")
		require.NoError(t, err)
		qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
		require.NoError(t, err)
		requireBusyUntil(t, srq, qp)
	})
}

// requireBusyUntil checks that parent refuses to close with EBUSY while child lives, and closes once child has.
func requireBusyUntil(t *testing.T, parent, child interface{ Close() error }) {
	t.Helper()
	requireErrno(t, parent.Close(), unix.EBUSY)
	require.NoError(t, child.Close())
	require.NoError(t, parent.Close())
}

// Negative: use after close. A closed context refuses new objects with ErrClosed; objects of a closed PD are
// refused by the kernel (the handle is gone).
func TestNegUseAfterClose(t *testing.T) {
	e := newEnv(t)
	ctx, err := uverbs.Open(labtest.Device())
	require.NoError(t, err)
	require.NoError(t, ctx.Close())
	_, err = ctx.AllocPD()
	require.ErrorIs(t, err, uverbs.ErrClosed)
	_, err = ctx.CreateCQ(uverbs.CQAttr{CQE: 1})
	require.ErrorIs(t, err, uverbs.ErrClosed)
	_, err = ctx.AsyncEvent(t.Context())
	require.ErrorIs(t, err, uverbs.ErrClosed)
	require.NoError(t, ctx.Close(), "second close is a no-op")

	pd, err := e.ctx.AllocPD()
	require.NoError(t, err)
	require.NoError(t, pd.Close())
	buf := e.buffer(4096)
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err == nil {
		mr.Close()
	}
	require.Error(t, err, "reg MR on a closed PD")
	if !errors.Is(err, uverbs.ErrClosed) && !errorsIsAny(err, unix.EINVAL, unix.ENOENT) {
		t.Fatalf("reg MR on a closed PD: %v, want ErrClosed, EINVAL or ENOENT", err)
	}
}

// Negative: CQ resize beyond max_cqe is EINVAL.
func TestNegResizeCQTooLarge(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapResize)
	cq := e.cq(4)
	err := cq.Resize(int(e.dev.MaxCQE) + 1)
	skipIfUnsupported(t, err, "resize CQ")
	requireErrno(t, err, unix.EINVAL)
}

// Negative: SRQ limits. max_wr beyond max_srq_wr and max_sge beyond max_srq_sge are EINVAL; posting beyond the
// SRQ's capacity is ENOMEM; a QP attached to an SRQ has no receive queue of its own (post recv is EINVAL); an SRQ
// limit above max_wr is EINVAL.
func TestNegSRQ(t *testing.T) {
	e := newEnv(t)
	pd := e.pd()
	if e.dev.MaxSRQ == 0 {
		t.Skip("device has no SRQ")
	}
	_, err := pd.CreateSRQ(uverbs.SRQAttr{MaxWR: e.dev.MaxSRQWR + 1, MaxSGE: 1})
	requireErrno(t, err, unix.EINVAL, "max_wr %d", e.dev.MaxSRQWR+1)
	_, err = pd.CreateSRQ(uverbs.SRQAttr{MaxWR: 4, MaxSGE: e.dev.MaxSRQSGE + 1})
	requireErrno(t, err, unix.EINVAL, "max_sge %d", e.dev.MaxSRQSGE+1)

	p := e.newPlayer(playerOpts{qpType: uverbs.QPTypeRC, srq: true})
	a, err := p.srq.Query()
	require.NoError(t, err)
	requireErrno(t, p.srq.Modify(uverbs.SRQAttr{Limit: a.MaxWR + 1}, uverbs.SRQAttrLimit), unix.EINVAL)
	_, err = p.qp.PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{p.mr.SGE(p.recvOff(), 8)}}})
	requireErrno(t, err, unix.EINVAL, "post recv on a QP with an SRQ")
	var perr error
	for i := uint32(0); i <= a.MaxWR && perr == nil; i++ {
		_, perr = p.srq.PostRecv([]uverbs.RecvWR{{WRID: uint64(i), SGL: []uverbs.SGE{p.mr.SGE(p.recvOff(), 8)}}})
	}
	requireErrno(t, perr, unix.ENOMEM, "SRQ of %d", a.MaxWR)
}

// Negative: XRC domains on a device without XRC are a typed not-supported error (rxe); where XRC exists the
// domain opens and closes.
func TestXRCDSupportIsTyped(t *testing.T) {
	e := newEnv(t)
	x, err := e.ctx.OpenXRCD(-1, uverbs.XRCDCreate)
	if err != nil {
		require.ErrorIs(t, err, uverbs.ErrNotSupported)
		return
	}
	require.NoError(t, x.Close())
}

// Negative: the XRC QP and SRQ types exist at the ABI level; a device without XRC refuses them with the typed
// not-supported error (an XRC initiator QP needs no domain; an XRC SRQ or target QP needs one, which such a
// device cannot open). Where XRC exists, the objects are created and closed.
func TestXRCTypesAreTyped(t *testing.T) {
	e := newEnv(t)
	pd, cq := e.pd(), e.cq(16)
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeXRCSend, SendCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1}})
	if err != nil {
		t.Logf("XRC initiator QP: %v", err)
		require.ErrorIs(t, err, uverbs.ErrNotSupported)
	} else {
		require.NoError(t, qp.Close())
	}
	x, err := e.ctx.OpenXRCD(-1, uverbs.XRCDCreate)
	if err != nil {
		require.ErrorIs(t, err, uverbs.ErrNotSupported)
		return
	}
	defer x.Close()
	srq, err := pd.CreateXRCSRQ(x, cq, uverbs.SRQAttr{MaxWR: 8, MaxSGE: 1})
	require.NoError(t, err)
	require.NoError(t, srq.Close())
	tgt, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeXRCRecv, XRCD: x})
	require.NoError(t, err)
	require.NoError(t, tgt.Close())
}

// Negative: use after close where the kernel reuses handles. The kernel hands out the lowest free handle, so a
// PD, CQ or QP allocated after a Close gets the closed one's handle; a verb on the closed Go object must fail
// with ErrClosed instead of acting on the new object.
func TestNegUseAfterCloseHandleReuse(t *testing.T) {
	e := newEnv(t)
	buf := e.buffer(4096)

	old, err := e.ctx.AllocPD()
	require.NoError(t, err)
	require.NoError(t, old.Close())
	pd := e.pd()
	t.Logf("closed PD handle %#x, new PD handle %#x", old.Handle(), pd.Handle())
	mr, err := old.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err == nil {
		mr.Close()
	}
	require.ErrorIs(t, err, uverbs.ErrClosed, "reg MR on a closed PD")
	cq := e.cq(16)
	_, err = old.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.ErrorIs(t, err, uverbs.ErrClosed, "create QP on a closed PD")
	_, err = old.CreateSRQ(uverbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
	require.ErrorIs(t, err, uverbs.ErrClosed, "create SRQ on a closed PD")
	_, err = old.AllocMW(uverbs.MWType2)
	require.ErrorIs(t, err, uverbs.ErrClosed, "alloc MW on a closed PD")
	_, err = old.CreateAH(e.globalAH())
	require.ErrorIs(t, err, uverbs.ErrClosed, "create AH on a closed PD")

	oldCQ, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: 4})
	require.NoError(t, err)
	require.NoError(t, oldCQ.Close())
	_ = e.cq(4) // takes the closed CQ's handle
	requireErrorIsClosed(t, oldCQ.Resize(8), "resize a closed CQ")
	_, err = pd.CreateQP(uverbs.QPInitAttr{Type: e.dgramType(), SendCQ: oldCQ, RecvCQ: oldCQ, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.ErrorIs(t, err, uverbs.ErrClosed, "create QP with a closed CQ")

	ch, err := e.ctx.CreateCompChannel(nil)
	require.NoError(t, err)
	require.NoError(t, ch.Close())
	_, err = e.ctx.CreateCQ(uverbs.CQAttr{CQE: 4, Channel: ch})
	require.ErrorIs(t, err, uverbs.ErrClosed, "create CQ on a closed completion channel")

	oldQP, err := pd.CreateQP(uverbs.QPInitAttr{Type: e.dgramType(), SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.NoError(t, err)
	require.NoError(t, oldQP.Close())
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: e.dgramType(), SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.NoError(t, err)
	cleanup(t, qp)
	requireErrorIsClosed(t, oldQP.Modify(uverbs.QPAttr{State: uverbs.QPStateInit, QKey: 1, PortNum: uint8(e.pnum)},
		uverbs.QPAttrState|uverbs.QPAttrQKey|uverbs.QPAttrPort|uverbs.QPAttrPKeyIndex), "modify a closed QP")
	_, err = oldQP.Query(uverbs.QPAttrState)
	requireErrorIsClosed(t, err, "query a closed QP")
	a, err := qp.Query(uverbs.QPAttrState)
	require.NoError(t, err)
	require.Equal(t, e.bornState(), a.State.String(), "the new QP was not touched")
}

func requireErrorIsClosed(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, uverbs.ErrClosed, what)
}
