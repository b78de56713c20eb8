package uverbs

import (
	"testing"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
)

// nopCQ and nopQP are providers whose data path does nothing, so the benchmarks below measure what the core
// adds to every post and poll: the open/closed check (life.go) and the status-to-error step.
type nopCQ struct{}

func (nopCQ) Poll(wc []verbs.WC) (int, provider.Status)             { return 0, provider.OK }
func (nopCQ) Arm(bool) error                                        { return nil }
func (nopCQ) EventReceived()                                        {}
func (nopCQ) Resize(int, provider.Create[int, int]) (int, error)    { return 0, nil }
func (nopCQ) Destroyed()                                            {}
func (nopQP) PostSend(wrs []verbs.SendWR) (int, provider.Status)    { return len(wrs), provider.OK }
func (nopQP) PostSendAll(wrs []verbs.SendWR) (int, provider.Status) { return len(wrs), provider.OK }
func (nopQP) PostRecv(wrs []verbs.RecvWR) (int, provider.Status)    { return len(wrs), provider.OK }
func (nopQP) StateChanged(verbs.QPState)                            {}
func (nopQP) Destroyed()                                            {}

type nopQP struct{}

func benchObjects() (*CQ, *QP) {
	c := &Context{dpErrs: newDataPathErrors("bench0")}
	return &CQ{ctx: c, prov: nopCQ{}}, &QP{ctx: c, prov: nopQP{}}
}

// BenchmarkCorePoll is CQ.Poll's own cost over a provider that does nothing.
func BenchmarkCorePoll(b *testing.B) {
	cq, _ := benchObjects()
	wc := make([]WC, 16)
	b.ReportAllocs()
	for b.Loop() {
		cq.Poll(wc)
	}
}

// BenchmarkCorePostSend is QP.PostSend's own cost over a provider that does nothing.
func BenchmarkCorePostSend(b *testing.B) {
	_, qp := benchObjects()
	wrs := []SendWR{{Opcode: verbs.WRSend}}
	b.ReportAllocs()
	for b.Loop() {
		qp.PostSend(wrs)
	}
}

// BenchmarkCorePollParallel is CQ.Poll from GOMAXPROCS goroutines on one CQ: the shared cache line the
// open/closed state lives on is what it measures.
func BenchmarkCorePollParallel(b *testing.B) {
	cq, _ := benchObjects()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		wc := make([]WC, 16)
		for pb.Next() {
			cq.Poll(wc)
		}
	})
}

// BenchmarkCoreWRBuilder is a one-request chain through the work-request builder (StartWR, Send, SetSGE,
// Complete) over a provider that does nothing: what the builder adds to BenchmarkCorePostSend.
func BenchmarkCoreWRBuilder(b *testing.B) {
	_, qp := benchObjects()
	qp.sendOps, qp.cap = SendOpSend, QPCap{MaxSendWR: 1, MaxSendSGE: 1}
	b.ReportAllocs()
	for b.Loop() {
		qp.StartWR().Send(1, SendSignaled).SetSGE(1, 0x1000, 64).Complete()
	}
}
