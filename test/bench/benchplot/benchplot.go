// Package benchplot draws a benchmark's curves as a self-contained SVG, so that a bench command can write
// the plot it measured into docs.
//
// The output is a single SVG 1.1 document (width, height and viewBox set, no scripts, no external
// resources) that renders in a browser and on GitHub. It is deterministic: the same input gives the same
// bytes. A series name keeps its colour in every panel of one Grid.
//
// Errors: every error that Validate or Grid returns wraps one of the exported Err* sentinels with context
// (chart, series, point); test for a kind with errors.Is, e.g. errors.Is(err, benchplot.ErrNonPositiveLog).
package benchplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Series is one line with point markers; X and Y have the same length.
type Series struct {
	Name string
	X, Y []float64
}

// Chart is one panel of a Grid.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool // logarithmic axes; values <= 0 are an error on a log axis
	Series                []Series
	// Ratio, if set, is drawn against a linear right-hand axis labelled "Go/C", with a dashed reference line
	// at 1.00. It shares the X axis (and LogX) with Series.
	Ratio *Series
}

// The kinds of error Validate and Grid return (wrapped with context; match them with errors.Is).
var (
	ErrNoCharts       = errors.New("benchplot: no charts")
	ErrBadCols        = errors.New("benchplot: cols must be at least 1")
	ErrNoSeries       = errors.New("benchplot: chart has no series")
	ErrEmptySeries    = errors.New("benchplot: series has no points")
	ErrLengthMismatch = errors.New("benchplot: len(X) != len(Y)")
	ErrNonFinite      = errors.New("benchplot: value is NaN or infinite")
	ErrNonPositiveLog = errors.New("benchplot: value <= 0 on a logarithmic axis")
)

// Validate reports the first problem that would keep c from being drawn: no series at all, a series with
// no points, len(X) != len(Y), a NaN or infinite value, or a value <= 0 on a logarithmic axis.
func (c Chart) Validate() error {
	if len(c.Series) == 0 && c.Ratio == nil {
		return fmt.Errorf("chart %q: %w", c.Title, ErrNoSeries)
	}
	for _, s := range c.Series {
		if err := s.validate(c.LogX, c.LogY); err != nil {
			return fmt.Errorf("chart %q: %w", c.Title, err)
		}
	}
	if c.Ratio != nil {
		if err := c.Ratio.validate(c.LogX, false); err != nil {
			return fmt.Errorf("chart %q: ratio: %w", c.Title, err)
		}
	}
	return nil
}

func (s Series) validate(logX, logY bool) error {
	if len(s.X) != len(s.Y) {
		return fmt.Errorf("series %q: %d x, %d y: %w", s.Name, len(s.X), len(s.Y), ErrLengthMismatch)
	}
	if len(s.X) == 0 {
		return fmt.Errorf("series %q: %w", s.Name, ErrEmptySeries)
	}
	for i := range s.X {
		for _, p := range []struct {
			axis string
			v    float64
			log  bool
		}{{"x", s.X[i], logX}, {"y", s.Y[i], logY}} {
			if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
				return fmt.Errorf("series %q point %d: %s=%v: %w", s.Name, i, p.axis, p.v, ErrNonFinite)
			}
			if p.log && p.v <= 0 {
				return fmt.Errorf("series %q point %d: %s=%v: %w", s.Name, i, p.axis, p.v, ErrNonPositiveLog)
			}
		}
	}
	return nil
}

// Panel and page geometry, in px.
const (
	panelW, panelH = 480, 320
	headH, footH   = 44, 28
	legendRowH     = 14
)

// palette is a fixed set of colours that stay distinguishable (Okabe–Ito, then greys/browns).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#8C564B"}

// ratioColor draws the Ratio series, which is not in the palette so it never clashes with a Series.
const ratioColor = "#222222"

