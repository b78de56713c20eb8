package conformance

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

var qpTypes = []struct {
	name string
	typ  uverbs.QPType
}{{"RC", uverbs.QPTypeRC}, {"UC", uverbs.QPTypeUC}, {"UD", uverbs.QPTypeUD}}

// randomCap is pyverbs' random_qp_cap: random capacities within the device's limits (bounded so the rings stay
// small).
func randomCap(r *rand.Rand, a *uverbs.DeviceAttr) uverbs.QPCap {
	return uverbs.QPCap{
		MaxSendWR:  1 + uint32(r.Intn(int(min(a.MaxQPWR, 1024)))),
		MaxRecvWR:  1 + uint32(r.Intn(int(min(a.MaxQPWR, 1024)))),
		MaxSendSGE: 1 + uint32(r.Intn(int(min(a.MaxSGE, 8)))),
		MaxRecvSGE: 1 + uint32(r.Intn(int(min(a.MaxSGE, 8)))),
	}
}

// pyverbs: test_qp.QPTest.test_create_{rc,uc,ud}_qp{,_ex}_{no,with}_attr — a new QP is in RESET; "with attr"
// moves it on at once, to INIT (RC, UC) or through to RTS (UD), as ibv_create_qp with a QPAttr does. The _ex
// variants create through ibv_create_qp_ex, which is the same kernel QP_CREATE method goverbs always uses, with
// random capacities.
func TestCreateQP(t *testing.T) {
	for _, tc := range qpTypes {
		for _, withAttr := range []bool{false, true} {
			for _, random := range []bool{false, true} {
				name := fmt.Sprintf("%s/attr=%v/randomcap=%v", tc.name, withAttr, random)
				t.Run(name, func(t *testing.T) {
					e := newEnv(t)
					o := playerOpts{qpType: tc.typ}
					if random {
						o.cap = randomCap(rand.New(rand.NewSource(int64(tc.typ))), e.dev)
					}
					p := e.newPlayer(o)
					want := uverbs.QPStateReset
					if e.bornState() == "INIT" {
						want = uverbs.QPStateInit // an iWARP QP is created in INIT (siw: IDLE)
					}
					if withAttr {
						if tc.typ == uverbs.QPTypeUD {
							p.endpoint()
							require.NoError(t, p.qp.ActivateUD(nil))
							want = uverbs.QPStateRTS
						} else {
							require.NoError(t, p.toInit())
							want = uverbs.QPStateInit
						}
					}
					if !e.queryReportsState() {
						want = uverbs.QPStateReset // 6.1's siw reports no state
					}
					a, err := p.qp.Query(uverbs.QPAttrState)
					require.NoError(t, err)
					require.Equal(t, want.String(), a.State.String())
					got := p.qp.Cap()
					require.GreaterOrEqual(t, got.MaxSendWR, p.o.cap.MaxSendWR)
					require.GreaterOrEqual(t, got.MaxRecvWR, p.o.cap.MaxRecvWR)
					require.GreaterOrEqual(t, got.MaxSendSGE, p.o.cap.MaxSendSGE)
					require.GreaterOrEqual(t, got.MaxRecvSGE, p.o.cap.MaxRecvSGE)
				})
			}
		}
	}
}

// pyverbs: test_qp.QPTest.test_query_{rc,uc,ud}_qp — query right after create: RESET (INIT on an iWARP RNIC),
// and capacities at least those requested.
func TestQueryQP(t *testing.T) {
	for _, tc := range qpTypes {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, random := range []bool{false, true} {
				o := playerOpts{qpType: tc.typ}
				if random {
					o.cap = randomCap(rand.New(rand.NewSource(7)), e.dev)
				}
				p := e.newPlayer(o)
				a, err := p.qp.Query(uverbs.QPAttrState | uverbs.QPAttrCap)
				require.NoError(t, err)
				want := uverbs.QPStateReset
				if e.bornState() == "INIT" { // RNIC
					want = uverbs.QPStateInit
				}
				require.Equal(t, want.String(), a.State.String())
				require.GreaterOrEqual(t, a.Cap.MaxSendWR, p.o.cap.MaxSendWR)
				require.GreaterOrEqual(t, a.Cap.MaxRecvWR, p.o.cap.MaxRecvWR)
				require.GreaterOrEqual(t, a.Cap.MaxSendSGE, p.o.cap.MaxSendSGE)
				require.GreaterOrEqual(t, a.Cap.MaxRecvSGE, p.o.cap.MaxRecvSGE)
				require.GreaterOrEqual(t, a.Cap.MaxInlineData, p.o.cap.MaxInlineData)
			}
		})
	}
}

