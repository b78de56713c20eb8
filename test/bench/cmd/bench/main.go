// Command bench prints the goverbs-versus-C perftest table: each of write/read/send/atomic × bw/lat at a few
// message sizes, run as C↔C, Go↔Go, Go↔C and C↔Go (server↔client), alternating the pairs within each
// repetition, inside one lab VM boot. It prints every run's raw result line, then a table of medians with the
// Go/C cost ratios. `make bench` runs it.
//
//	go run ./test/bench/cmd/bench [-reps 3] [-sizes 2,64,4096,65536] [-tests write_bw,...] [-pairs cc,gg,gc,cg]
//	                              [-bw-iters N] [-lat-iters N] [-profile] [-timeout 40m]
//
// Ratios are costs, so lower is better and 1.00 means parity: latency is t_typical Go/C, bandwidth and message
// rate are C/Go (time per byte, time per message). The Go/C ratio of a pair compares it with C↔C in the same
// table row. With -profile it also runs Go↔Go ib_write_bw, ib_read_lat and ib_send_lat at 64 B with a CPU
// profile of the Go client written to .scratch/bench/cpu-TEST.pprof (go tool pprof -top .scratch/bench/goverbs
// .scratch/bench/cpu-write_bw.pprof); -reps 0 -profile only profiles.
//
// By default a bandwidth run moves 16 MiB (200 to 5000 messages) and a latency run 8 MiB (100 to 1000 round
// trips), so that no run is only a few milliseconds long. The lab runs QEMU under TCG when KVM is missing; the
// defaults keep the run near 10 minutes there. More repetitions: -reps 8 (about 3 minutes per repetition).
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

type config struct {
	reps     int
	sizes    []int
	tests    []string
	pairs    []string
	bwIters  int
	latIters int
	profile  bool
	dev      string
	outDir   string
	cliEnv   []string // extra environment of the client only
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	inner := fs.Bool("inner", false, "run the matrix here (inside the lab; internal)")
	replayFile := fs.String("replay", "", "print the tables again from the raw lines in `file` (an earlier run's output)")
	reps := fs.Int("reps", 3, "repetitions of every cell")
	sizes := fs.String("sizes", "2,64,4096,65536", "message sizes (atomic tests always use 8)")
	tests := fs.String("tests", "write_bw,write_lat,read_bw,read_lat,send_bw,send_lat,atomic_bw,atomic_lat", "perftests to run")
	pairs := fs.String("pairs", "cc,gg,gc,cg", "server/client pairs: c = C perftest, g = goverbs")
	bwIters := fs.Int("bw-iters", 0, "-n for bandwidth tests (0: 16 MiB worth of messages, 200 to 5000)")
	latIters := fs.Int("lat-iters", 0, "-n for latency tests (0: 8 MiB worth of round trips, 100 to 1000)")
	profile := fs.Bool("profile", false, "also profile Go↔Go write_bw, read_lat and send_lat client runs")
	timeout := fs.Duration("timeout", 40*time.Minute, "limit for the lab run")
	dev := fs.String("d", "rxe0", "RDMA device")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := config{reps: *reps, tests: split(*tests), pairs: split(*pairs), bwIters: *bwIters, latIters: *latIters,
		profile: *profile, dev: *dev, outDir: os.Getenv("GOVERBS_LAB_OUT")}
	for _, s := range split(*sizes) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "bench: bad size %q\n", s)
			return 2
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	if *replayFile != "" {
		if err := replay(&cfg, *replayFile, stdout); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 1
		}
		return 0
	}
	if *inner {
		return runMatrix(&cfg, stdout, stderr)
	}
	return runHost(args, *timeout, stdout, stderr)
}

func split(s string) []string {
	var r []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			r = append(r, f)
		}
	}
	return r
}

