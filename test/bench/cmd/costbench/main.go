// Command costbench measures what goverbs costs against rdma-core's C tools in executed instructions: it boots
// the lab with QEMU's instruction counting (lab.Config.ICount: one vCPU, -icount shift=0,sleep=off), where the
// guest clock advances one nanosecond per instruction and skips idle time, so the "usec" a tool prints are
// thousands of instructions (user and kernel, both processes of a pair and rxe's kernel work), and the same
// run gives the same number whatever the host does. Each case runs C↔C and Go↔Go (goverbs' multi-call binary
// under the C tool's name, same arguments), alternating, -reps times; it prints the median cost per message of
// each, the spread of identical runs ((max-min)/median) and the ratio Go/C (below 1.00: goverbs executes
// fewer instructions per message). No thresholds: a measurement, not a test.
//
// Usage: go run ./test/bench/cmd/costbench [-reps 3] [-run REGEXP] [-iters 1000]
//
// Which workloads mean something on one vCPU: both sides must block rather than spin, or the figure is the
// scheduler's time slice, not the code. So the ping-pongs and perftest run with completion events (-e);
// rping blocks on its completion channel by design; rstream runs blocking (-T b: its default non-blocking
// mode makes C spin on EAGAIN), and since both librdmacm and goverbs poll for polling_time (10 µs) before
// blocking, which on one vCPU spins while the peer cannot run, the run sets polling_time 0 in
// /etc/rdma/rsocket for both (both then poll until the microsecond clock moves: about 1000 instructions). perftest's WRITE tests cannot use events
// (perftest refuses -e with WRITE): its client busy-polls while rxe's work runs on the same vCPU, so write_bw
// is listed apart as scheduler-bound and not part of the verdict. See docs/perf.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchlab"
	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	reps := flag.Int("reps", 3, "repetitions of each pair (C and Go alternate)")
	iters := flag.Int("iters", 1000, "messages per run (ping-pong iterations, perftest -n, rstream iterations)")
	runRE := flag.String("run", "", "only the cases whose name matches this regular expression")
	inner, bin := benchlab.Parse()
	re, err := regexp.Compile(*runRE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "costbench: -run:", err)
		os.Exit(2)
	}
	if inner {
		os.Exit(measure(bin, *reps, *iters, re))
	}
	os.Exit(benchlab.Host("costbench", "./test/bench/cmd/costbench", lab.Config{ICount: true, Timeout: 40 * time.Minute},
		"-reps", strconv.Itoa(*reps), "-iters", strconv.Itoa(*iters), "-run", *runRE))
}

// A costCase is one workload: the C tool (goverbs runs it under the same name), the server's and the
// client's arguments for a port, how the server is seen listening, and how the client's output gives the
// guest microseconds (= thousands of instructions) per message.
type costCase struct {
	name     string
	tool     string
	server   func(port int) []string
	client   func(port int) []string
	cm       bool // the server listens on an rdma_cm port (else TCP)
	cost     func(out []byte, iters int) (float64, error)
	apart    bool // scheduler-bound on one vCPU: printed, not part of the verdict
	perIters bool // the cost is the client process's whole time difference between iters and 2*iters (rping)
}

