package main

import (
	"fmt"
	"sort"
	"strings"
)

// results is what the lab run measured: each point's median per side, written as results.json.
type results struct {
	Date     string  `json:"date"` // the run's day (UTC)
	Kernel   string  `json:"kernel"`
	Reps     int     `json:"reps"`
	PeerLibs string  `json:"peer_libs"`
	Points   []point `json:"points"`
}

type point struct {
	Workload string  `json:"workload"`
	Key      string  `json:"key"`
	Side     string  `json:"side"` // "C" or "Go"
	X        int     `json:"x"`
	Value    float64 `json:"value"`
	Spread   float64 `json:"spread"`
}

func (r *results) add(workload, key, side string, x int, v, spread float64) {
	r.Points = append(r.Points, point{workload, key, side, x, v, spread})
}

// A curve is how one measured key is shown: its title, the unit after scaling, and the x axis.
type curve struct {
	workload, key string
	title, unit   string
	scale         float64 // value × scale is in unit
	xname         string
	plot          bool
	perPage       bool // divided by the 4 KiB pages of x (bytes)
}

var curves = []curve{
	{"cm", "machine", "rdma_cm set-up and tear-down per connection (cmtime -c N): the machine's work (processes, kernel threads, softirqs)", "k-inst", 1, "N", true, false},
	{"cm", "cpu", "cmtime -c N: CPU of the client and server processes per connection, start-up included", "k-inst", 1, "N", false, false},
	{"cm", "clock", "cmtime -c N: the guest clock over the client's run, per connection", "k-inst", 1, "N", false, false},
	{"cm", "steps", "cmtime -c N: the sum of the client's per-connection step times", "k-inst", 1, "N", false, false},
	{"cm", "create_id", "cmtime step create id", "k-inst", 1, "N", false, false},
	{"cm", "bind_addr", "cmtime step bind addr", "k-inst", 1, "N", false, false},
	{"cm", "resolve_addr", "cmtime step resolve addr", "k-inst", 1, "N", false, false},
	{"cm", "resolve_route", "cmtime step resolve route", "k-inst", 1, "N", false, false},
	{"cm", "create_qp", "cmtime step create qp", "k-inst", 1, "N", false, false},
	{"cm", "connect", "cmtime step connect", "k-inst", 1, "N", false, false},
	{"cm", "disconnect", "cmtime step disconnect", "k-inst", 1, "N", false, false},
	{"cm", "destroy", "cmtime step destroy", "k-inst", 1, "N", false, false},
	{"objects", "cq_create", "CQ create (16 entries), per CQ, N held", "k-inst", 1e-3, "N", true, false},
	{"objects", "cq_destroy", "CQ destroy, per CQ", "k-inst", 1e-3, "N", false, false},
	{"objects", "qp_create", "RC QP create (16/16 WRs) on one CQ, per QP, N held", "k-inst", 1e-3, "N", true, false},
	{"objects", "qp_destroy", "RC QP destroy, per QP", "k-inst", 1e-3, "N", false, false},
	{"cqload", "cqload", "one CQ serving N RC QP pairs under load: guest clock per 64-byte SEND (events when the CQ is empty)", "k-inst", 1e-3, "N", true, false},
	{"cqload", "cqload_machine", "one CQ serving N RC QP pairs: the machine's task work per message (softirq work while the CPU idles not counted)", "k-inst", 1e-3, "N", false, false},
	{"mr", "mr_reg", "memory registration by size, per call", "k-inst", 1e-3, "bytes", true, false},
	{"mr", "mr_dereg", "memory deregistration by size, per call", "k-inst", 1e-3, "bytes", false, false},
	{"mr", "mr_reg", "memory registration by size, per 4 KiB page", "inst", 1, "bytes", false, true},
	{"mr", "mr_dereg", "memory deregistration by size, per 4 KiB page", "inst", 1, "bytes", false, true},
	{"rsidle", "connect_machine", "rsocket connection set-up, per connection (both ends, a byte each way): the machine's work", "k-inst", 1e-3, "N", true, false},
	{"rsidle", "connect_cpu", "rsocket connection set-up, per connection: CPU of both processes", "k-inst", 1e-3, "N", false, false},
	{"rsidle", "connect", "rsocket connection set-up, per connection: guest clock (with the time both sides wait)", "k-inst", 1e-3, "N", false, false},
	{"rsidle", "rss_per_conn", "rsocket resident memory per connection (both ends, N held)", "KiB", 1, "N", true, false},
	{"rsidle", "idle_cpu", fmt.Sprintf("CPU of both processes (all threads) over %d s idle with N connections open (the second %d s)", idleSeconds, idleSeconds), "k-inst", 1e-3, "N", false, false},
	{"rsidle", "idle_cpu_first", fmt.Sprintf("CPU of both processes over the first %d s idle after the set-up", idleSeconds), "k-inst", 1e-3, "N", false, false},
	{"rsidle", "goroutines_per_conn", "goroutines per connection (both ends; Go only)", "", 1, "N", false, false},
}

