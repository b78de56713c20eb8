package mlx5

import (
	"testing"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
)

// TestPostStateGate checks the QP's post gate in every state, on a QP with its own receive queue and on one that
// receives from an SRQ, with and without a thread domain: sends (one request, through PostOne, or several, and
// PostSendAll) from RTS and SQD only, receives from every state but RESET, and a QP on an SRQ answers NoRecvQueue
// before anything else, as rdma-core's mlx5_post_recv (no receive queue) and its state checks do.
func TestPostStateGate(t *testing.T) {
	for _, inTD := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "thread domain"}[inTD], func(t *testing.T) {
			g := newGlue(t, 512)
			var dom provider.ParentDomain
			if inTD {
				dom = g.domain(g.td(), nil)
			}
			cq, cqn := g.cqIn(64, dom)
			srq := g.srqIn(8, 1, dom)
			cp := verbs.QPCap{MaxSendWR: 32, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}
			own := g.qpIn(verbs.QPTypeRC, cp, cq, cq, cqn, cqn, nil, dom)
			onSRQ := g.qpIn(verbs.QPTypeRC, cp, cq, cq, cqn, cqn, srq, dom)
			if own.single != inTD || onSRQ.single != inTD {
				t.Fatalf("single: %v, %v; want %v", own.single, onSRQ.single, inTD)
			}
			src, slk := g.mr(4096)
			one := []hw.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGL: []hw.SGE{{Addr: addrOf(src), Length: 8, LKey: slk}}}}
			two := []hw.SendWR{one[0], one[0]}
			recv := []hw.RecvWR{{WRID: 2, SGL: []hw.SGE{{Addr: addrOf(src), Length: 64, LKey: slk}}}}

			check := func(what string, wantSend, wantRecv bool) {
				t.Helper()
				for _, q := range []*qpAdapter{own, onSRQ} {
					for _, c := range []struct {
						name string
						wrs  []hw.SendWR
						post func([]hw.SendWR) (int, provider.Status)
					}{{"PostSend(1)", one, q.PostSend}, {"PostSend(2)", two, q.PostSend}, {"PostSendAll(2)", two, q.PostSendAll}} {
						n, st := c.post(c.wrs)
						if wantSend && (n != len(c.wrs) || st != provider.OK) || !wantSend && (n != 0 || st != provider.NotReady) {
							t.Errorf("%s: QP %#x %s = %d, %v; may send: %v", what, q.QPN, c.name, n, st, wantSend)
						}
					}
				}
				n, st := own.PostRecv(recv)
				if wantRecv && (n != 1 || st != provider.OK) || !wantRecv && (n != 0 || st != provider.NotReady) {
					t.Errorf("%s: PostRecv = %d, %v; may receive: %v", what, n, st, wantRecv)
				}
				if n, st := onSRQ.PostRecv(recv); n != 0 || st != provider.NoRecvQueue {
					t.Errorf("%s: PostRecv on a QP on an SRQ = %d, %v, want 0, NoRecvQueue", what, n, st)
				}
			}
			check("created", false, false)
			for _, s := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD,
				verbs.QPStateSQE, verbs.QPStateErr, verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS} {
				own.StateChanged(s)
				onSRQ.StateChanged(s)
				check(s.String(), s == verbs.QPStateRTS || s == verbs.QPStateSQD, s != verbs.QPStateReset)
			}
		})
	}
}
