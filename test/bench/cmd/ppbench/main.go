// Command ppbench measures ping-pong latency of goverbs against rdma-core in the lab: C↔C and Go↔Go runs of
// ibv_rc_pingpong / goverbs pingpong rc on rxe0, alternating, several repetitions, and prints the median
// usec/iter of each and their ratio (Go/C; below 1.00 means goverbs is faster). It prints the raw numbers too.
// No thresholds: this is a measurement, not a test.
//
// Usage: go run ./test/bench/cmd/ppbench [-reps 5] [-iters 200] [-sizes 1,4096]
//
// On the host it builds goverbs and boots the lab, running itself inside ("-inner").
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchlab"
	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	reps := flag.Int("reps", 5, "repetitions of each pair")
	iters := flag.Int("iters", 200, "ping-pong iterations per run (-n)")
	sizes := flag.String("sizes", "1,4096", "message sizes (-s)")
	events := flag.Bool("e", false, "wait for completions with events (-e) instead of busy polling")
	cpus := flag.Int("cpus", 2, "lab VM vCPUs (busy-polling pairs need two)")
	inner, bin := benchlab.Parse()
	if inner {
		os.Exit(measure(bin, *reps, *iters, *sizes, *events))
	}
	os.Exit(benchlab.Host("ppbench", "./test/bench/cmd/ppbench", lab.Config{Timeout: 30 * time.Minute, CPUs: *cpus},
		"-reps", strconv.Itoa(*reps), "-iters", strconv.Itoa(*iters), "-sizes", *sizes, "-e="+strconv.FormatBool(*events)))
}

var usecRE = regexp.MustCompile(`iters in [0-9.]+ seconds = ([0-9.]+) usec/iter`)

// pair runs one server/client pair and returns the client's usec/iter.
func pair(server, client []string, port int) (float64, error) {
	out, _, err := benchlab.Pair(server, client, port, false)
	if err != nil {
		return 0, err
	}
	m := usecRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no usec/iter in %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func measure(bin string, reps, iters int, sizes string, events bool) int {
	port := 19500
	mode := "busy polling"
	if events {
		mode = "completion events (-e)"
	}
	fmt.Printf("ping-pong latency on rxe0, %s, %d vCPUs (usec/iter, median of %d alternating runs, %d iterations each)\n",
		mode, runtime.NumCPU(), reps, iters)
	fmt.Printf("%8s %12s %12s %8s   raw C | raw Go\n", "size", "C<->C", "Go<->Go", "Go/C")
	for _, sz := range strings.Split(sizes, ",") {
		common := []string{"-d", "rxe0", "-g", "1", "-s", sz, "-n", strconv.Itoa(iters)}
		if events {
			common = append(common, "-e")
		}
		var cs, gs []float64
		for r := 0; r < reps; r++ {
			for _, goSide := range []bool{false, true} {
				port++
				p := strconv.Itoa(port)
				tool := []string{"ibv_rc_pingpong"}
				if goSide {
					tool = []string{bin, "pingpong", "rc"}
				}
				args := append(append(append([]string{}, tool...), common...), "-p", p)
				v, err := pair(args, append(append([]string{}, args...), "127.0.0.1"), port)
				if err != nil {
					fmt.Fprintf(os.Stderr, "ppbench: size %s go=%v: %v\n", sz, goSide, err)
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
		fmt.Printf("%8s %12.2f %12.2f %8.2f   %v | %v\n", sz, mc, mg, mg/mc, cs, gs)
	}
	return 0
}