func cases(iters int) []costCase {
	n := strconv.Itoa(iters)
	var cs []costCase
	pp := func(kind, tool string, size int, extra ...string) {
		common := append([]string{"-d", "rxe0", "-g", "1", "-e", "-s", strconv.Itoa(size), "-n", n}, extra...)
		name := fmt.Sprintf("pingpong %s -e %d", kind, size)
		if len(extra) > 0 {
			name = fmt.Sprintf("pingpong %s -e %s %d", kind, strings.Join(extra, " "), size)
		}
		cs = append(cs, costCase{
			name: name, tool: tool,
			server: func(p int) []string { return append(append([]string{}, common...), "-p", strconv.Itoa(p)) },
			client: func(p int) []string {
				return append(append([]string{}, common...), "-p", strconv.Itoa(p), "127.0.0.1")
			},
			cost: pingpongCost,
		})
	}
	for _, size := range []int{64, 4096} {
		pp("rc", "ibv_rc_pingpong", size)
		pp("srq", "ibv_srq_pingpong", size)
	}
	// -N: libibverbs' ibv_wr_* against goverbs' work-request builder (QP.StartWR).
	pp("rc", "ibv_rc_pingpong", 64, "-N")
	pp("ud", "ibv_ud_pingpong", 64)
	pp("ud", "ibv_ud_pingpong", 1024) // the largest UD payload of rxe's 1024 MTU

	pt := func(test string, size int, events, lat bool, count string) {
		args := []string{"-d", "rxe0", "-x", "1", "-F", "-n", count}
		if test != "atomic_bw" {
			args = append(args, "-s", strconv.Itoa(size))
		}
		name := fmt.Sprintf("ib_%s %d", test, size)
		if events {
			args = append(args, "-e")
			name = fmt.Sprintf("ib_%s -e %d", test, size)
		}
		if count != n {
			name += " -n " + count
		}
		cost := perftestBWCost
		if lat {
			cost = perftestLatCost
		}
		cs = append(cs, costCase{
			name: name, tool: "ib_" + test, apart: !events,
			server: func(p int) []string { return append(append([]string{}, args...), "-p", strconv.Itoa(p)) },
			client: func(p int) []string {
				return append(append([]string{}, args...), "-p", strconv.Itoa(p), benchlab.LabIP)
			},
			cost: cost,
		})
	}
	pt("send_lat", 64, true, true, n)
	pt("send_lat", 4096, true, true, n)
	pt("send_bw", 64, true, false, n)
	pt("send_bw", 65536, true, false, n)
	pt("read_bw", 65536, true, false, n)
	pt("atomic_bw", 8, true, false, n)
	// Two of them again at 20 times the messages, where the start-up is amortised: after the set-up's waits
	// the Go runtime's sysmon restarts at its 20 µs polling interval and backs off over the first milliseconds
	// of the timed loop (about 60 wake-ups, 0.4 M instructions on the one vCPU), which a 1000-message run
	// charges to its messages (docs/perf.md).
	pt("send_lat", 64, true, true, strconv.Itoa(20*iters))
	pt("atomic_bw", 8, true, false, strconv.Itoa(20*iters))
	pt("write_bw", 65536, false, false, n)

	rs := func(size, count, itersPer int, what string) {
		// -T b: blocking calls. rstream's default is non-blocking (MSG_DONTWAIT), where C retries rrecv in a
		// busy loop (on one vCPU a time slice, 4 ms, per message); goverbs' rstream always blocks.
		opts := []string{"-S", strconv.Itoa(size), "-C", strconv.Itoa(count), "-I", strconv.Itoa(itersPer), "-T", "b"}
		cs = append(cs, costCase{
			name: fmt.Sprintf("rstream %s %d", what, size), tool: "rstream", cm: true,
			server: func(p int) []string { return append([]string{"-b", benchlab.LabIP, "-p", strconv.Itoa(p)}, opts...) },
			client: func(p int) []string { return append([]string{"-s", benchlab.LabIP, "-p", strconv.Itoa(p)}, opts...) },
			cost:   rstreamCost,
		})
	}
	rs(64, 1, iters, "lat")      // one message each way per iteration: a ping-pong through net.Conn
	rs(65536, iters/10, 1, "bw") // a stream of messages one way, then back

	cs = append(cs, costCase{
		name: "rping 64", tool: "rping", cm: true, perIters: true,
		server: func(p int) []string { return []string{"-s", "-a", benchlab.LabIP, "-p", strconv.Itoa(p)} },
		client: func(p int) []string { return []string{"-c", "-a", benchlab.LabIP, "-p", strconv.Itoa(p), "-S", "64"} },
	})
	return cs
}

var (
	pingpongRE = regexp.MustCompile(`iters in [0-9.]+ seconds = ([0-9.]+) usec/iter`)
	rstreamRE  = regexp.MustCompile(`(?m)^custom\s.*\s([0-9.]+)\s*$`)
)

