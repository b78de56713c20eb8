package benchlab

import "testing"

func TestMedianSpread(t *testing.T) {
	for _, tc := range []struct {
		v              []float64
		median, spread float64
	}{
		{nil, 0, 0},
		{[]float64{4}, 4, 0},
		{[]float64{3, 1, 2}, 2, 1},
		{[]float64{10, 11, 9, 10}, 10, 0.2},
	} {
		if m, s := Median(tc.v), Spread(tc.v); m != tc.median || s != tc.spread {
			t.Errorf("%v: median %v spread %v, want %v %v", tc.v, m, s, tc.median, tc.spread)
		}
	}
	v := []float64{3, 1, 2}
	Median(v)
	if v[0] != 3 {
		t.Error("Median sorted its argument")
	}
}
