package conformance

import (
	"context"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// A connected RC QP reads back what it was given (rdma-core's RCQPTest checks the rd_atomic part of this on
// newer versions: query returns at least what was requested).
func TestQueryRCQPAfterConnect(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapPathAttrs)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC})
	a, err := client.qp.Query(uverbs.QPAttrState | uverbs.QPAttrPathMTU | uverbs.QPAttrDestQPN | uverbs.QPAttrRQPSN |
		uverbs.QPAttrSQPSN | uverbs.QPAttrTimeout | uverbs.QPAttrRetryCnt | uverbs.QPAttrRNRRetry |
		uverbs.QPAttrMaxQPRdAtomic | uverbs.QPAttrMaxDestRdAtomic | uverbs.QPAttrMinRNRTimer | uverbs.QPAttrAccessFlags |
		uverbs.QPAttrAV | uverbs.QPAttrPort)
	require.NoError(t, err)
	require.Equal(t, "RTS", a.State.String())
	require.Equal(t, pathMTU, a.PathMTU)
	require.Equal(t, server.qp.QPN(), a.DestQPN)
	require.Equal(t, server.psn, a.RQPSN)
	require.Equal(t, client.psn, a.SQPSN)
	require.Equal(t, uint8(timeout), a.Timeout)
	require.Equal(t, uint8(retryCnt), a.RetryCnt)
	require.Equal(t, uint8(rnrRetry), a.RNRRetry)
	require.GreaterOrEqual(t, a.MaxRdAtomic, uint8(rdAtomic))
	require.GreaterOrEqual(t, a.MaxDestRdAtomic, uint8(rdAtomic))
	require.Equal(t, uint8(minRNRTimer), a.MinRNRTimer)
	require.Equal(t, client.o.qpAccess, a.AccessFlags)
	require.Equal(t, uint8(e.pnum), a.PortNum)
	require.True(t, a.AHAttr.IsGlobal)
	require.Equal(t, e.gid.GID, a.AHAttr.GRH.DGID)
	require.Equal(t, uint8(e.gid.Index), a.AHAttr.GRH.SGIDIndex)
}

// SRQ limit: armed with a limit below the number of posted receives, the SRQ reports EventSRQLimitReached on the
// async event channel once consumption drops the posted count below the limit, and disarms (limit reads 0).
func TestSRQLimitEvent(t *testing.T) {
	e := newEnv(t)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, srq: true})
	const posted, limit = 4, 2
	for i := 0; i < posted; i++ {
		server.postRecv(uint64(i))
	}
	err := server.srq.Modify(uverbs.SRQAttr{Limit: limit}, uverbs.SRQAttrLimit)
	skipIfUnsupported(t, err, "SRQ limit")
	require.NoError(t, err)
	a, err := server.srq.Query()
	require.NoError(t, err)
	require.Equal(t, uint32(limit), a.Limit)
	for i := 0; i < posted-limit+1; i++ {
		client.post(client.sendWR(uverbs.WRSend, client.o.msgSize))
		requireSuccess(t, pollOne(t, client.cq), pollOne(t, server.cq))
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for {
		ev, err := e.ctx.AsyncEvent(ctx)
		require.NoError(t, err)
		if ev.Type == uverbs.EventSRQLimitReached {
			require.Same(t, server.srq, ev.SRQ, "event %v", ev)
			break
		}
		t.Logf("other async event: %v", ev)
	}
	a, err = server.srq.Query()
	require.NoError(t, err)
	if e.iwarp() {
		// siw keeps the limit armed after the event (siw_srq's limit is only cleared by a new modify).
		require.Equal(t, uint32(limit), a.Limit, "siw's limit stays armed once it fired")
		return
	}
	require.Zero(t, a.Limit, "the limit disarms once it fired")
}

// Multicast: a UD QP attaches to and detaches from a multicast group. Negative: a non-multicast GID, a QP that is
// not UD, and a second detach are EINVAL.
func TestMulticastAttach(t *testing.T) {
	e := newEnv(t)
	if e.dev.MaxMcastGrp == 0 {
		t.Skip("device has no multicast (max_mcast_grp 0)")
	}
	ud := e.newPlayer(playerOpts{qpType: uverbs.QPTypeUD})
	require.NoError(t, ud.toInit())
	var mgid uverbs.GID
	copy(mgid[:], []byte{0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xe0, 0x00, 0x01, 0x7b}) // 224.0.1.123
	require.NoError(t, ud.qp.AttachMcast(mgid, 0))
	require.NoError(t, ud.qp.DetachMcast(mgid, 0))
	requireErrno(t, ud.qp.DetachMcast(mgid, 0), unix.EINVAL, "second detach")
	requireErrno(t, ud.qp.AttachMcast(e.gid.GID, 0), unix.EINVAL, "attach to a unicast GID")
	rc := e.newPlayer(playerOpts{qpType: uverbs.QPTypeRC})
	requireErrno(t, rc.qp.AttachMcast(mgid, 0), unix.EINVAL, "attach an RC QP")
}

// MR re-registration (ibv_rereg_mr). rxe cannot re-register on Linux 6.1 (no rereg_user_mr: the typed
// ErrNotSupported); from 6.5 (asserted from 6.12, the matrix's next kernel) it changes the access rights and
// the PD, never the translation (EOPNOTSUPP). After remote write is taken away remote writes fail (pyverbs'
// test_mr_rereg_access_bad_flow); after a move to another PD the QP of the old PD can no longer use the rkey.
func TestReregMR(t *testing.T) {
	k := labtest.Kernel()
	for _, tc := range []struct {
		name  string
		rereg func(t *testing.T, server *player) (undo func(), err error)
	}{
		{"access", func(t *testing.T, server *player) (func(), error) {
			return func() {}, server.mr.Rereg(uverbs.ReregAccess, nil, nil, uverbs.AccessLocalWrite)
		}},
		{"pd", func(t *testing.T, server *player) (func(), error) {
			pd, err := server.e.ctx.AllocPD()
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, pd.Close()) })
			// Moved back before the new PD is closed (a PD with an MR is busy).
			undo := func() { require.NoError(t, server.mr.Rereg(uverbs.ReregPD, server.pd, nil, 0), "rereg MR back") }
			return undo, server.mr.Rereg(uverbs.ReregPD, pd, nil, 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC})
			rdmaTraffic(t, client, server, uverbs.WRRDMAWrite)
			undo, err := tc.rereg(t, server)
			if e.iwarp() {
				require.ErrorIs(t, err, uverbs.ErrNotSupported, "rereg MR on siw (no rereg_user_mr)")
				return
			}
			if !k.AtLeast(6, 12) {
				require.ErrorIs(t, err, uverbs.ErrNotSupported, "rereg MR on rxe of Linux %s", k)
				return
			}
			require.NoError(t, err, "rereg MR on rxe of Linux %s", k)
			requireRemoteAccessErr(t, client, server)
			undo()
		})
	}
	t.Run("translation", func(t *testing.T) {
		e := newEnv(t)
		_, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC})
		b, err := uverbs.AllocBuffer(4096)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, b.Close()) })
		err = server.mr.Rereg(uverbs.ReregTrans, nil, b.Bytes(), 0)
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "rereg MR translation on rxe of Linux %s", k)
	})
}
