package rxe

import (
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
)

// The data path allocates nothing: posting (including the doorbell write and inline copies), receiving and
// polling, and the preallocated errors of a full queue.
func TestDataPathAllocations(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(testCap)
	c := k.newCQ(63)
	s, skq := k.newSRQ(15, 2)

	_, payload := userBuffer(t, "", 32)
	sgl := []verbs.SGE{{Addr: payload, Length: 32, LKey: 1}}
	sends := []verbs.SendWR{
		{WRID: 1, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendSignaled},
		{WRID: 2, SGL: sgl, Opcode: verbs.WRRDMAWriteWithImm, RemoteAddr: 0x1000, RKey: 5, Imm: 7},
		{WRID: 3, SGL: sgl, Opcode: verbs.WRSend, Flags: verbs.SendInline},
	}
	recvs := []verbs.RecvWR{{WRID: 1, SGL: sgl}, {WRID: 2, SGL: sgl}}
	wc := make([]verbs.WC, 8)

	drain := func(q queue) {
		for {
			if _, ok := consume(q); !ok {
				return
			}
			retire(q)
		}
	}
	cases := []struct {
		name string
		fn   func()
	}{
		{"PostSend", func() {
			if n, err := errOf(f.PostSend(sends)); n != len(sends) || err != nil {
				t.Fatalf("PostSend = %d, %v", n, err)
			}
			drain(f.sq)
		}},
		{"PostSend full", func() {
			for {
				if _, err := errOf(f.PostSend(sends)); err != nil {
					break
				}
			}
			drain(f.sq)
		}},
		{"PostRecv", func() {
			if n, err := errOf(f.PostRecv(recvs)); n != len(recvs) || err != nil {
				t.Fatalf("PostRecv = %d, %v", n, err)
			}
			drain(f.rq)
		}},
		{"SRQ PostRecv", func() {
			if n, err := errOf(s.PostRecv(recvs)); n != len(recvs) || err != nil {
				t.Fatalf("SRQ PostRecv = %d, %v", n, err)
			}
			drain(skq)
		}},
		{"Poll", func() {
			for i := 0; i < 5; i++ {
				c.produce(abi.IbUverbsWc{WrId: uint64(i), WcFlags: kernelWCWithImm})
			}
			if n := pollN(c.Poll(wc)); n != 5 {
				t.Fatalf("Poll = %d", n)
			}
		}},
		{"Poll empty", func() { pollN(c.Poll(wc)) }},
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
				// The kernel's side: take everything back (one store, outside the measured code's locks).
				f.sq.release((f.sq.produced() - 1) & f.sq.mask)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.batch), "ns/wr")
		})
	}
}

func BenchmarkPostRecv(b *testing.B) {
	k := newFakeKernel(b)
	f := k.newQP(verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1}, false)
	f.StateChanged(verbs.QPStateInit)
	wrs := make([]verbs.RecvWR, 16)
	for i := range wrs {
		wrs[i] = verbs.RecvWR{WRID: uint64(i), SGL: []verbs.SGE{{Addr: 0x1000, Length: 4096, LKey: 1}}}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := errOf(f.PostRecv(wrs)); err != nil {
			b.Fatal(err)
		}
		f.rq.release((f.rq.produced() - 1) & f.rq.mask)
	}
}

func BenchmarkPoll(b *testing.B) {
	k := newFakeKernel(b)
	c := k.newCQ(255)
	wc := make([]verbs.WC, 16)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		// The kernel's side: make 16 completions available (one producer store; the slots keep old contents).
		c.k.publish((c.k.consumer() + 15) & c.k.mask)
		if n := pollN(c.Poll(wc)); n != 16 {
			b.Fatalf("Poll = %d", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/wc")
}