// runHost builds goverbs and this program into .scratch/bench and runs the matrix in one lab boot.
func runHost(args []string, timeout time.Duration, stdout, stderr io.Writer) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	dir := filepath.Join(root, ".scratch", "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	for _, b := range [][2]string{{"goverbs", "./cmd/goverbs"}, {"bench", "./test/bench/cmd/bench"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, stderr, stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(stderr, "bench: build %s: %v\n", b[1], err)
			return 1
		}
	}
	for t := range testNames {
		link := filepath.Join(dir, "ib_"+t)
		os.Remove(link)
		if err := os.Symlink("goverbs", link); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cfg := lab.Config{Stdout: stdout, Stderr: stderr, Log: stderr, Timeout: timeout, Workdir: root, OutDir: dir}
	code, err := lab.Run(ctx, cfg, append([]string{filepath.Join(dir, "bench"), "-inner"}, args...))
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run bench inside the goverbs module")
	}
	return filepath.Dir(gomod), nil
}

// cClockFlake is what perftest prints when its CPU frequency sampling fails (common under QEMU TCG).
const cClockFlake = "Correlation coefficient"

var testNames = map[string]bool{"write_bw": true, "write_lat": true, "read_bw": true, "read_lat": true,
	"send_bw": true, "send_lat": true, "atomic_bw": true, "atomic_lat": true}

// result is one client's numbers.
type result struct {
	bwAvg, msgRate, typical float64
}

type cellKey struct {
	test string
	size int
	pair string
}

func runMatrix(cfg *config, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	goDir := filepath.Dir(exe)
	res := map[cellKey][]result{}
	port := 19000
	failures := 0
	start := time.Now()
	fmt.Fprintf(stdout, "# goverbs perftest bench: reps=%d sizes=%v pairs=%v bw-iters=%d lat-iters=%d\n",
		cfg.reps, cfg.sizes, cfg.pairs, cfg.bwIters, cfg.latIters)
	fmt.Fprintf(stdout, "# raw: test size pair(server-client) rep | client result line\n")
	for rep := 1; rep <= cfg.reps; rep++ {
		for _, test := range cfg.tests {
			if !testNames[test] {
				fmt.Fprintf(stderr, "bench: unknown test %q\n", test)
				return 2
			}
			sizes := cfg.sizes
			if strings.HasPrefix(test, "atomic") {
				sizes = []int{8}
			}
			for _, size := range sizes {
				// Alternate the pair order between repetitions so no pair always runs first.
				order := rotate(cfg.pairs, rep-1)
				for _, pair := range order {
					port++
					line, r, err := runOne(cfg, goDir, test, size, pair, port)
					for try := 1; try < 4 && err != nil && strings.Contains(err.Error(), cClockFlake); try++ {
						port++ // perftest's CPU clock sampling fails now and then under TCG: run the pair again
						line, r, err = runOne(cfg, goDir, test, size, pair, port)
					}
					if err != nil {
						failures++
						fmt.Fprintf(stdout, "raw %s %d %s %d | FAILED: %v\n", test, size, pairName(pair), rep, err)
						continue
					}
					fmt.Fprintf(stdout, "raw %s %d %s %d |%s\n", test, size, pairName(pair), rep, line)
					k := cellKey{test, size, pair}
					res[k] = append(res[k], r)
				}
			}
		}
	}
	if cfg.reps > 0 {
		printTable(stdout, cfg, res)
	}
	if cfg.profile {
		profileRun(cfg, goDir, port+1, stdout, stderr)
	}
	fmt.Fprintf(stdout, "# %d runs failed; matrix took %s\n", failures, time.Since(start).Round(time.Second))
	if failures > 0 {
		return 1
	}
	return 0
}

func rotate(s []string, n int) []string {
	if len(s) == 0 {
		return s
	}
	n %= len(s)
	return append(append([]string{}, s[n:]...), s[:n]...)
}

func pairName(p string) string {
	name := map[byte]string{'c': "C", 'g': "Go"}
	if len(p) != 2 {
		return p
	}
	return name[p[0]] + "-" + name[p[1]]
}

func binary(goDir string, impl byte, test string) string {
	if impl == 'g' {
		return filepath.Join(goDir, "ib_"+test)
	}
	return "ib_" + test
}

