package benchplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := Series{Name: "Go", X: []float64{1, 2}, Y: []float64{3, 4}}
	for _, tc := range []struct {
		name string
		c    Chart
		want error
	}{
		{"ok", Chart{Series: []Series{ok}}, nil},
		{"ratio only", Chart{Ratio: &ok}, nil},
		{"no series", Chart{}, ErrNoSeries},
		{"empty series", Chart{Series: []Series{{Name: "C"}}}, ErrEmptySeries},
		{"mismatch", Chart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1}}}}, ErrLengthMismatch},
		{"NaN", Chart{Series: []Series{{X: []float64{1}, Y: []float64{math.NaN()}}}}, ErrNonFinite},
		{"Inf", Chart{Series: []Series{{X: []float64{math.Inf(-1)}, Y: []float64{1}}}}, ErrNonFinite},
		{"zero on log y", Chart{LogY: true, Series: []Series{{X: []float64{1, 2}, Y: []float64{5, 0}}}}, ErrNonPositiveLog},
		{"negative on log x", Chart{LogX: true, Series: []Series{{X: []float64{-1}, Y: []float64{5}}}}, ErrNonPositiveLog},
		{"zero on linear y", Chart{Series: []Series{{X: []float64{1}, Y: []float64{0}}}}, nil},
		{"bad ratio", Chart{Series: []Series{ok}, Ratio: &Series{X: []float64{1}, Y: []float64{math.NaN()}}}, ErrNonFinite},
		{"ratio on log x", Chart{LogX: true, Series: []Series{ok}, Ratio: &Series{X: []float64{0}, Y: []float64{1}}}, ErrNonPositiveLog},
	} {
		err := tc.c.Validate()
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate() = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestGridErrors(t *testing.T) {
	var b bytes.Buffer
	if err := Grid(&b, "t", "", nil, 1); !errors.Is(err, ErrNoCharts) {
		t.Errorf("no charts: %v", err)
	}
	if err := Grid(&b, "t", "", sampleCharts(), 0); !errors.Is(err, ErrBadCols) {
		t.Errorf("cols=0: %v", err)
	}
	bad := Chart{LogY: true, Series: []Series{{Name: "C", X: []float64{1}, Y: []float64{0}}}}
	if err := Grid(&b, "t", "", []Chart{bad}, 1); !errors.Is(err, ErrNonPositiveLog) {
		t.Errorf("log zero: %v", err)
	}
	if b.Len() != 0 {
		t.Errorf("wrote %d bytes on error", b.Len())
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi   float64
		want     []float64
		dlo, dhi float64
	}{
		{1, 1000, []float64{1, 10, 100, 1000}, 1, 1000},
		{3.2, 870, []float64{1, 10, 100, 1000}, 1, 1000},
		{100, 100, []float64{100, 1000}, 100, 1000},
		{0.05, 2, []float64{0.01, 0.1, 1, 10}, 0.01, 10},
		{1, 1e12, []float64{1, 100, 1e4, 1e6, 1e8, 1e10, 1e12}, 1, 1e12},
	} {
		got, _, dlo, dhi := logTicks(tc.lo, tc.hi)
		if !reflect.DeepEqual(got, tc.want) || dlo != tc.dlo || dhi != tc.dhi {
			t.Errorf("logTicks(%v, %v) = %v [%v, %v], want %v [%v, %v]", tc.lo, tc.hi, got, dlo, dhi, tc.want, tc.dlo, tc.dhi)
		}
	}
	var labels []string
	for _, v := range []float64{1, 10, 100, 1000, 1e4, 1e5, 1e6, 2.5e9, 0.01} {
		labels = append(labels, siLabel(v))
	}
	if got, want := strings.Join(labels, " "), "1 10 100 1k 10k 100k 1M 2.5G 0.01"; got != want {
		t.Errorf("labels %q, want %q", got, want)
	}
}

func TestLinTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 10, []float64{0, 2, 4, 6, 8, 10}},
		{0.93, 1.31, []float64{0.9, 1, 1.1, 1.2, 1.3, 1.4}},
		{3, 47, []float64{0, 10, 20, 30, 40, 50}},
		{5, 5, []float64{2, 3, 4, 5, 6, 7, 8}},
	} {
		got, _ := linTicks(tc.lo, tc.hi)
		if len(got) != len(tc.want) {
			t.Errorf("linTicks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("linTicks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
				break
			}
		}
	}
}

