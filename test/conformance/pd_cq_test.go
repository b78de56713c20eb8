package conformance

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// pyverbs: test_pd.PDTest.test_alloc_pd, test_dealloc_pd, test_multiple_pd_creation, test_destroy_pd_twice
func TestPD(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 10; i++ {
		pd, err := e.ctx.AllocPD()
		require.NoError(t, err)
		require.NoError(t, pd.Close())
		require.NoError(t, pd.Close(), "second close of a PD is a no-op")
	}
	pds := make([]*uverbs.PD, 10)
	seen := map[uint32]bool{}
	for i := range pds {
		pd, err := e.ctx.AllocPD()
		require.NoError(t, err)
		require.False(t, seen[pd.Handle()], "handle %#x reused while alive", pd.Handle())
		seen[pd.Handle()] = true
		pds[i] = pd
	}
	for _, pd := range pds {
		require.NoError(t, pd.Close())
	}
}

// pyverbs: test_cq.CQAPITest.test_create_cq, test_cqex.CQEXAPITest.test_create_cq_ex — sizes 1, max_cqe/2,
// max_cqe on the first two completion vectors and on the last one; the CQ holds at least what was asked.
func TestCreateCQ(t *testing.T) {
	e := newEnv(t)
	nvec := e.ctx.NumCompVectors()
	require.Positive(t, nvec)
	for _, size := range []int{1, int(e.dev.MaxCQE) / 2, int(e.dev.MaxCQE)} {
		for vec := 0; vec < min(2, nvec); vec++ {
			cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: size, CompVector: vec})
			require.NoError(t, err, "cqe %d vector %d", size, vec)
			require.GreaterOrEqual(t, cq.CQE(), size)
			require.NoError(t, cq.Close())
		}
	}
	cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: nvec, CompVector: nvec - 1})
	require.NoError(t, err)
	require.NoError(t, cq.Close())
}

// pyverbs: test_cq.CQAPITest.test_create_cq_with_comp_channel
func TestCreateCQWithCompChannel(t *testing.T) {
	e := newEnv(t)
	for _, size := range []int{1, int(e.dev.MaxCQE) / 2, int(e.dev.MaxCQE)} {
		ch, err := e.ctx.CreateCompChannel(nil)
		require.NoError(t, err)
		cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: size, Channel: ch})
		skipIfUnsupported(t, err, "CQ with completion channel")
		require.NoError(t, err)
		require.NoError(t, cq.Close())
		require.NoError(t, ch.Close())
	}
}

// pyverbs: test_cq.CQAPITest.test_create_cq_bad_flow, test_cqex.CQEXAPITest.test_create_cq_ex_bad_flow
func TestNegCreateCQTooLarge(t *testing.T) {
	e := newEnv(t)
	_, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: int(e.dev.MaxCQE) + 1})
	requireErrno(t, err, unix.EINVAL)
}

// pyverbs: test_cq.CQAPITest.test_create_cq_bad_flow (comp_vector = num_comp_vectors + 1)
func TestNegCreateCQBadCompVector(t *testing.T) {
	e := newEnv(t)
	for _, vec := range []int{e.ctx.NumCompVectors(), e.ctx.NumCompVectors() + 1} {
		_, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: 100, CompVector: vec})
		requireErrno(t, err, unix.EINVAL, "comp vector %d", vec)
	}
}

// pyverbs: test_cq.CQTest.test_resize_cq — shrink to 1, grow to 7, fill all but one entry, then a shrink below
// the outstanding completions is EINVAL and they are all still there. pyverbs fills a UD sender's CQ, whose
// completions arrive asynchronously; here the filled CQ is an RC receiver's, and the sender's completions (each
// after the responder's receive completion and ACK) prove every receive completion is in before the resize.
func TestResizeCQ(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapResize)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, cqDepth: 3})
	err := server.cq.Resize(1)
	skipIfUnsupported(t, err, "resize CQ")
	require.NoError(t, err)
	require.GreaterOrEqual(t, server.cq.CQE(), 1)
	require.NoError(t, server.cq.Resize(7))
	require.GreaterOrEqual(t, server.cq.CQE(), 7)
	n := min(server.cq.CQE()-1, int(server.qp.Cap().MaxRecvWR), int(client.qp.Cap().MaxSendWR))
	for i := 0; i < n; i++ {
		server.postRecv(uint64(i))
	}
	for i := 0; i < n; i++ {
		client.post(client.sendWR(uverbs.WRSend, client.o.msgSize))
		requireSuccess(t, pollOne(t, client.cq))
	}
	requireErrno(t, server.cq.Resize(1), unix.EINVAL, "shrink to 1 with %d completions outstanding", n)
	wcs := poll(t, server.cq, n)
	requireSuccess(t, wcs...)
	for i, wc := range wcs {
		require.Equal(t, uint64(i), wc.WRID)
	}
}

// pyverbs: test_cq_events.CqEventsTestCase.test_cq_events_rc, test_cq_events_ud — traffic whose completions
// are waited for through an armed CQ on a completion channel.
func TestCQEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  uverbs.QPType
	}{{"RC", uverbs.QPTypeRC}, {"UD", uverbs.QPTypeUD}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ch, err := e.ctx.CreateCompChannel(nil)
			require.NoError(t, err)
			cleanup(t, ch)
			client, server := e.pair(playerOpts{qpType: tc.typ, channel: ch})
			events := map[*uverbs.CQ]int{}
			// Acknowledge at cleanup, before the CQs close (Close waits for every event to be acknowledged).
			t.Cleanup(func() {
				for cq, n := range events {
					cq.AckEvents(n)
				}
			})
			eachWay(client, server, func(i int, s, r *player) {
				require.NoError(t, s.cq.ReqNotify(false))
				require.NoError(t, r.cq.ReqNotify(false))
				r.postRecv(uint64(i))
				s.post(s.sendWR(uverbs.WRSend, s.o.msgSize))
				want := map[*uverbs.CQ]bool{s.cq: true, r.cq: true}
				for len(want) > 0 {
					ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
					cq, err := ch.GetEvent(ctx)
					cancel()
					require.NoError(t, err)
					require.True(t, want[cq], "event for an unexpected CQ")
					delete(want, cq)
					events[cq]++
				}
				requireSuccess(t, pollOne(t, s.cq), pollOne(t, r.cq))
			})
			for _, n := range events {
				require.Equal(t, 2*iters, n)
			}
		})
	}
}
