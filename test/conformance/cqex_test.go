package conformance

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/goverbs/uverbs"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pyverbs: test_cqex.CQEXAPITest.test_create_cq_ex — an extended CQ for each completion field alone and each
// creation flag alone, sizes as TestCreateCQ. The standard fields must be accepted on every device; a field
// beyond them is ErrNotSupported (no goverbs provider reports timestamps, VLANs, flow tags or tag matching yet,
// and libibverbs' rxe refuses them too). CQSingleThreaded is userspace's and always accepted;
// CQIgnoreOverrun reaches the kernel, which creates the CQ or refuses it with ErrNotSupported (rxe: every
// kernel of the lab refuses it, asserted).
func TestCreateCQEx(t *testing.T) {
	e := newEnv(t)
	for bit := uverbs.WCExFlags(1); bit <= uverbs.WCExWithCompletionTimestampWallclock; bit <<= 1 {
		cq, err := e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 10, WCFlags: bit})
		if bit&uverbs.WCStandardFlags != 0 {
			require.NoError(t, err, "fields %v", bit)
			require.True(t, cq.Extended())
			require.Equal(t, bit, cq.WCFlags())
			require.NoError(t, cq.Close())
			continue
		}
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "fields %v", bit)
		require.Nil(t, cq)
	}
	for _, size := range []int{1, int(e.dev.MaxCQE) / 2, int(e.dev.MaxCQE)} {
		cq, err := e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: size, CompVector: e.ctx.NumCompVectors() - 1,
			WCFlags: uverbs.WCStandardFlags, Flags: uverbs.CQSingleThreaded})
		require.NoError(t, err, "cqe %d", size)
		require.GreaterOrEqual(t, cq.CQE(), size)
		require.NoError(t, cq.Close())
	}
	cq, err := e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 10, Flags: uverbs.CQIgnoreOverrun})
	if e.ctx.DriverID() == uverbs.DriverRXE {
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "rxe refuses IGNORE_OVERRUN")
	} else if !errors.Is(err, uverbs.ErrNotSupported) {
		require.NoError(t, err, "IGNORE_OVERRUN")
		require.NoError(t, cq.Close())
	}
	t.Logf("IGNORE_OVERRUN: %v", err)
}

// pyverbs: test_cqex.CQEXAPITest.test_create_cq_ex_bad_flow — max_cqe+1 entries, and a completion vector past
// the last, are EINVAL from the kernel; unknown field or flag bits are EINVAL before it.
func TestNegCreateCQExBadFlow(t *testing.T) {
	e := newEnv(t)
	_, err := e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: int(e.dev.MaxCQE) + 1})
	requireErrno(t, err, unix.EINVAL)
	for _, vec := range []int{e.ctx.NumCompVectors(), e.ctx.NumCompVectors() + 1} {
		_, err := e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 10, CompVector: vec})
		requireErrno(t, err, unix.EINVAL, "comp vector %d", vec)
	}
	_, err = e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 10, WCFlags: 1 << 20})
	requireErrno(t, err, unix.EINVAL)
	_, err = e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 10, Flags: 1 << 5})
	requireErrno(t, err, unix.EINVAL)
}

// pyverbs: test_cqex.CqExTestCase.test_rc_traffic_cq_ex, test_ud_traffic_cq_ex — TestTraffic's checks (WRID,
// status, opcode, byte_len, qp_num, src_qp, immediate data, flags) on completions read with StartPoll …
// EndPoll from extended CQs.
func TestCQExTraffic(t *testing.T) {
	for _, tc := range []struct {
		name string
		qp   uverbs.QPType
		op   uverbs.WROpcode
	}{
		{"RC/send", uverbs.QPTypeRC, uverbs.WRSend},
		{"RC/send_imm", uverbs.QPTypeRC, uverbs.WRSendWithImm},
		{"RC/rdma_write_imm", uverbs.QPTypeRC, uverbs.WRRDMAWriteWithImm},
		{"UD/send", uverbs.QPTypeUD, uverbs.WRSend},
		{"UD/send_imm", uverbs.QPTypeUD, uverbs.WRSendWithImm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			client, server := e.pair(playerOpts{qpType: tc.qp, cqEx: true})
			traffic(t, client, server, tc.op)
		})
	}
}

