// Command scalebench measures how goverbs' cost grows with the number of objects, against rdma-core's C in the
// same run: per-connection rdma_cm set-up and tear-down (rdmacm-utils' cmtime against goverbs' clone, -c N),
// CQs and QPs created and destroyed, memory registration by size, and rsocket connections held open and idle
// (set-up cost, resident memory and goroutines per connection, CPU while idle). It boots the lab with QEMU's
// instruction counting (lab.Config.ICount), where the guest clock counts executed instructions (user and
// kernel, every process), so each figure is thousands of instructions ("k-inst") and repeats whatever the
// host does. Each point runs C and Go alternately -reps times and takes the median.
//
// The C side of the objects, mr and rsidle curves is test/cpeer/scalepeer.c (built here with gcc against
// the host's libibverbs and librdmacm, which the lab runs); the Go side is this command's "peer" mode, which
// takes the same arguments and prints the same lines with goverbs' uverbs and rsocket packages.
//
// Usage: go run ./test/bench/cmd/scalebench [-n 1,10,100,1000] [-reps 1] [-run REGEXP] [-svg FILE] [-md FILE]
//
// It prints one table per curve with Go/C per point, and with -svg writes the curves as a plot, with -md the
// tables as Markdown (docs/perf.md keeps the committed run). A measurement, not a test: nothing is asserted.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchlab"
	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "peer" {
		os.Exit(peer(os.Args[2:]))
	}
	ns := flag.String("n", "1,10,100,1000", "object counts of the curves (comma-separated)")
	reps := flag.Int("reps", 1, "repetitions of each point (C and Go alternate; the median is kept)")
	runRE := flag.String("run", "", "only the curves whose name matches this regular expression (cm, objects, mr, rsidle)")
	svgPath := flag.String("svg", "", "write the curves as an SVG plot to this file")
	mdPath := flag.String("md", "", "write the tables as Markdown to this file")
	from := flag.String("results", "", "render this results.json of an earlier run (.lab/scalebench/out/results.json) instead of measuring")
	profile := flag.Bool("profile", false, "the Go peers write CPU profiles into .lab/scalebench/out/profiles (go tool pprof)")
	cpeer := flag.String("cpeer", "", "the C peer (inner mode)")
	peerRoot := flag.String("peerroot", "", "root of the C libraries the C peer runs with (inner mode; \"\": the system's)")
	inner, bin := benchlab.Parse()
	counts, err := parseCounts(*ns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench: -n:", err)
		os.Exit(2)
	}
	re, err := regexp.Compile(*runRE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench: -run:", err)
		os.Exit(2)
	}
	if inner {
		if *profile {
			dir := filepath.Join(os.Getenv(lab.OutDirEnv), "profiles")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, "scalebench:", err)
				os.Exit(1)
			}
			os.Setenv(profileEnv, dir)
			os.Setenv("GOVERBS_CPUPROFILE", dir) // cmd/goverbs' ProfileEnv: the Go cmtime client and server
		}
		os.Exit(measure(bin, *cpeer, *peerRoot, counts, *reps, re))
	}
	if *from != "" {
		os.Exit(render(*from, *svgPath, *mdPath))
	}
	os.Exit(host(*ns, *reps, *runRE, *svgPath, *mdPath, *profile))
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a count ≥ 1", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// host builds the C peer, runs this command in the lab (it writes results.json into the lab's out directory)
// and renders what it measured.
func host(ns string, reps int, runRE, svgPath, mdPath string, profile bool) int {
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		return 1
	}
	dir := filepath.Join(root, ".lab", "scalebench")
	out := filepath.Join(dir, "out")
	os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		return 1
	}
	cpeer := filepath.Join(dir, "scalepeer")
	gcc := exec.Command("gcc", "-O2", "-Wall", "-Werror", "-o", cpeer, filepath.Join(root, "test", "cpeer", "scalepeer.c"),
		"-libverbs", "-lrdmacm")
	if o, err := gcc.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "scalebench: build the C peer (needs gcc, libibverbs-dev, librdmacm-dev: make deps): %v\n%s", err, o)
		return 1
	}
	cache, err := lab.CacheDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		return 1
	}
	peerRoot, err := lab.EnsurePeerRoot(context.Background(), cache, peerEra, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		return 1
	}
	cfg := lab.Config{ICount: true, Memory: 4096, Timeout: 90 * time.Minute, OutDir: out}
	if code := benchlab.Host("scalebench", "./test/bench/cmd/scalebench", cfg,
		"-cpeer", cpeer, "-peerroot", peerRoot, "-n", ns, "-reps", strconv.Itoa(reps), "-run", runRE, "-profile="+strconv.FormatBool(profile)); code != 0 {
		return code
	}
	return render(filepath.Join(out, "results.json"), svgPath, mdPath)
}