// Grid writes one SVG document to w: a main title at the top, the charts in a grid of cols columns (each
// panel 480x320 px) and a one-line note (e.g. date and machine) at the bottom. The charts are validated
// first; nothing is written if one is invalid.
func Grid(w io.Writer, title, note string, charts []Chart, cols int) error {
	if len(charts) == 0 {
		return ErrNoCharts
	}
	if cols < 1 {
		return fmt.Errorf("cols=%d: %w", cols, ErrBadCols)
	}
	for i, c := range charts {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("benchplot: chart %d: %w", i, err)
		}
	}
	cols = min(cols, len(charts))
	rows := (len(charts) + cols - 1) / cols
	// Colours by first appearance over the whole grid, so a name has one colour in every panel.
	colors := map[string]string{}
	var n int
	for _, c := range charts {
		for _, s := range c.Series {
			if _, ok := colors[s.Name]; !ok {
				colors[s.Name] = palette[n%len(palette)]
				n++
			}
		}
	}
	W, H := float64(cols*panelW), float64(headH+rows*panelH+footH)
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%s" height="%s" viewBox="0 0 %s %s" font-family="Helvetica, Arial, sans-serif">`+"\n", f(W), f(H), f(W), f(H))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", f(W), f(H))
	text(&b, W/2, 28, "middle", `font-size="18" font-weight="bold"`, title)
	for i, c := range charts {
		drawChart(&b, c, float64(i%cols*panelW), float64(headH+i/cols*panelH), colors)
	}
	text(&b, W/2, H-10, "middle", `font-size="11" fill="#555555"`, note)
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// axis maps data values onto pixels [p0, p1] over the domain [lo, hi] (log10 of it on a log axis).
type axis struct {
	log            bool
	lo, hi, p0, p1 float64
	ticks, minor   []float64
	labels         []string
}

func newAxis(vals []float64, log bool, p0, p1 float64) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	a := axis{log: log, p0: p0, p1: p1}
	if log {
		a.ticks, a.minor, a.lo, a.hi = logTicks(lo, hi)
		a.lo, a.hi = math.Log10(a.lo), math.Log10(a.hi)
		for _, t := range a.ticks {
			a.labels = append(a.labels, siLabel(t))
		}
	} else {
		var step float64
		a.ticks, step = linTicks(lo, hi)
		a.lo, a.hi = a.ticks[0], a.ticks[len(a.ticks)-1]
		dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
		for _, t := range a.ticks {
			if step >= 1000 {
				a.labels = append(a.labels, siLabel(t))
			} else {
				a.labels = append(a.labels, strconv.FormatFloat(t, 'f', dec, 64))
			}
		}
	}
	return a
}

