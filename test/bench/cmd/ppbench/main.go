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
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	reps := flag.Int("reps", 5, "repetitions of each pair")
	iters := flag.Int("iters", 200, "ping-pong iterations per run (-n)")
	sizes := flag.String("sizes", "1,4096", "message sizes (-s)")
	events := flag.Bool("e", false, "wait for completions with events (-e) instead of busy polling")
	cpus := flag.Int("cpus", 2, "lab VM vCPUs (busy-polling pairs need two)")
	inner := flag.Bool("inner", false, "run the measurements here (inside the lab)")
	bin := flag.String("bin", "", "goverbs binary (inner mode)")
	flag.Parse()
	if *inner {
		os.Exit(measure(*bin, *reps, *iters, *sizes, *events))
	}
	root, _ := os.Getwd()
	dir := filepath.Join(root, ".lab", "ppbench")
	os.MkdirAll(dir, 0o755)
	for _, b := range [][]string{{"-o", filepath.Join(dir, "goverbs"), "./cmd/goverbs"}, {"-o", filepath.Join(dir, "ppbench"), "./test/bench/cmd/ppbench"}} {
		cmd := exec.Command("go", append([]string{"build"}, b...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "ppbench: build:", err)
			os.Exit(1)
		}
	}
	code, err := lab.Run(context.Background(), lab.Config{Timeout: 30 * time.Minute, Workdir: root, CPUs: *cpus},
		[]string{filepath.Join(dir, "ppbench"), "-inner", "-bin", filepath.Join(dir, "goverbs"),
			"-reps", strconv.Itoa(*reps), "-iters", strconv.Itoa(*iters), "-sizes", *sizes, "-e=" + strconv.FormatBool(*events)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ppbench:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

var usecRE = regexp.MustCompile(`iters in [0-9.]+ seconds = ([0-9.]+) usec/iter`)

// pair runs one server/client pair and returns the client's usec/iter.
func pair(server, client []string, port int) (float64, error) {
	srv := exec.Command(server[0], server[1:]...)
	if err := srv.Start(); err != nil {
		return 0, err
	}
	if err := interop.WaitListening(port, 60*time.Second); err != nil {
		srv.Process.Kill()
		return 0, err
	}
	out, err := exec.Command(client[0], client[1:]...).CombinedOutput()
	if werr := srv.Wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, out)
	}
	m := usecRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no usec/iter in %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
		mc, mg := median(cs), median(gs)
		fmt.Printf("%8s %12.2f %12.2f %8.2f   %v | %v\n", sz, mc, mg, mg/mc, cs, gs)
	}
	return 0
}