// series is a curve's points of one side, by x.
func (r *results) series(c curve, side string) map[int]float64 {
	m := map[int]float64{}
	for _, p := range r.Points {
		if p.Workload == c.workload && p.Key == c.key && p.Side == side {
			v := p.Value * c.scale
			if c.perPage {
				v /= float64(max(p.X, 4096)) / 4096
			}
			m[p.X] = v
		}
	}
	return m
}

func (r *results) xs(c curve) []int {
	seen := map[int]bool{}
	var xs []int
	for _, p := range r.Points {
		if p.Workload == c.workload && p.Key == c.key && !seen[p.X] {
			seen[p.X] = true
			xs = append(xs, p.X)
		}
	}
	sort.Ints(xs)
	return xs
}

func xLabel(c curve, x int) string {
	if c.xname != "bytes" {
		return fmt.Sprint(x)
	}
	switch {
	case x >= 1<<30 && x%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", x>>30)
	case x >= 1<<20 && x%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", x>>20)
	default:
		return fmt.Sprintf("%d KiB", x>>10)
	}
}

func fmtV(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratio(c, g float64, okC, okG bool) string {
	if !okC || !okG || c == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", g/c)
}

// growth is how a side's figure at the largest x compares with its figure at 10 (the flatness test:
// within 10 %), or at the smallest x when there is no 10.
func growth(m map[int]float64, xs []int) string {
	if len(xs) < 2 {
		return "—"
	}
	from := xs[0]
	if _, ok := m[10]; ok && xs[len(xs)-1] > 10 {
		from = 10
	}
	a, okA := m[from]
	b, okB := m[xs[len(xs)-1]]
	if !okA || !okB || a == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f× (%s→%d)", b/a, fmt.Sprint(from), xs[len(xs)-1])
}

// rows is a curve's table: x, C, Go, Go/C (and, per point, the spread of its repetitions).
func (r *results) rows(c curve) (head []string, rows [][]string, foot string) {
	cs, gs := r.series(c, "C"), r.series(c, "Go")
	xs := r.xs(c)
	unit := c.unit
	if unit != "" {
		unit = " " + unit
	}
	head = []string{c.xname, "C" + unit, "Go" + unit, "Go/C"}
	for _, x := range xs {
		cv, okC := cs[x]
		gv, okG := gs[x]
		rows = append(rows, []string{xLabel(c, x), fmtV(cv, okC), fmtV(gv, okG), ratio(cv, gv, okC, okG)})
	}
	if c.xname == "N" {
		foot = fmt.Sprintf("growth per object: C %s, Go %s", growth(cs, xs), growth(gs, xs))
	}
	return head, rows, foot
}

func (r *results) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nscalebench: kernel %s, C peer on %s, cmtime rdmacm-utils 44's; %d repetition(s) per point, medians; k-inst = thousands of instructions\n",
		r.Kernel, r.PeerLibs, r.Reps)
	for _, c := range curves {
		head, rows, foot := r.rows(c)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", c.title)
		fmt.Fprintf(&b, "  %-10s %14s %14s %8s\n", head[0], head[1], head[2], head[3])
		for _, row := range rows {
			fmt.Fprintf(&b, "  %-10s %14s %14s %8s\n", row[0], row[1], row[2], row[3])
		}
		if foot != "" {
			fmt.Fprintf(&b, "  %s\n", foot)
		}
	}
	return b.String()
}

func (r *results) markdown() string {
	var b strings.Builder
	for _, c := range curves {
		head, rows, foot := r.rows(c)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "**%s**\n\n| %s |\n|%s\n", c.title, strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, row := range rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
		if foot != "" {
			fmt.Fprintf(&b, "\n%s\n", foot)
		}
		b.WriteString("\n")
	}
	return b.String()
}