// pyverbs: test_qp.QPTest.test_modify_ud_qp, test_query_data_in_order — qkey read back in INIT, SQ PSN read back
// in RTS, then back to RESET. (ibv_query_qp_data_in_order has no goverbs counterpart: it is a provider hint that
// rxe answers with 0; the UD QP it is asked on is brought to RTS and queried here.)
func TestModifyUDQP(t *testing.T) {
	e := newEnv(t)
	p := e.newPlayer(playerOpts{qpType: uverbs.QPTypeUD})
	require.NoError(t, p.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateInit, QKey: 0x123, PortNum: uint8(e.pnum)},
		uverbs.QPAttrState|uverbs.QPAttrQKey|uverbs.QPAttrPort|uverbs.QPAttrPKeyIndex))
	a, err := p.qp.Query(uverbs.QPAttrQKey)
	require.NoError(t, err)
	require.Equal(t, uint32(0x123), a.QKey)
	require.NoError(t, p.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState))
	require.NoError(t, p.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateRTS, SQPSN: 0x45}, uverbs.QPAttrState|uverbs.QPAttrSQPSN))
	a, err = p.qp.Query(uverbs.QPAttrSQPSN | uverbs.QPAttrState)
	require.NoError(t, err)
	require.Equal(t, uint32(0x45), a.SQPSN)
	require.Equal(t, "RTS", a.State.String())
	require.NoError(t, p.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateReset}, uverbs.QPAttrState))
	a, err = p.qp.Query(uverbs.QPAttrState)
	require.NoError(t, err)
	require.Equal(t, "RESET", a.State.String())
}

// pyverbs: test_qp.QPTest.test_create_raw_qp_ex_with_illegal_caps_{max_send_wr,max_send_sge,max_recv_sge,
// max_recv_wr} (which, despite the name, create UD QPs) — capacities beyond the device's limits are EINVAL.
func TestNegCreateQPIllegalCaps(t *testing.T) {
	e := newEnv(t)
	pd := e.pd()
	cq := e.cq(100)
	base := uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	cases := []struct {
		name string
		skip bool
		edit func(*uverbs.QPCap)
	}{
		{"max_send_wr", e.dev.MaxQPWR >= 0xffffffff, func(c *uverbs.QPCap) { c.MaxSendWR = 0xffffffff }},
		{"max_send_sge", e.dev.MaxSGE >= 0xffff, func(c *uverbs.QPCap) { c.MaxSendSGE = 0xffff }},
		{"max_recv_sge", e.dev.MaxSGE >= 0xffff, func(c *uverbs.QPCap) { c.MaxRecvSGE = 0xffff }},
		{"max_recv_wr", e.dev.MaxQPWR >= 0xffffffff, func(c *uverbs.QPCap) { c.MaxRecvWR = 0xffffffff }},
		{"max_send_wr=max_qp_wr+1", false, func(c *uverbs.QPCap) { c.MaxSendWR = e.dev.MaxQPWR + 1 }},
		{"max_send_sge=max_sge+1", false, func(c *uverbs.QPCap) { c.MaxSendSGE = e.dev.MaxSGE + 1 }},
		{"max_inline_data=64KiB", false, func(c *uverbs.QPCap) { c.MaxInlineData = 64 << 10 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skipf("device limit allows %s", tc.name)
			}
			c := base
			tc.edit(&c)
			qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: e.dgramType(), SendCQ: cq, RecvCQ: cq, Cap: c})
			if err == nil {
				qp.Close()
			}
			requireErrno(t, err, unix.EINVAL, "cap %+v", c)
		})
	}
}