func pingpongCost(out []byte, _ int) (float64, error) {
	m := pingpongRE.FindSubmatch(out)
	if m == nil {
		return 0, errors.New("no usec/iter line")
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// perftestLatCost is t_avg, the mean round trip (the sum of all costs, unlike t_typical, the median).
func perftestLatCost(out []byte, _ int) (float64, error) {
	f := perftestRow(out, 9)
	if f == nil {
		return 0, errors.New("no latency result row")
	}
	return strconv.ParseFloat(f[5], 64)
}

// perftestBWCost is 1/MsgRate: microseconds per message.
func perftestBWCost(out []byte, _ int) (float64, error) {
	f := perftestRow(out, 5)
	if f == nil {
		return 0, errors.New("no bandwidth result row")
	}
	rate, err := strconv.ParseFloat(f[4], 64)
	if err != nil || rate <= 0 {
		return 0, fmt.Errorf("message rate %q", f[4])
	}
	return 1 / rate, nil
}

// perftestRow is the first row of at least n numeric fields (the result row; the header rows start with #).
func perftestRow(out []byte, n int) []string {
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < n {
			continue
		}
		numeric := true
		for _, x := range f[:n] {
			if _, err := strconv.ParseFloat(x, 64); err != nil {
				numeric = false
				break
			}
		}
		if numeric {
			return f
		}
	}
	return nil
}

// rstreamCost is the custom row's usec/xfer: the run's time over all messages, both ways.
func rstreamCost(out []byte, _ int) (float64, error) {
	m := rstreamRE.FindSubmatch(out)
	if m == nil {
		return 0, errors.New("no custom result row")
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// one measures case c once for one implementation.
func one(c costCase, bin string, goSide bool, iters int, port *int) (float64, error) {
	argv := func(args []string) []string {
		if goSide {
			return append([]string{bin, c.tool}, args...)
		}
		return append([]string{c.tool}, args...)
	}
	if !c.perIters {
		*port++
		out, _, err := benchlab.Pair(argv(c.server(*port)), argv(c.client(*port)), *port, c.cm)
		if err != nil {
			return 0, err
		}
		v, err := c.cost(out, iters)
		if err != nil {
			return 0, fmt.Errorf("%v in:\n%s", err, out)
		}
		return v, nil
	}
	// rping prints no timing: the difference of two whole runs, iters and 2*iters, is the cost of iters.
	var took [2]time.Duration
	for i, n := range []int{iters, 2 * iters} {
		*port++
		cnt := []string{"-C", strconv.Itoa(n)}
		_, t, err := benchlab.Pair(argv(append(c.server(*port), cnt...)), argv(append(c.client(*port), cnt...)), *port, c.cm)
		if err != nil {
			return 0, err
		}
		took[i] = t
	}
	return float64(took[1]-took[0]) / float64(time.Microsecond) / float64(iters), nil
}

func measure(bin string, reps, iters int, re *regexp.Regexp) int {
	port := 20000
	unmount, err := benchlab.MountRsocketConf()
	if err == nil {
		defer unmount()
		err = benchlab.SetRsocketConf("polling_time", "0")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "costbench:", err)
		return 1
	}
	fmt.Printf("instruction cost per message in the lab (QEMU -icount shift=0, one vCPU: 1 guest µs = 1000 instructions,\n" +
		"user + kernel, both processes), median of alternating runs; spread = (max-min)/median of identical runs\n")
	fmt.Printf("%-26s %10s %10s %7s %7s %7s   raw C | raw Go\n", "case", "C k-inst", "Go k-inst", "Go/C", "C spr", "Go spr")
	worst, over := 0.0, 0
	for _, c := range cases(iters) {
		if !re.MatchString(c.name) {
			continue
		}
		var cs, gs []float64
		for r := 0; r < reps; r++ {
			order := []bool{false, true}
			if r%2 == 1 {
				order = []bool{true, false}
			}
			for _, goSide := range order {
				v, err := one(c, bin, goSide, iters, &port)
				if err != nil {
					fmt.Fprintf(os.Stderr, "costbench: %s (go=%v): %v\n", c.name, goSide, err)
					return 1
				}
				if goSide {
					gs = append(gs, v)
				} else {
					cs = append(cs, v)
				}
			}
		}
		mc, mg := benchlab.Median(cs), benchlab.Median(gs)
		ratio := mg / mc
		note := ""
		if c.apart {
			note = "  (busy-polling: scheduler-bound, not in the verdict)"
		} else {
			worst = max(worst, ratio)
			if ratio > 1 {
				over++
			}
		}
		fmt.Printf("%-26s %10.2f %10.2f %7.3f %6.1f%% %6.1f%%   %s | %s%s\n", c.name, mc, mg, ratio,
			100*benchlab.Spread(cs), 100*benchlab.Spread(gs), floats(cs), floats(gs), note)
	}
	fmt.Printf("\nworst Go/C %.3f; %d case(s) above 1.00\n", worst, over)
	return 0
}

func floats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(s, " ")
}
