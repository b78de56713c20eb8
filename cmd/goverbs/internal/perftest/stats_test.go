package perftest

import (
	"math"
	"testing"
)

func posInf() float64 { return math.Inf(1) }
func nan() float64    { return math.NaN() }

func TestLatReport(t *testing.T) {
	// 11 samples, gaps 2000..11000 ns (with one outlier): round trip halves for write (rtt factor 2).
	ts := []int64{0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000, 40000}
	r := latReport(&Params{Verb: VerbWrite, Size: 2}, ts, 1000)
	eq(t, uint64(11), r.Iters)
	near(t, 1.0, r.Min, 1e-9)     // 2000 ns / 1000 / 2
	near(t, 1.0, r.Typical, 1e-9) // median of the 8 smallest
	near(t, 1.0, r.Avg, 1e-9)     // average of the 8 smallest
	near(t, 1.0, r.Max, 1e-9)     // delta[measure] is the 9th smallest
	near(t, 0.0, r.Stdev, 1e-9)
	rr := latReport(&Params{Verb: VerbRead, Size: 2}, ts, 1000)
	near(t, 2.0, rr.Min, 1e-9) // reads are not halved
}

func TestBWReport(t *testing.T) {
	p := &Params{Size: 65536, NumQPs: 1, PostList: 1, CQMod: 1, NoPeak: true}
	// 1000 messages of 64 KiB in 1 s: 62.5 MiB/s, 0.001 Mpps.
	r := bwReport(p, []int64{0}, []int64{1e9}, 1000, 1000)
	near(t, 62.5, r.BWAvg, 1e-9)
	near(t, 0.001, r.MsgRateAvg, 1e-12)
	eq(t, 0.0, r.BWPeak)
	p.ReportGbits = true
	r = bwReport(p, []int64{0}, []int64{1e9}, 1000, 1000)
	near(t, 0.524288, r.BWAvg, 1e-9)

	// Peak: 4 messages posted at 0,10,20,30 and completed at 10,20,30,40 (cq_mod 1): best is 10 ticks/msg.
	q := &Params{Size: 1000, NumQPs: 1, PostList: 1, CQMod: 1, Iters: 4}
	r = bwReport(q, []int64{0, 10, 20, 30}, []int64{10, 20, 30, 40}, 4, 1000)
	near(t, 1000*1e9/10/float64(0x100000), r.BWPeak, 1e-6)
	near(t, 4*1000*1e9/40/float64(0x100000), r.BWAvg, 1e-6)
}

func TestLatDuration(t *testing.T) {
	lat, tps := latDuration(&Params{Verb: VerbSend}, 2e9, 1000, 1000)
	near(t, 1000.0, lat, 1e-9) // 2 s / 1000 round trips / 2
	near(t, 500.0, tps, 1e-9)
}