// The poll calls' contract (ibv_start_poll's man page): StartPoll of an empty CQ is nil and no poll; a poll
// reads the completions in order with NextPoll, which is nil at the end and stays in the poll; EndPoll ends it;
// NextPoll without a poll, and (on a CQSingleThreaded CQ, which has no lock to wait on) StartPoll during one, are
// EINVAL; completions not read stay for the next poll.
func TestCQExPollContract(t *testing.T) {
	e := newEnv(t)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, cqEx: true, cqFlags: uverbs.CQSingleThreaded})
	wc, err := client.cq.StartPoll()
	require.NoError(t, err)
	require.Nil(t, wc, "an empty CQ")
	_, err = client.cq.NextPoll()
	requireErrno(t, err, unix.EINVAL, "NextPoll after an empty StartPoll")

	const n = 4
	for i := 0; i < n; i++ {
		server.postRecv(uint64(100 + i))
	}
	for i := 0; i < n; i++ {
		wr := client.sendWR(uverbs.WRSend, client.o.msgSize)
		wr.WRID = uint64(i)
		client.post(wr)
	}
	requireSuccess(t, poll(t, server.cq, n)...) // every send acknowledged, so all n are in the client's CQ
	deadline := time.Now().Add(hangGuard)
	for {
		if wc, err = client.cq.StartPoll(); err != nil || wc != nil {
			break
		}
		require.False(t, time.Now().After(deadline), "no send completion within %v", hangGuard)
		runtime.Gosched()
	}
	require.NoError(t, err)
	require.Equal(t, uint64(0), wc.WRID)
	_, err = client.cq.StartPoll()
	requireErrno(t, err, unix.EINVAL, "StartPoll during a poll")
	wc, err = client.cq.NextPoll()
	require.NoError(t, err)
	require.NotNil(t, wc)
	require.Equal(t, uint64(1), wc.WRID)
	client.cq.EndPoll() // completions 2 and 3 stay in the CQ
	_, err = client.cq.NextPoll()
	requireErrno(t, err, unix.EINVAL, "NextPoll after EndPoll")
	client.cq.EndPoll() // a second EndPoll does nothing

	rest := poll(t, client.cq, n-2)
	for i, wc := range rest {
		require.Equal(t, uint64(2+i), wc.WRID)
		require.Equal(t, uverbs.WCSend, wc.Opcode)
		requireSuccess(t, wc)
	}
	wc, err = client.cq.StartPoll()
	require.NoError(t, err)
	require.Nil(t, wc, "all read")
	// A classic CQ has no extended poll.
	_, err = e.cq(4).StartPoll()
	requireErrno(t, err, unix.EINVAL, "StartPoll of a CreateCQ CQ")
}

// Two goroutines poll one extended CQ (without CQSingleThreaded): each completion is read exactly once, and a
// poll in progress keeps the other goroutine's StartPoll out until its EndPoll.
func TestCQExConcurrentPollers(t *testing.T) {
	e := newEnv(t)
	const n = 64
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, cqEx: true, cqDepth: 2 * n,
		cap: uverbs.QPCap{MaxSendWR: n, MaxRecvWR: n, MaxSendSGE: 1, MaxRecvSGE: 1}})
	for i := 0; i < n; i++ {
		server.postRecv(uint64(i))
	}
	for i := 0; i < n; i++ {
		wr := client.sendWR(uverbs.WRSend, client.o.msgSize)
		wr.WRID = uint64(i)
		client.post(wr)
	}
	requireSuccess(t, poll(t, server.cq, n)...)
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				wc, err := client.cq.StartPoll()
				if err != nil {
					errs <- err
					return
				}
				for ; wc != nil; wc, err = client.cq.NextPoll() {
					mu.Lock()
					seen[wc.WRID]++
					mu.Unlock()
				}
				client.cq.EndPoll()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, n)
	for id, k := range seen {
		require.Equal(t, 1, k, "completion %d read %d times", id, k)
	}
}

// ibv_modify_cq (moderation): rxe has no moderation and refuses it with ErrNotSupported; a device with it
// accepts a count and a period. A closed CQ is ErrClosed.
func TestCQModerate(t *testing.T) {
	e := newEnv(t)
	cq := e.cq(16)
	err := cq.Moderate(uverbs.CQModeration{Count: 8, Period: 16})
	if e.ctx.DriverID() == uverbs.DriverRXE {
		require.ErrorIs(t, err, uverbs.ErrNotSupported)
	} else {
		skipIfUnsupported(t, err, "CQ moderation")
		require.NoError(t, err)
	}
	t.Logf("moderate: %v", err)
	cq2, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: 4})
	require.NoError(t, err)
	require.NoError(t, cq2.Close())
	require.ErrorIs(t, cq2.Moderate(uverbs.CQModeration{Count: 1}), uverbs.ErrClosed)
}
