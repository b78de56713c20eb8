package devinfo

import (
	"testing"

	"github.com/goverbs/goverbs/uverbs"
)

func TestFWVer(t *testing.T) {
	tests := []struct {
		raw    uint64
		driver uverbs.DriverID
		want   string
	}{
		{0, 14, "0.0.0"},
		{16<<32 | 35<<16 | 2000, driverMLX5, "16.35.2000"},
		{16<<32 | 35<<16 | 12, driverMLX5, "16.35.0012"},
		{16<<32 | 35<<16 | 12, 14, "16.35.12"},
		{0xffff_ffff_ffff_ffff, 0, "65535.65535.65535"},
	}
	for _, tt := range tests {
		if got := FWVer(tt.raw, tt.driver); got != tt.want {
			t.Errorf("FWVer(%#x, %d) = %q, want %q", tt.raw, tt.driver, got, tt.want)
		}
	}
}

func TestSortGIDs(t *testing.T) {
	g := []GIDEntry{{Index: 3}, {Index: 0}, {Index: 2}, {Index: 1}}
	sortGIDs(g)
	for i, e := range g {
		if e.Index != i {
			t.Fatalf("order %v", g)
		}
	}
}

func TestPortAttr(t *testing.T) {
	p := portAttr(&uverbs.PortAttr{State: uverbs.PortActive, MaxMTU: uverbs.MTU4096, GIDTblLen: 1024, LID: 7, LinkLayer: 2, PortCapFlags2: 0x32})
	if p.State != 4 || p.MaxMTU != 5 || p.GIDTblLen != 1024 || p.LID != 7 || p.LinkLayer != 2 || p.PortCapFlags2 != 0x32 {
		t.Fatalf("%+v", p)
	}
}