// render prints the tables of a run's results.json and writes its plot and Markdown tables when asked.
func render(file, svgPath, mdPath string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench: no results:", err)
		return 1
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		fmt.Fprintln(os.Stderr, "scalebench: results.json:", err)
		return 1
	}
	fmt.Print(res.text())
	if mdPath != "" {
		if err := os.WriteFile(mdPath, []byte(res.markdown()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			return 1
		}
	}
	if svgPath != "" {
		if err := writeSVG(svgPath, &res); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			return 1
		}
	}
	return 0
}

// peerEra is the Debian release whose libibverbs and librdmacm the C peer runs with: sid's rdma-core 65.
// Not the host's (bookworm's 44): librdmacm 44's rsocket service threads can deadlock when connections are
// accepted one after another (cm_svc_run dispatches poll results from before an RS_SVC_ADD_CM, and the
// service thread blocks in rdma_get_cm_event on a channel whose event another thread took; the lab's
// instruction counting hits it at 10 connections), fixed by rdma-core 0b10cda9a (July 2026).
const peerEra = "sid"

// measure runs the curves inside the lab and writes results.json to $GOVERBS_LAB_OUT.
func measure(bin, cpeer, peerRoot string, counts []int, reps int, re *regexp.Regexp) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		return 1
	}
	chroot := ""
	if peerRoot != "" {
		if cpeer, err = enterPeerRoot(peerRoot, cpeer); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			return 1
		}
		chroot = peerRoot
	}
	res := results{Date: time.Now().UTC().Format("2006-01-02"), Kernel: kernelRelease(), Reps: reps, PeerLibs: peerLibs(peerRoot)}
	failed := false
	port := 9100
	for _, w := range workloads {
		if !re.MatchString(w.name) {
			continue
		}
		xs := counts
		if w.sizes != nil {
			xs = w.sizes
		}
		for _, x := range xs {
			vals := map[string]map[string][]float64{} // side -> key -> values
			for r := 0; r < reps; r++ {
				sides := []string{"C", "Go"}
				if r%2 == 1 {
					sides = []string{"Go", "C"}
				}
				for _, side := range sides {
					port++
					run := runner{side: side, bin: bin, self: self, cpeer: cpeer, chroot: chroot, port: port}
					start := time.Now()
					kv, err := w.run(run, x)
					if err != nil {
						fmt.Fprintf(os.Stderr, "scalebench: %s %s x=%d: %v\n", w.name, side, x, err)
						failed = true
						continue
					}
					fmt.Printf("%-7s %-2s x=%-10d %6.1f G-inst  %v\n", w.name, side, x, time.Since(start).Seconds(), kv)
					if vals[side] == nil {
						vals[side] = map[string][]float64{}
					}
					for k, v := range kv {
						vals[side][k] = append(vals[side][k], v)
					}
				}
			}
			for side, m := range vals {
				for k, v := range m {
					res.add(w.name, k, side, x, benchlab.Median(v), benchlab.Spread(v))
				}
			}
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(os.Getenv(lab.OutDirEnv), "results.json"), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

func kernelRelease() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// A runner runs one side of a point: C (rdma-core's tool or the C peer) or Go (goverbs' tool or this
// command's peer mode).
type runner struct {
	side             string
	bin, self, cpeer string
	chroot           string // the C peer's root ("": the system's)
	port             int
}

// peerCmd is the C peer or the Go peer with args.
func (r runner) peerCmd(args ...string) *exec.Cmd {
	if r.side == "C" {
		cmd := exec.Command(r.cpeer, args...)
		if r.chroot != "" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: r.chroot}
			cmd.Dir = "/"
		}
		return cmd
	}
	return exec.Command(r.self, append([]string{"peer"}, args...)...)
}

// toolCmd is rdma-core's tool or goverbs' under the tool's name.
func (r runner) toolCmd(tool string, args ...string) *exec.Cmd {
	if r.side == "C" {
		return exec.Command(tool, args...)
	}
	return exec.Command(r.bin, append([]string{tool}, args...)...)
}

// A workload is one family of curves: run measures one point (x objects, or bytes for sizes) and returns
// its figures by key.
type workload struct {
	name  string
	sizes []int // the x values when they are not the object counts
	run   func(r runner, x int) (map[string]float64, error)
}