// runOne runs one server/client pair and returns the client's result line and numbers.
func runOne(cfg *config, goDir, test string, size int, pair string, port int) (string, result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lat := strings.HasSuffix(test, "_lat")
	iters := cfg.bwIters
	if iters == 0 {
		iters = min(max(16<<20/size, 200), 5000)
	}
	if lat {
		iters = cfg.latIters
		if iters == 0 {
			iters = min(max(8<<20/size, 100), 1000)
		}
	}
	args := []string{"-d", cfg.dev, "-p", strconv.Itoa(port), "-n", strconv.Itoa(iters)}
	if !strings.HasPrefix(test, "atomic") {
		args = append(args, "-s", strconv.Itoa(size))
	}
	var srvOut, cliOut bytes.Buffer
	srv := exec.CommandContext(ctx, binary(goDir, pair[0], test), args...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return "", result{}, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	if err := waitListen(port, done); err != nil {
		srv.Process.Kill()
		return "", result{}, err
	}
	cli := exec.CommandContext(ctx, binary(goDir, pair[1], test), append(args, "10.233.0.1")...)
	cli.Stdout, cli.Stderr = &cliOut, &cliOut
	cli.Env = append(os.Environ(), cfg.cliEnv...)
	cerr := cli.Run()
	serr := <-done
	if cerr != nil || serr != nil {
		return "", result{}, fmt.Errorf("client: %v, server: %v\nclient output:\n%s\nserver output:\n%s", cerr, serr, cliOut.String(), srvOut.String())
	}
	line, r, ok := parseResult(cliOut.String(), lat)
	if strings.Contains(cliOut.String()+srvOut.String(), cClockFlake) {
		return "", result{}, fmt.Errorf("%s\nclient output:\n%s", cClockFlake, cliOut.String())
	}
	if !ok {
		return "", result{}, fmt.Errorf("no result line in client output:\n%s", cliOut.String())
	}
	return line, r, nil
}

func waitListen(port int, exited <-chan error) error {
	want := fmt.Sprintf(":%04X", port)
	for i := 0; i < 1200; i++ {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				fl := strings.Fields(sc.Text())
				if len(fl) > 3 && strings.HasSuffix(fl[1], want) && fl[3] == "0A" {
					return nil
				}
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("server exited before listening: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("nothing listens on port %d", port)
}

// parseResult finds the result line: 5 numeric fields for bandwidth, 9 for latency.
func parseResult(out string, lat bool) (string, result, bool) {
	want := 5
	if lat {
		want = 9
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != want {
			continue
		}
		v := make([]float64, len(f))
		ok := true
		for i, s := range f {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil && (s == "-nan" || s == "nan") {
				x, err = math.NaN(), nil // perftest's stdev overflow prints -nan
			}
			if err != nil {
				ok = false
				break
			}
			v[i] = x
		}
		if !ok {
			continue
		}
		if lat {
			return l, result{typical: v[4]}, true
		}
		return l, result{bwAvg: v[3], msgRate: v[4]}, true
	}
	return "", result{}, false
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func best(xs []float64, lower bool) float64 {
	if len(xs) == 0 {
		return 0
	}
	b := xs[0]
	for _, x := range xs[1:] {
		if (lower && x < b) || (!lower && x > b) {
			b = x
		}
	}
	return b
}

// printTable prints the medians and, since a loaded TCG host makes single runs bimodal, the best run of every
// cell (highest bandwidth, lowest latency) with the same cost ratios.
func printTable(w io.Writer, cfg *config, res map[cellKey][]result) {
	for _, stat := range []string{"medians", "best runs"} {
		fmt.Fprintf(w, "\n# %s; ratio = Go cost / C cost against C-C in the same row (lower is better, 1.00 = parity)\n", stat)
		fmt.Fprintf(w, "# latency: t_typical[usec], ratio Go/C; bandwidth: BW average[MB/sec] and MsgRate[Mpps], ratio C/Go\n")
		header := fmt.Sprintf("%-11s %7s %-8s", "test", "size", "metric")
		for _, p := range cfg.pairs {
			header += fmt.Sprintf(" %11s", pairName(p))
		}
		for _, p := range cfg.pairs {
			if p != "cc" {
				header += fmt.Sprintf(" %9s", "r("+pairName(p)+")")
			}
		}
		fmt.Fprintln(w, header)
		for _, test := range cfg.tests {
			sizes := cfg.sizes
			if strings.HasPrefix(test, "atomic") {
				sizes = []int{8}
			}
			lat := strings.HasSuffix(test, "_lat")
			metrics := []string{"BWavg", "MsgRate"}
			if lat {
				metrics = []string{"t_typ"}
			}
			for _, size := range sizes {
				for _, m := range metrics {
					v := map[string]float64{}
					row := fmt.Sprintf("%-11s %7d %-8s", test, size, m)
					for _, p := range cfg.pairs {
						var xs []float64
						for _, r := range res[cellKey{test, size, p}] {
							switch m {
							case "BWavg":
								xs = append(xs, r.bwAvg)
							case "MsgRate":
								xs = append(xs, r.msgRate)
							default:
								xs = append(xs, r.typical)
							}
						}
						if stat == "medians" {
							v[p] = median(xs)
						} else {
							v[p] = best(xs, lat)
						}
						row += fmt.Sprintf(" %11.4f", v[p])
					}
					for _, p := range cfg.pairs {
						if p == "cc" {
							continue
						}
						ratio := 0.0
						if lat && v["cc"] > 0 {
							ratio = v[p] / v["cc"]
						} else if !lat && v[p] > 0 {
							ratio = v["cc"] / v[p]
						}
						row += fmt.Sprintf(" %9.2f", ratio)
					}
					fmt.Fprintln(w, row)
				}
			}
		}
	}
}

// replay rebuilds the tables from the raw lines of an earlier run's output.
func replay(cfg *config, path string, w io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	res := map[cellKey][]result{}
	for _, l := range strings.Split(string(b), "\n") {
		head, line, ok := strings.Cut(l, " |")
		f := strings.Fields(head)
		if !ok || len(f) != 5 || f[0] != "raw" {
			continue
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		pair := map[string]string{"C-C": "cc", "Go-Go": "gg", "Go-C": "gc", "C-Go": "cg"}[f[3]]
		_, r, ok := parseResult(line, strings.HasSuffix(f[1], "_lat"))
		if !ok || pair == "" {
			continue
		}
		k := cellKey{f[1], size, pair}
		res[k] = append(res[k], r)
	}
	printTable(w, cfg, res)
	return nil
}

// profileRun runs Go↔Go ib_write_bw, ib_read_lat and ib_send_lat at 64 B with the Go client CPU-profiled
// into cpu-TEST.pprof in the output directory.
func profileRun(cfg *config, goDir string, port int, stdout, stderr io.Writer) {
	if cfg.outDir == "" {
		fmt.Fprintf(stdout, "# profile: no GOVERBS_LAB_OUT to write to\n")
		return
	}
	for _, pr := range []struct {
		test  string
		iters int
	}{{"write_bw", 20000}, {"read_lat", 5000}, {"send_lat", 5000}} {
		port++
		prof := filepath.Join(cfg.outDir, "cpu-"+pr.test+".pprof")
		c := *cfg
		c.cliEnv = []string{"GOVERBS_PERFTEST_CPUPROFILE=" + prof}
		c.bwIters, c.latIters = pr.iters, pr.iters
		line, _, err := runOne(&c, goDir, pr.test, 64, "gg", port)
		if err != nil {
			fmt.Fprintf(stdout, "# profile run %s failed: %v\n", pr.test, err)
			continue
		}
		fmt.Fprintf(stdout, "# profile: %s 64 B Go-Go, -n %d |%s\n# profile of the Go client: %s\n", pr.test, pr.iters, line, prof)
	}
}
