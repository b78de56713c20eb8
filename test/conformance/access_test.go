package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/goverbs/goverbs/uverbs"
	"github.com/stretchr/testify/require"
)

// Remote access boundaries seen from both ends (issue #14, item 6), beyond pyverbs: an RDMA WRITE to memory the
// responder must not let it reach. The requester completes with REM_ACCESS_ERR and its QP is in ERR (as
// TestNegCompletionStatus checks for some of these); here the responder is checked too: the write is a class C
// error there (IBTA: responder "remote access error"), so its QP goes to ERR as well, and the receive it had
// posted is flushed (WR_FLUSH_ERR). Nothing is written. Both QPs come back with RESET->RTS. Asynchronous events
// seen meanwhile are logged (the IBTA names QP_ACCESS_ERR for the responder; rxe does not report one).
func TestNegRemoteAccessBothEnds(t *testing.T) {
	rw := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite
	mwOpts := playerOpts{mrAccess: uverbs.AccessLocalWrite | uverbs.AccessMWBind, qpAccess: rw}
	cases := []struct {
		name string
		o    playerOpts
		// target returns the key and address the client writes to.
		target func(t *testing.T, e *env, c, s *player) (rkey uint32, raddr uint64)
	}{
		{"MR without remote write", playerOpts{mrAccess: uverbs.AccessLocalWrite | uverbs.AccessRemoteRead},
			func(t *testing.T, e *env, c, s *player) (uint32, uint64) {
				return s.mr.RKey(), s.mr.Addr() + uint64(s.recvOff())
			}},
		{"stale rkey after dereg", playerOpts{},
			func(t *testing.T, e *env, c, s *player) (uint32, uint64) {
				b := e.buffer(4096)
				mr, err := s.pd.RegMR(b.Bytes(), rw)
				require.NoError(t, err)
				rkey, addr := mr.RKey(), mr.Addr()
				require.NoError(t, mr.Close())
				return rkey, addr
			}},
		{"outside the MR", playerOpts{},
			func(t *testing.T, e *env, c, s *player) (uint32, uint64) {
				return s.mr.RKey(), s.mr.Addr() + uint64(s.mr.Len()) // the first byte past the end
			}},
		{"MR of another PD", playerOpts{},
			func(t *testing.T, e *env, c, s *player) (uint32, uint64) {
				b := e.buffer(4096)
				mr, err := e.pd().RegMR(b.Bytes(), rw)
				require.NoError(t, err)
				cleanup(t, mr)
				return mr.RKey(), mr.Addr()
			}},
		{"MW after local invalidate", mwOpts,
			func(t *testing.T, e *env, c, s *player) (uint32, uint64) {
				mw := allocMW(t, s, uverbs.MWType2)
				requireSuccess(t, bindMW(t, s, mw, s.o.msgSize, rw))
				s.post(uverbs.SendWR{WRID: 0x1c, Opcode: uverbs.WRLocalInv, Flags: uverbs.SendSignaled, Imm: mw.RKey()})
				requireSuccess(t, pollOne(t, s.cq))
				return mw.RKey(), s.mr.Addr() + uint64(s.recvOff())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			client, server := e.pair(tc.o)
			rkey, raddr := tc.target(t, e, client, server)
			recv := server.buf.Bytes()[server.recvOff() : server.recvOff()+server.o.msgSize]
			clear(recv)
			fill(client.buf.Bytes()[client.sendOff():client.sendOff()+client.o.msgSize], 1)
			server.postRecv(0x7e)

			requireStatus(t, uverbs.WCRemAccessErr, rdmaWriteOnce(t, client, rkey, raddr, client.o.msgSize))
			requireQPState(t, client, uverbs.QPStateErr)
			rwc := pollOne(t, server.cq)
			require.Equal(t, uint64(0x7e), rwc.WRID, "responder completion %+v", rwc)
			requireStatus(t, uverbs.WCWRFlushErr, rwc)
			requireQPState(t, server, uverbs.QPStateErr)
			require.Equal(t, make([]byte, len(recv)), recv, "the refused write changed the receive area")
			logAsyncEvents(t, e, 200*time.Millisecond)

			client.restate()
			server.restate()
			server.postRecv(9)
			client.post(client.sendWR(uverbs.WRSend, 8))
			requireSuccess(t, pollOne(t, client.cq), pollOne(t, server.cq))
		})
	}
}

func requireQPState(t *testing.T, p *player, want uverbs.QPState) {
	t.Helper()
	q, err := p.qp.Query(uverbs.QPAttrState)
	require.NoError(t, err)
	require.Equal(t, want, q.State, "QP %#x state %v, want %v", p.qp.QPN(), q.State, want)
}

// logAsyncEvents logs the context's asynchronous events that arrive within d.
func logAsyncEvents(t *testing.T, e *env, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		ev, err := e.ctx.AsyncEvent(ctx)
		if err != nil {
			return
		}
		t.Logf("async event: %v", ev)
	}
}
