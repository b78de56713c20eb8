package perftest

import (
	"math"
	"sort"
)

// bwReport is print_report_bw's arithmetic. tposted and tcompleted are the run's timestamps (one entry each
// when noPeak), iters the completed iterations (per QP in iteration mode, the sample count in duration mode),
// rate the counter's ticks per microsecond.
func bwReport(p *Params, tposted, tcompleted []int64, iters uint64, rate float64) BWReport {
	numQPs := uint64(p.NumQPs)
	optDelta := uint64(tcompleted[0] - tposted[0])
	if !p.NoPeak {
		n := iters * numQPs
		cqMod := uint64(p.CQMod)
		for i := uint64(0); i < n; i += uint64(p.PostList) {
			for j := roundUp(i+1, cqMod) - 1; j < n; j += cqMod {
				t := uint64(tcompleted[j]-tposted[i]) / (j - i + 1)
				if t < optDelta {
					optDelta = t
				}
			}
			if n%cqMod != 0 {
				j := n - 1
				t := uint64(tcompleted[j]-tposted[i]) / (j - i + 1)
				if t < optDelta {
					optDelta = t
				}
			}
		}
	}
	cyclesToUnits := rate * 1000000
	tsize := p.Size
	n := iters
	if p.TestType != byDuration {
		n *= numQPs
	}
	loc := uint64(0)
	if !p.NoPeak {
		loc = n - 1
	}
	formatFactor := float64(0x100000)
	if p.ReportGbits {
		formatFactor = 125000000
	}
	sum := float64(tcompleted[loc] - tposted[0])
	r := BWReport{Size: p.Size, Iters: n}
	r.BWAvg = float64(tsize) * float64(n) * cyclesToUnits / (sum * formatFactor)
	r.MsgRateAvg = float64(n) * cyclesToUnits / (sum * 1000000)
	var peakUp uint64
	if !p.NoPeak {
		peakUp = tsize * uint64(cyclesToUnits)
	}
	peakDown := optDelta * uint64(formatFactor)
	r.BWPeak = float64(peakUp) / float64(peakDown)
	return r
}

func roundUp(v, a uint64) uint64 {
	if v%a == 0 {
		return v
	}
	return (v/a + 1) * a
}

// latReport is print_report_lat's arithmetic over the iteration timestamps tposted (iters of them).
func latReport(p *Params, tposted []int64, rate float64) LatResult {
	iters := len(tposted)
	measure := iters - 1
	rtt := 2.0
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		rtt = 1
	}
	units, ctu := "usec", rate
	if p.Cycles {
		units, ctu = "cycles", 1
	}
	q := ctu * rtt
	delta := make([]uint64, measure)
	for i := range delta {
		delta[i] = uint64(tposted[i+1] - tposted[i])
	}
	r := LatResult{Size: p.Size, Iters: uint64(iters), Units: units}
	if p.Unsorted {
		r.Unsorted = make([]float64, measure)
		for i, d := range delta {
			r.Unsorted[i] = float64(d) / q
		}
	}
	sort.Slice(delta, func(a, b int) bool { return delta[a] < delta[b] })
	measure -= 2 // LAT_MEASURE_TAIL
	var median uint64
	if (measure-1)%2 != 0 {
		median = (delta[measure/2] + delta[measure/2-1]) / 2
	} else {
		median = delta[measure/2]
	}
	var avgSum, stdevSum float64
	for i := 0; i < measure; i++ {
		avgSum += float64(delta[i]) / q
	}
	avg := avgSum / float64(measure)
	for i := 0; i < measure; i++ {
		tmp := int32(avg - float64(delta[i])/q) // perftest truncates to int here
		stdevSum += float64(int32(math.Pow(float64(tmp), 2)))
	}
	if p.Histogram {
		r.Samples = make([]float64, measure)
		for i := 0; i < measure; i++ {
			r.Samples[i] = float64(delta[i]) / q
		}
	}
	r.Typical = float64(median) / q
	r.Avg = avg
	r.Stdev = math.Sqrt(stdevSum / float64(measure))
	i99 := int(math.Ceil(float64(measure) * 0.99))
	i999 := int(math.Ceil(float64(measure) * 0.999))
	r.Min = float64(delta[0]) / q
	r.Max = float64(delta[measure]) / q
	r.P99 = float64(delta[i99]) / q
	r.P999 = float64(delta[i999]) / q
	return r
}

// latDuration is print_report_lat_duration's arithmetic: average one-way latency and transactions per second
// over a sample window of ticks with iters iterations.
func latDuration(p *Params, ticks int64, iters uint64, rate float64) (lat, tps float64) {
	rtt := 2.0
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		rtt = 1
	}
	t := float64(ticks)
	lat = ((t / rate) / rtt) / float64(iters)
	tps = float64(iters) / (t / (rate * 1000000))
	return lat, tps
}
