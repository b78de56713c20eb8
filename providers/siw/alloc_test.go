package siw

import (
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/verbs"
)

// The data path allocates nothing: posting (doorbell write and inline copies included), receiving, polling,
// arming, and the preallocated statuses of a full queue and of a refusal.
func TestDataPathAllocations(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(testCap)
	f.withNullDoorbell(t)
	c := k.newCQ(64)
	s := k.newSRQ(16, 2)

	_, payload := userBuffer(t, "", 32)
	sgl := []verbs.SGE{{Addr: payload, Length: 32, LKey: 1}}
	sendWRs := []verbs.SendWR{
		{WRID: 1, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendSignaled},
		{WRID: 2, SGL: sgl, Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x1000, RKey: 5},
		{WRID: 3, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendInline},
		{WRID: 4, SGL: sgl, Opcode: verbs.WRRDMARead, RemoteAddr: 0x1000, RKey: 5},
	}
	refused := []verbs.SendWR{{Opcode: verbs.WRAtomicCmpAndSwp}}
	recvWRs := []verbs.RecvWR{{WRID: 1, SGL: sgl}, {WRID: 2, SGL: sgl}}
	wc := make([]verbs.WC, 8)
	var sget uint32

	cases := []struct {
		name string
		fn   func()
	}{
		{"PostSend", func() {
			if n, err := errOf(f.PostSend(sendWRs)); n != len(sendWRs) || err != nil {
				t.Fatalf("PostSend = %d, %v", n, err)
			}
			f.drainSQ()
		}},
		{"PostSendAll", func() {
			if n, err := errOf(f.PostSendAll(sendWRs)); n != len(sendWRs) || err != nil {
				t.Fatalf("PostSendAll = %d, %v", n, err)
			}
			f.drainSQ()
		}},
		{"PostSend full", func() {
			for {
				if _, err := errOf(f.PostSend(sendWRs)); err != nil {
					break
				}
			}
			f.drainSQ()
		}},
		{"PostSend refused", func() { f.PostSend(refused) }},
		{"PostRecv", func() {
			if n, err := errOf(f.PostRecv(recvWRs)); n != len(recvWRs) || err != nil {
				t.Fatalf("PostRecv = %d, %v", n, err)
			}
			for ok := true; ok; _, ok = takeRQE(t, f.rq, &f.rqGet) {
			}
		}},
		{"SRQ PostRecv", func() {
			if n, err := errOf(s.PostRecv(recvWRs)); n != len(recvWRs) || err != nil {
				t.Fatalf("SRQ PostRecv = %d, %v", n, err)
			}
			for ok := true; ok; _, ok = takeRQE(t, s.k, &sget) {
			}
		}},
		{"Poll", func() {
			for i := 0; i < 5; i++ {
				c.produce(abi.SiwCqe{Id: uint64(i), Opcode: abi.SIW_OP_RECEIVE, Flags: abi.SIW_WQE_REM_INVAL})
			}
			if n := pollN(c.Poll(wc)); n != 5 {
				t.Fatalf("Poll = %d", n)
			}
		}},
		{"Poll empty", func() { pollN(c.Poll(wc)) }},
		{"Arm", func() {
			if err := c.Arm(false); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		if a := testing.AllocsPerRun(200, tc.fn); a != 0 {
			t.Errorf("%s: %v allocations per call", tc.name, a)
		}
	}
}

func BenchmarkPostSend(b *testing.B) {
	for _, bc := range []struct {
		name  string
		flags verbs.SendFlags
		batch int
	}{
		{"batch1", verbs.SendSignaled, 1},
		{"batch16", verbs.SendSignaled, 16},
		{"inline64x16", verbs.SendSignaled | verbs.SendInline, 16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			k := newFakeKernel(b)
			f := k.rtsQP(verbs.QPCap{MaxSendWR: 256, MaxRecvWR: 1, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 64})
			f.withNullDoorbell(b)
			_, buf := userBuffer(b, "", 64)
			sgl := []verbs.SGE{{Addr: buf, Length: 64, LKey: 1}}
			wrs := make([]verbs.SendWR, bc.batch)
			for i := range wrs {
				wrs[i] = verbs.SendWR{WRID: uint64(i), SGL: sgl, Opcode: verbs.WRSend, Flags: bc.flags}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := errOf(f.PostSend(wrs)); err != nil {
					b.Fatal(err)
				}
				f.drainSQ()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.batch), "ns/wr")
		})
	}
}

func BenchmarkPoll(b *testing.B) {
	k := newFakeKernel(b)
	c := k.newCQ(256)
	wc := make([]verbs.WC, 16)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 16; j++ {
			c.produce(abi.SiwCqe{Id: uint64(j), Opcode: abi.SIW_OP_SEND})
		}
		if n := pollN(c.Poll(wc)); n != 16 {
			b.Fatalf("Poll = %d", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/wc")
}
