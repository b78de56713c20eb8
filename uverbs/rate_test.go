package uverbs

import "testing"

// The rate conversions agree with libibverbs' (verbs.c) for every rate, both ways.
func TestRateConversions(t *testing.T) {
	for _, c := range []struct {
		r          Rate
		mult, mbps int
		s          string
	}{
		{RateMax, -1, -1, "max"}, {Rate2_5Gbps, 1, 2500, "2.5 Gbps"}, {Rate10Gbps, 4, 10000, "10 Gbps"},
		{Rate120Gbps, 48, 120000, "120 Gbps"}, {Rate14Gbps, -1, 14062, "14 Gbps"}, {Rate100Gbps, -1, 103125, "100 Gbps"},
		{Rate28Gbps, 11, 28125, "28 Gbps"}, {Rate50Gbps, 20, 53125, "50 Gbps"}, {Rate1200Gbps, 480, 1275000, "1200 Gbps"},
		{1, -1, -1, "Rate(1)"}, {25, -1, -1, "Rate(25)"},
	} {
		if c.r.Mult() != c.mult || c.r.Mbps() != c.mbps || c.r.String() != c.s {
			t.Errorf("%d: mult %d mbps %d %q; want %d %d %q", c.r, c.r.Mult(), c.r.Mbps(), c.r, c.mult, c.mbps, c.s)
		}
		if c.mult > 0 && RateFromMult(c.mult) != c.r {
			t.Errorf("RateFromMult(%d) = %v, want %v", c.mult, RateFromMult(c.mult), c.r)
		}
		if c.mbps > 0 && RateFromMbps(c.mbps) != c.r {
			t.Errorf("RateFromMbps(%d) = %v, want %v", c.mbps, RateFromMbps(c.mbps), c.r)
		}
	}
	for r := Rate(0); r < 30; r++ {
		if m := r.Mult(); m > 0 && RateFromMult(m) != r {
			t.Errorf("RateFromMult(%d) = %v, want %v", m, RateFromMult(m), r)
		}
		if m := r.Mbps(); m > 0 && RateFromMbps(m) != r {
			t.Errorf("RateFromMbps(%d) = %v, want %v", m, RateFromMbps(m), r)
		}
	}
	if RateFromMult(3) != RateMax || RateFromMbps(14000) != RateMax || RateFromMult(0) != RateMax {
		t.Error("a multiple or bandwidth no rate has is not RateMax")
	}
}

// The kernel's rdma_flow_label_to_udp_sport, worked by hand.
func TestFlowLabelToUDPSport(t *testing.T) {
	for fl, want := range map[uint32]uint16{0: 0xc000, 1: 0xc001, 0x3fff: 0xffff, 0x4000: 0xc001, 0x12345: 0xe341, 0xfffff: 0xffc0} {
		if got := FlowLabelToUDPSport(fl); got != want {
			t.Errorf("FlowLabelToUDPSport(%#x) = %#x, want %#x", fl, got, want)
		}
	}
}

func TestQPTypeSupported(t *testing.T) {
	caps := uint32(1<<QPTypeRC | 1<<QPTypeUD)
	if !QPTypeSupported(caps, QPTypeRC) || !QPTypeSupported(caps, QPTypeUD) || QPTypeSupported(caps, QPTypeUC) ||
		QPTypeSupported(caps, QPType(0xff)) {
		t.Error("QPTypeSupported")
	}
}