func TestDeterministicValidXML(t *testing.T) {
	var a, b bytes.Buffer
	if err := Grid(&a, "Ping-pong <RC> & \"UD\"", "2025-01-01 · host", sampleCharts(), 2); err != nil {
		t.Fatal(err)
	}
	if err := Grid(&b, "Ping-pong <RC> & \"UD\"", "2025-01-01 · host", sampleCharts(), 2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renders differ")
	}
	d := xml.NewDecoder(bytes.NewReader(a.Bytes()))
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("XML: %v", err)
		}
		if s, ok := tok.(xml.StartElement); ok && root == "" {
			root = s.Name.Local
			attrs := map[string]string{}
			for _, at := range s.Attr {
				attrs[at.Name.Local] = at.Value
			}
			if attrs["width"] != "960" || attrs["height"] != "712" || attrs["viewBox"] != "0 0 960 712" {
				t.Errorf("root attrs %v", attrs)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root %q", root)
	}
	out := a.String()
	if !strings.Contains(out, "Ping-pong &lt;RC&gt; &amp; &#34;UD&#34;") {
		t.Error("title not escaped")
	}
	// "C" and "Go" keep their colours across panels.
	for _, want := range []string{`stroke="#0072B2"`, `stroke="#D55E00"`} {
		if n := strings.Count(out, want); n < 6 {
			t.Errorf("%s appears %d times", want, n)
		}
	}
	for _, lbl := range []string{">1k<", ">10k<", ">Go/C<", ">1.00<"} {
		if !strings.Contains(out, lbl) {
			t.Errorf("missing %s", lbl)
		}
	}
}

func sampleCharts() []Chart {
	sizes := []float64{8, 64, 512, 4096, 32768, 262144}
	c := []float64{2.1, 2.2, 2.6, 4.0, 12.5, 80}
	g := []float64{2.4, 2.5, 2.9, 4.3, 13.1, 82}
	ratio := make([]float64, len(c))
	for i := range c {
		ratio[i] = g[i] / c[i]
	}
	return []Chart{
		{Title: "RC ping-pong latency", XLabel: "message size (bytes)", YLabel: "latency (µs)", LogX: true, LogY: true,
			Series: []Series{{"C", sizes, c}, {"Go", sizes, g}}, Ratio: &Series{X: sizes, Y: ratio}},
		{Title: "RC bandwidth", XLabel: "message size (bytes)", YLabel: "Gbit/s", LogX: true,
			Series: []Series{{"Go", sizes, []float64{0.1, 0.8, 5, 20, 38, 39}}, {"C", sizes, []float64{0.1, 0.9, 5.5, 21, 38.5, 39.2}}}},
		{Title: "Messages per second", XLabel: "queue depth", YLabel: "Mmsg/s",
			Series: []Series{{"C", []float64{1, 2, 4, 8, 16}, []float64{1.1, 2.0, 3.7, 6.1, 7.9}},
				{"Go", []float64{1, 2, 4, 8, 16}, []float64{1.0, 1.9, 3.5, 5.8, 7.6}},
				{"Go (batched)", []float64{1, 2, 4, 8, 16}, []float64{1.2, 2.2, 4.0, 6.6, 8.4}}}},
	}
}

// TestWriteSample writes the sample grid to $BENCHPLOT_SAMPLE (skipped when unset), for looking at.
func TestWriteSample(t *testing.T) {
	path := os.Getenv("BENCHPLOT_SAMPLE")
	if path == "" {
		t.Skip("BENCHPLOT_SAMPLE not set")
	}
	var b bytes.Buffer
	if err := Grid(&b, "goverbs vs C (sample)", "2025-01-01 · sample data · benchplot", sampleCharts(), 2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func Example() {
	chart := Chart{
		Title: "latency", XLabel: "bytes", YLabel: "µs", LogX: true,
		Series: []Series{{Name: "Go", X: []float64{8, 64, 512}, Y: []float64{2.4, 2.5, 2.9}}},
	}
	fmt.Println(Grid(io.Discard, "sample", "today", []Chart{chart}, 1))
	chart.LogY = true
	chart.Series[0].Y[1] = 0
	err := chart.Validate()
	fmt.Println(errors.Is(err, ErrNonPositiveLog))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// chart "latency": series "Go" point 1: y=0: benchplot: value <= 0 on a logarithmic axis
}