func (a axis) px(v float64) float64 {
	if a.log {
		v = math.Log10(v)
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// logTicks returns the ticks (powers of ten, every k-th decade when there are more than 8) covering
// [lo, hi] > 0, the minor grid values (2..9 times each decade, when every decade is ticked) and the domain:
// the decades at or around lo and hi.
func logTicks(lo, hi float64) (ticks, minor []float64, dlo, dhi float64) {
	e0, e1 := floorExp(lo), floorExp(hi)
	if math.Pow10(e1) < hi || e1 == e0 {
		e1++
	}
	step := (e1 - e0 + 7) / 8
	e0 = e0 - ((e0%step)+step)%step // align to the step, so that 1 stays a tick
	for (e1-e0)%step != 0 {
		e1++
	}
	for e := e0; e <= e1; e += step {
		ticks = append(ticks, math.Pow10(e))
		if step == 1 && e < e1 {
			for m := 2; m <= 9; m++ {
				minor = append(minor, float64(m)*math.Pow10(e))
			}
		}
	}
	return ticks, minor, math.Pow10(e0), math.Pow10(e1)
}

// floorExp is floor(log10(v)) for v > 0, exact at powers of ten (math.Log10(1000) is 2.9999999999999996).
func floorExp(v float64) int {
	e := int(math.Floor(math.Log10(v)))
	for math.Pow10(e+1) <= v {
		e++
	}
	for math.Pow10(e) > v {
		e--
	}
	return e
}

// linTicks returns about 5 ticks in 1-2-5 steps covering [lo, hi], and the step.
func linTicks(lo, hi float64) ([]float64, float64) {
	if lo == hi {
		d := math.Max(math.Abs(lo)/2, 1)
		lo, hi = lo-d, hi+d
	}
	raw := (hi - lo) / 5
	mag := math.Pow10(floorExp(raw))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag*(1+1e-9) {
			step = m * mag
			break
		}
	}
	i0, i1 := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	var t []float64
	for i := i0; i <= i1; i++ {
		v := i * step
		if v == 0 {
			v = 0 // no -0
		}
		t = append(t, v)
	}
	return t, step
}

// siLabel writes v as 1, 10, 100, 1k, 10k, 1M, 2.5G, 0.01.
func siLabel(v float64) string {
	for _, u := range []struct {
		div float64
		sfx string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 4, 64) + u.sfx
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func drawChart(b *bytes.Buffer, c Chart, ox, oy float64, colors map[string]string) {
	type item struct{ name, color string }
	var items []item
	for _, s := range c.Series {
		items = append(items, item{s.Name, colors[s.Name]})
	}
	if c.Ratio != nil {
		name := c.Ratio.Name
		if name == "" {
			name = "Go/C"
		}
		items = append(items, item{name, ratioColor})
	}
	left, right := ox+62, ox+panelW-16
	if c.Ratio != nil {
		right = ox + panelW - 54
	}
	// Legend rows, wrapped to the plot's width.
	type placed struct {
		item
		x   float64
		row int
	}
	var leg []placed
	x, row := left, 0
	for _, it := range items {
		w := 24 + 6.2*float64(len([]rune(it.name))) + 14
		if x > left && x+w > right {
			x, row = left, row+1
		}
		leg = append(leg, placed{it, x, row})
		x += w
	}
	top, bottom := oy+34+float64(row+1)*legendRowH, oy+panelH-46

	text(b, ox+panelW/2, oy+18, "middle", `font-size="13" font-weight="bold"`, c.Title)
	var xs, ys []float64
	for _, s := range c.Series {
		xs, ys = append(xs, s.X...), append(ys, s.Y...)
	}
	if c.Ratio != nil {
		xs = append(xs, c.Ratio.X...)
	}
	if len(ys) == 0 { // only a ratio: a placeholder left axis
		ys = []float64{1}
	}
	ax, ay := newAxis(xs, c.LogX, left, right), newAxis(ys, c.LogY, bottom, top)

	// Grid lines, then the frame, tick labels and axis labels.
	for _, v := range ax.minor {
		line(b, ax.px(v), top, ax.px(v), bottom, `stroke="#f0f0f0"`)
	}
	for _, v := range ay.minor {
		line(b, left, ay.px(v), right, ay.px(v), `stroke="#f0f0f0"`)
	}
	for i, v := range ax.ticks {
		line(b, ax.px(v), top, ax.px(v), bottom, `stroke="#dddddd"`)
		text(b, ax.px(v), bottom+14, "middle", `font-size="10"`, ax.labels[i])
	}
	for i, v := range ay.ticks {
		line(b, left, ay.px(v), right, ay.px(v), `stroke="#dddddd"`)
		text(b, left-5, ay.px(v)+3.5, "end", `font-size="10"`, ay.labels[i])
	}
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#888888"/>`+"\n",
		f(left), f(top), f(right-left), f(bottom-top))
	text(b, (left+right)/2, oy+panelH-12, "middle", `font-size="11"`, c.XLabel)
	my := (top + bottom) / 2
	text(b, ox+16, my, "middle", fmt.Sprintf(`font-size="11" transform="rotate(-90 %s %s)"`, f(ox+16), f(my)), c.YLabel)

	for _, s := range c.Series {
		series(b, s, ax, ay, colors[s.Name])
	}
	if c.Ratio != nil {
		ar := newAxis(append(append([]float64{}, c.Ratio.Y...), 1), false, bottom, top)
		for i, v := range ar.ticks {
			line(b, right, ar.px(v), right+4, ar.px(v), `stroke="#888888"`)
			text(b, right+6, ar.px(v)+3.5, "start", `font-size="10"`, ar.labels[i])
		}
		line(b, left, ar.px(1), right, ar.px(1), `stroke="#555555" stroke-dasharray="5 4"`)
		ly := ar.px(1) - 3
		if ly-top < 10 { // the line is at the top edge: label it below, clear of the legend
			ly = ar.px(1) + 10
		}
		text(b, left+4, ly, "start", `font-size="9" fill="#555555"`, "1.00")
		rx := ox + panelW - 10
		text(b, rx, my, "middle", fmt.Sprintf(`font-size="11" transform="rotate(-90 %s %s)"`, f(rx), f(my)), "Go/C")
		series(b, *c.Ratio, ax, ar, ratioColor)
	}

	for _, l := range leg {
		y := oy + 34 + float64(l.row)*legendRowH
		line(b, l.x, y-4, l.x+18, y-4, fmt.Sprintf(`stroke="%s" stroke-width="2"`, l.color))
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", f(l.x+9), f(y-4), l.color)
		text(b, l.x+22, y, "start", `font-size="11"`, l.name)
	}
}

func series(b *bytes.Buffer, s Series, ax, ay axis, color string) {
	pts := make([]string, len(s.X))
	for i := range s.X {
		pts[i] = f(ax.px(s.X[i])) + "," + f(ay.px(s.Y[i]))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.75" stroke-linejoin="round"/>`+"\n",
		strings.Join(pts, " "), color)
	for _, p := range pts {
		xy := strings.SplitN(p, ",", 2)
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], color)
	}
}

func line(b *bytes.Buffer, x1, y1, x2, y2 float64, attrs string) {
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>`+"\n", f(x1), f(y1), f(x2), f(y2), attrs)
}

func text(b *bytes.Buffer, x, y float64, anchor, attrs, s string) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s" %s>`, f(x), f(y), anchor, attrs)
	xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// f formats a coordinate with one decimal, without "-0.0".
func f(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
