package main

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchplot"
)

// plotTitles are the panels' titles (the tables' are longer).
var plotTitles = map[string]string{
	"cm/machine":             "rdma_cm connect + disconnect (cmtime), per conn.",
	"objects/cq_create":      "CQ create, per CQ (N held)",
	"objects/qp_create":      "RC QP create, per QP (N held)",
	"cqload/cqload":          "one CQ, N QP pairs: per 64 B SEND",
	"mr/mr_reg":              "memory registration, per call",
	"rsidle/connect_machine": "rsocket set-up, per connection",
	"rsidle/rss_per_conn":    "rsocket memory, per connection",
}

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
		title := plotTitles[c.workload+"/"+c.key]
		if title == "" {
			title = c.title
		}
		ch := benchplot.Chart{Title: title, XLabel: c.xname, YLabel: c.unit, LogX: true, LogY: true}
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
	note := fmt.Sprintf("%s, lab kernel %s, QEMU -icount; C: %s; median of %d; host %s",
		cmp.Or(r.Date, time.Now().UTC().Format("2006-01-02")), r.Kernel, r.PeerLibs, r.Reps, hostCPU())
	var b bytes.Buffer
	if err := benchplot.Grid(&b, "goverbs against rdma-core's C as the number of objects grows", note, charts, 2); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// hostCPU names the machine: its processor model and how many CPUs (the instrument does not depend on it).
func hostCPU() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d × %s", runtime.NumCPU(), model)
}