var workloads = []workload{
	{name: "cm", run: runCM},
	{name: "objects", run: func(r runner, n int) (map[string]float64, error) {
		return peerKV(r.peerCmd("objects", lab.Device, strconv.Itoa(n)))
	}},
	{name: "cqload", run: func(r runner, n int) (map[string]float64, error) {
		return peerKV(r.peerCmd("cqload", lab.Device, strconv.Itoa(n), strconv.Itoa(cqloadMessages), "1"))
	}},
	{name: "mr", sizes: []int{4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30}, run: func(r runner, size int) (map[string]float64, error) {
		reps := max(2, min(100, (64<<20)/size))
		return peerKV(r.peerCmd("mr", lab.Device, strconv.Itoa(size), strconv.Itoa(reps)))
	}},
	{name: "rsidle", run: runIdle},
}

// cqloadMessages is how many messages a cqload point sends (in rounds of one per QP pair).
const cqloadMessages = 4000

// idleSeconds is how long rsidle's connections are held idle while their CPU is counted (guest seconds:
// with -icount sleep=off an idle guest skips ahead to its next timer).
const idleSeconds = 10

// peerKV runs a peer and parses its "KEY VALUE" lines.
func peerKV(cmd *exec.Cmd) (map[string]float64, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out, stderr.String())
	}
	kv, err := parseKV(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return kv, nil
}

func parseKV(s string) (map[string]float64, error) {
	kv := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %q is not KEY VALUE", l)
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %v", l, err)
		}
		kv[f[0]] = v
	}
	if len(kv) == 0 {
		return nil, errors.New("no figures printed")
	}
	return kv, nil
}

// runIdle runs a peer's rsidle (a client process and the server process it starts, n connections between
// them) and, once it says "idle", counts the CPU of both processes' threads from outside (neither reads
// anything while it is counted) over two windows of idleSeconds: idle_cpu_first right after the set-up
// (where a runtime may still return memory or finish a collection), idle_cpu the second, the steady state.
func runIdle(r runner, n int) (map[string]float64, error) {
	cmd := r.peerCmd("rsidle", benchlab.LabIP, strconv.Itoa(r.port), strconv.Itoa(n))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fail := func(err error) (map[string]float64, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	var printed strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "idle" {
		printed.WriteString(lines.Text() + "\n")
	}
	if lines.Text() != "idle" {
		return fail(fmt.Errorf("ended before its connections were idle (%v):\n%s", lines.Err(), printed.String()))
	}
	kv, err := parseKV(printed.String())
	if err != nil {
		return fail(err)
	}
	pids := []int{cmd.Process.Pid, int(kv["server_pid"])}
	var c [3]float64
	for i := range c {
		if i > 0 {
			time.Sleep(idleSeconds * time.Second)
		}
		if c[i], err = cpuOf(pids); err != nil {
			return fail(err)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	delete(kv, "server_pid")
	kv["idle_cpu_first"] = c[1] - c[0]
	kv["idle_cpu"] = c[2] - c[1]
	kv["rss_per_conn"] = (kv["rss"] - kv["rss_base"]) / float64(n)
	if g, ok := kv["goroutines"]; ok {
		kv["goroutines_per_conn"] = (g - kv["goroutines_base"]) / float64(n)
	}
	return kv, nil
}

// cpuOf is the CPU time of all the threads of processes pids: the first field of each
// /proc/PID/task/T/schedstat.
func cpuOf(pids []int) (float64, error) {
	var sum float64
	for _, pid := range pids {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		if err != nil {
			return 0, err
		}
		if len(tasks) == 0 {
			return 0, fmt.Errorf("process %d has ended", pid)
		}
		for _, p := range tasks {
			b, err := os.ReadFile(p)
			if err != nil {
				continue // the thread ended
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q", p, b)
			}
			sum += v
		}
	}
	return sum, nil
}

// machineNS is the time the machine's CPUs ran tasks (kernel threads and softirq work included, idle not):
// the sum of rq_cpu_time, the 7th field of each cpuN line of /proc/schedstat. Under -icount, instructions
// of everything that ran.
func machineNS() (float64, error) {
	b, err := os.ReadFile("/proc/schedstat")
	if err != nil {
		return 0, err
	}
	var sum float64
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		v, err := strconv.ParseFloat(f[7], 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/schedstat: %q", l)
		}
		sum += v
		found = true
	}
	if !found {
		return 0, errors.New("/proc/schedstat has no cpu lines (CONFIG_SCHEDSTATS?)")
	}
	return sum, nil
}
