package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchplot"
)

// writeSVG draws every plotted curve with both sides and Go/C on the right-hand axis.
func writeSVG(path string, r *results) error {
	var charts []benchplot.Chart
	for _, c := range curves {
		if !c.plot {
			continue
		}
		xs := r.xs(c)
		if len(xs) == 0 {
			continue
		}
		cs, gs := r.series(c, "C"), r.series(c, "Go")
		ch := benchplot.Chart{Title: c.title, XLabel: c.xname, YLabel: c.unit, LogX: true, LogY: true}
		ratio := benchplot.Series{Name: "Go/C"}
		for _, side := range []struct {
			name string
			m    map[int]float64
		}{{"C", cs}, {"Go", gs}} {
			s := benchplot.Series{Name: side.name}
			for _, x := range xs {
				if v, ok := side.m[x]; ok {
					s.X, s.Y = append(s.X, float64(x)), append(s.Y, v)
					if v <= 0 {
						ch.LogY = false
					}
				}
			}
			if len(s.X) > 0 {
				ch.Series = append(ch.Series, s)
			}
		}
		for _, x := range xs {
			cv, okC := cs[x]
			gv, okG := gs[x]
			if okC && okG && cv > 0 {
				ratio.X, ratio.Y = append(ratio.X, float64(x)), append(ratio.Y, gv/cv)
			}
		}
		if len(ratio.X) > 0 {
			ch.Ratio = &ratio
		}
		if len(ch.Series) > 0 {
			charts = append(charts, ch)
		}
	}
	host, _ := os.Hostname()
	note := fmt.Sprintf("scalebench, %s, kernel %s in the lab under QEMU -icount (1 instruction = 1 ns), medians of %d, host %s",
		time.Now().UTC().Format("2006-01-02"), r.Kernel, r.Reps, host)
	var b bytes.Buffer
	if err := benchplot.Grid(&b, "goverbs against rdma-core's C as the number of objects grows", note, charts, 2); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
