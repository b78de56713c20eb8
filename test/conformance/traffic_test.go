package conformance

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goverbs/goverbs/uverbs"
)

// pyverbs: test_qpex.QpExTestCase.test_qp_ex_{ud,rc}_send, _send_imm, test_qp_ex_ud_zero_size,
// test_qp_ex_rc_rdma_write, _rdma_write_imm, _rdma_write_zero_length, _rdma_read, _rdma_read_zero_size;
// test_cqex.CqExTestCase.test_{rc,ud}_traffic_cq_ex (every completion's wr_id, status, opcode, byte_len, qp_num,
// src_qp, imm and flags are checked, the fields IBV_WC_STANDARD_FLAGS reads). Ten messages each way; the data is
// checked at the destination.
func TestTraffic(t *testing.T) {
	cases := []struct {
		name string
		o    playerOpts
		op   uverbs.WROpcode
		rdma bool
	}{
		{"RC/send", playerOpts{qpType: uverbs.QPTypeRC}, uverbs.WRSend, false},
		{"RC/send_imm", playerOpts{qpType: uverbs.QPTypeRC}, uverbs.WRSendWithImm, false},
		{"UC/send", playerOpts{qpType: uverbs.QPTypeUC}, uverbs.WRSend, false},
		{"UD/send", playerOpts{qpType: uverbs.QPTypeUD}, uverbs.WRSend, false},
		{"UD/send_imm", playerOpts{qpType: uverbs.QPTypeUD}, uverbs.WRSendWithImm, false},
		{"UD/zero_size", playerOpts{qpType: uverbs.QPTypeUD, zero: true}, uverbs.WRSend, false},
		{"RC/rdma_write", playerOpts{qpType: uverbs.QPTypeRC}, uverbs.WRRDMAWrite, true},
		{"RC/rdma_write_imm", playerOpts{qpType: uverbs.QPTypeRC}, uverbs.WRRDMAWriteWithImm, false},
		{"RC/rdma_write_zero_length", playerOpts{qpType: uverbs.QPTypeRC, zero: true}, uverbs.WRRDMAWrite, true},
		{"RC/rdma_read", playerOpts{qpType: uverbs.QPTypeRC}, uverbs.WRRDMARead, true},
		{"RC/rdma_read_zero_size", playerOpts{qpType: uverbs.QPTypeRC, zero: true}, uverbs.WRRDMARead, true},
		{"UC/rdma_write", playerOpts{qpType: uverbs.QPTypeUC}, uverbs.WRRDMAWrite, true},
		// pyverbs: test_relaxed_ordering.RoTestCase.test_ro_rc_traffic, test_ro_ud_traffic — MRs registered with
		// IBV_ACCESS_RELAXED_ORDERING (an optional access right a device may ignore) carry traffic.
		{"RC/relaxed_ordering", playerOpts{qpType: uverbs.QPTypeRC, mrAccess: uverbs.AccessLocalWrite |
			uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRelaxedOrdering}, uverbs.WRSend, false},
		{"UD/relaxed_ordering", playerOpts{qpType: uverbs.QPTypeUD, mrAccess: uverbs.AccessLocalWrite |
			uverbs.AccessRelaxedOrdering}, uverbs.WRSend, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			client, server := e.pair(tc.o)
			if tc.rdma {
				rdmaTraffic(t, client, server, tc.op)
			} else {
				traffic(t, client, server, tc.op)
			}
		})
	}
}

// Inline sends (IBV_SEND_INLINE) up to the granted max_inline_data, posted with PostSend and, on an extended
// QP, with the builder's SetInlineDataList (player.post).
func TestTrafficInline(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  uverbs.SendOps
	}{{"post", 0}, {"builder", uverbs.SendOpSend}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			o := playerOpts{qpType: uverbs.QPTypeRC, msgSize: 64, sendOps: tc.ops,
				cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64}}
			client, server := e.pair(o)
			require.GreaterOrEqual(t, client.qp.Cap().MaxInlineData, uint32(64))
			for i := 0; i < iters; i++ {
				server.postRecv(uint64(i))
				fill(client.buf.Bytes()[:64], i)
				wr := client.sendWR(uverbs.WRSend, 64)
				wr.Flags |= uverbs.SendInline
				client.post(wr)
				// The data was copied at post time: overwriting the buffer now must not change what arrives.
				fill(client.buf.Bytes()[:64], i+1)
				requireSuccess(t, pollOne(t, client.cq), pollOne(t, server.cq))
				checkFill(t, server.buf.Bytes()[server.recvOff():server.recvOff()+64], i)
			}
		})
	}
}

// atomicTraffic is pyverbs' u.atomic_traffic: compare-and-swap or fetch-and-add on the peer's 8-byte word, each
// way, checking the value returned and the value left in memory.
func atomicTraffic(t *testing.T, client, server *player, op uverbs.WROpcode) {
	t.Helper()
	eachWay(client, server, func(i int, s, r *player) {
		target := r.buf.Bytes()[r.recvOff() : r.recvOff()+8]
		old := uint64(0x1000 + i)
		binary.NativeEndian.PutUint64(target, old)
		wr := s.sendWR(op, 8)
		wr.RemoteAddr, wr.RKey = r.mr.Addr()+uint64(r.recvOff()), r.remoteKey()
		want := old + 5
		if op == uverbs.WRAtomicCmpAndSwp {
			wr.CompareAdd, wr.Swap = old, 0xabcdef00+uint64(i)
			want = wr.Swap
		} else {
			wr.CompareAdd = 5
		}
		s.post(wr)
		requireSuccess(t, pollOne(t, s.cq))
		require.Equal(t, old, binary.NativeEndian.Uint64(s.buf.Bytes()[s.sendOff():]), "value returned")
		require.Equal(t, want, binary.NativeEndian.Uint64(target), "value in memory")
		if op == uverbs.WRAtomicCmpAndSwp {
			// A compare that does not match leaves memory alone and still returns the old value.
			wr.CompareAdd, wr.Swap = 1, 2
			s.post(wr)
			requireSuccess(t, pollOne(t, s.cq))
			require.Equal(t, want, binary.NativeEndian.Uint64(s.buf.Bytes()[s.sendOff():]))
			require.Equal(t, want, binary.NativeEndian.Uint64(target))
		}
	})
}

func (e *env) requireAtomics() {
	e.t.Helper()
	e.skipIWARP(gapAtomic)
	if e.dev.AtomicCap == 0 {
		e.t.Skip("device has no atomic operations (atomic_cap NONE)")
	}
}

// pyverbs: test_atomic.AtomicTest.test_atomic_cmp_and_swap, test_atomic_fetch_and_add;
// test_qpex.QpExTestCase.test_qp_ex_rc_atomic_cmp_swp, test_qp_ex_rc_atomic_fetch_add
func TestAtomic(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   uverbs.WROpcode
	}{{"cmp_and_swap", uverbs.WRAtomicCmpAndSwp}, {"fetch_and_add", uverbs.WRAtomicFetchAndAdd}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.requireAtomics()
			client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, msgSize: 8})
			atomicTraffic(t, client, server, tc.op)
		})
	}
}

// SRQ: two RC QPs of the server side receive from one shared receive queue.
func TestSRQTraffic(t *testing.T) {
	e := newEnv(t)
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC, srq: true})
	traffic(t, client, server, uverbs.WRSend)
	a, err := server.srq.Query()
	require.NoError(t, err)
	require.GreaterOrEqual(t, a.MaxWR, uint32(64))
}
