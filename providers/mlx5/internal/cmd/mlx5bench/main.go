// Command mlx5bench compares goverbs' mlx5 data path with rdma-core's libmlx5 on the same work-request streams
// (issue 15 part 2) and prints a Go/C table: instructions per operation under callgrind (deterministic) and ns per
// operation (noisy on a shared machine). The C side is libmlx5emu's harness (Debian's libibverbs + libmlx5
// against an emulated kernel), the Go side the hw package's BenchmarkLibmlx5; both run the same loops.
//
// Instructions: valgrind --tool=callgrind with collection switched on only inside the measured call (Go:
// (*SendQueue).PostSend, (*RecvQueue).PostRecv, (*CQ).Poll; C: the harness's op_post/op_recv/op_poll, one call
// each into ibv_post_send/ibv_post_recv/ibv_poll_cq), at N and at 2N operations; (Ir(2N) - Ir(N)) / N removes
// one-time costs (first-call symbol binding, page faults of the first pass). ns: -runs alternating runs of each
// side, median and min-max.
//
// Run from the module root: go run ./providers/mlx5/internal/cmd/mlx5bench (make bench does).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/providers/mlx5/internal/cmd/libmlx5emu"
)

type op struct {
	name, what string
	unit       int    // work units (WRs, CQEs) per operation
	goFn       string // callgrind --toggle-collect pattern of the Go method
	cFn        string
	n          int // operations in the callgrind run (and 2n)
}

var ops = []op{
	{"inline", "one signaled 32 B inline SEND + BlueFlame", 1, "*hw.(*SendQueue).PostSend", "op_post", 20000},
	{"doorbell", "one signaled SEND, 1 SGE + 8 B doorbell", 1, "*hw.(*SendQueue).PostSend", "op_post", 20000},
	{"list16", "16 RDMA WRITEs, one doorbell (per WR)", 16, "*hw.(*SendQueue).PostSend", "op_post", 2000},
	{"recv", "post one receive, 1 SGE", 1, "*hw.(*RecvQueue).PostRecv", "op_recv", 20000},
	{"pollsend", "poll send CQEs, 16 per poll (per CQE)", 16, "*hw.(*CQ).Poll", "op_poll", 2000},
	{"pollrecv", "poll receive CQEs, 16 per poll (per CQE)", 16, "*hw.(*CQ).Poll", "op_poll", 2000},
}

// cEnv: libmlx5 without locks (as goverbs' hw queues, which leave serialisation to the caller) and BlueFlame for
// inline WQEs only, so that the SGE SEND rings the 8-byte doorbell. cLockedEnv is libmlx5's default locking.
var (
	cEnv       = []string{"MLX5_SINGLE_THREADED=1", "MLX5_POST_SEND_PREFER_BF=0"}
	cLockedEnv = []string{"MLX5_SINGLE_THREADED=0", "MLX5_POST_SEND_PREFER_BF=0"}
)

func main() {
	runs := flag.Int("runs", 5, "timed runs of each side (alternating)")
	timeN := flag.Int("n", 200000, "operations per timed run (lists and polls: n/10)")
	instr := flag.Bool("instr", true, "count instructions with callgrind (needs valgrind)")
	only := flag.String("op", "", "run only this operation")
	flag.Parse()
	if err := run(*runs, *timeN, *instr, *only); err != nil {
		fmt.Fprintln(os.Stderr, "mlx5bench:", err)
		os.Exit(1)
	}
}

func run(runs, timeN int, instr bool, only string) error {
	if err := libmlx5emu.Available(); err != nil {
		return fmt.Errorf("%w (scripts/install-deps.sh installs what is needed)", err)
	}
	if instr {
		if _, err := exec.LookPath("valgrind"); err != nil {
			return errors.New("valgrind not found (scripts/install-deps.sh installs it; -instr=false skips the counts)")
		}
	}
	dir, err := os.MkdirTemp("", "mlx5bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cBin, err := libmlx5emu.Build(dir)
	if err != nil {
		return err
	}
	goBin := filepath.Join(dir, "hw.test")
	gocmd := os.Getenv("GO")
	if gocmd == "" {
		gocmd = "go"
	}
	if out, err := exec.Command(gocmd, "test", "-c", "-o", goBin, "./providers/mlx5/internal/hw").CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c: %w\n%s", err, out)
	}

	type row struct {
		op                 op
		goI, cI, cLockedI  float64
		goNs, cNs          []float64
		goErr, cErr, notes string
	}
	var rows []row
	for _, o := range ops {
		if only != "" && o.name != only {
			continue
		}
		r := row{op: o}
		if instr {
			fmt.Fprintf(os.Stderr, "mlx5bench: %s: callgrind\n", o.name)
			if r.goI, err = perUnit(o, func(n int) (float64, error) { return goInstr(dir, goBin, o, n) }); err != nil {
				return err
			}
			if r.cI, err = perUnit(o, func(n int) (float64, error) { return cInstr(dir, cBin, o, n, cEnv) }); err != nil {
				return err
			}
			if r.cLockedI, err = perUnit(o, func(n int) (float64, error) { return cInstr(dir, cBin, o, n, cLockedEnv) }); err != nil {
				return err
			}
		}
		n := timeN
		if o.unit > 1 {
			n = timeN / 10
		}
		fmt.Fprintf(os.Stderr, "mlx5bench: %s: %d timed runs of each side\n", o.name, runs)
		for i := 0; i < runs; i++ {
			// Alternate which side goes first.
			first, second := goTime, cTime
			if i%2 == 1 {
				first, second = cTime, goTime
			}
			for _, f := range []func(string, string, op, int) (bool, float64, error){first, second} {
				isGo, ns, err := f(goBin, cBin, o, n)
				if err != nil {
					return err
				}
				if isGo {
					r.goNs = append(r.goNs, ns)
				} else {
					r.cNs = append(r.cNs, ns)
				}
			}
		}
		rows = append(rows, r)
	}

	host, _ := os.Hostname()
	fmt.Printf("\ngoverbs mlx5 (hw package) vs rdma-core libmlx5 (%s), same work-request streams, host %s\n",
		libmlx5emu.ProviderGlob, host)
	fmt.Println("instructions per unit: callgrind, (Ir(2N) - Ir(N)) / N of the measured call; C = libmlx5 with",
		"MLX5_SINGLE_THREADED=1 (no locks, as goverbs' queues), C locked = libmlx5's default locks")
	fmt.Printf("ns per unit: median (min-max) of %d alternating runs; noisy on a shared machine\n\n", runs)
	fmt.Println("| operation (unit) | Go instr | C instr | Go/C instr | C locked instr | Go ns | C ns | Go/C ns |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		gi, ci, ratio, li := "-", "-", "-", "-"
		if instr {
			gi, ci, ratio, li = f1(r.goI), f1(r.cI), fmt.Sprintf("%.2f", r.goI/r.cI), f1(r.cLockedI)
		}
		gm, cm := median(r.goNs), median(r.cNs)
		fmt.Printf("| %s: %s | %s | %s | %s | %s | %s | %s | %.2f |\n", r.op.name, r.op.what, gi, ci, ratio, li,
			spread(r.goNs), spread(r.cNs), gm/cm)
	}
	return nil
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spread(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", median(v), slices.Min(v), slices.Max(v))
}

// perUnit is (I(2n) - I(n)) / (n * units).
func perUnit(o op, count func(n int) (float64, error)) (float64, error) {
	a, err := count(o.n)
	if err != nil {
		return 0, err
	}
	b, err := count(2 * o.n)
	if err != nil {
		return 0, err
	}
	return (b - a) / float64(o.n*o.unit), nil
}

// callgrind runs args under callgrind with one profile per thread and returns the instructions collected in the
// threads whose profile names fn (the measured call): other threads (the Go runtime's GC workers, sysmon) are left
// out even when they run while collection is switched on.
func callgrind(dir string, env []string, fn string, args ...string) (float64, error) {
	out := filepath.Join(dir, "callgrind.out")
	old, _ := filepath.Glob(out + "*")
	for _, f := range old {
		os.Remove(f)
	}
	c := exec.Command("valgrind", append([]string{"--tool=callgrind", "--separate-threads=yes",
		"--callgrind-out-file=" + out, "--toggle-collect=" + fn}, args...)...)
	c.Env = append(os.Environ(), env...)
	b, err := c.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, b)
	}
	files, _ := filepath.Glob(out + "*")
	name := strings.Trim(fn[strings.LastIndex(fn, ".")+1:], "*")
	total, found := 0.0, false
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		if !bytes.Contains(data, []byte(name)) {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "totals: "); ok {
				n, err := strconv.ParseFloat(strings.Fields(v)[0], 64)
				if err != nil {
					return 0, err
				}
				total += n
				found = true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("%s: no callgrind profile names %s", strings.Join(args, " "), name)
	}
	return total, nil
}

func goInstr(dir, goBin string, o op, n int) (float64, error) {
	// Callgrind's collection is on while any thread runs during the measured call, so a concurrent GC mark worker
	// was counted in a first version (95-2623 instructions for the same receive post): GOGC=off, the benchmark
	// locked to its thread and only the profiles of threads that ran the measured call are summed.
	return callgrind(dir, []string{"GODEBUG=asyncpreemptoff=1", "GOGC=off"}, o.goFn, goBin, "-test.run", "^$",
		"-test.bench", "Libmlx5/"+o.name+"$", "-test.benchtime", fmt.Sprintf("%dx", n))
}

func cInstr(dir, cBin string, o op, n int, env []string) (float64, error) {
	return callgrind(dir, env, o.cFn, cBin, "count", o.name, strconv.Itoa(n))
}

var nsUnit = regexp.MustCompile(`([0-9.]+) ns/unit`)

func goTime(goBin, _ string, o op, n int) (bool, float64, error) {
	c := exec.Command(goBin, "-test.run", "^$", "-test.bench", "Libmlx5/"+o.name+"$", "-test.benchtime",
		fmt.Sprintf("%dx", n), "-test.cpu", "1")
	b, err := c.CombinedOutput()
	if err != nil {
		return true, 0, fmt.Errorf("go %s: %w\n%s", o.name, err, b)
	}
	m := nsUnit.FindSubmatch(b)
	if m == nil {
		return true, 0, fmt.Errorf("go %s: no ns/unit in\n%s", o.name, b)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	return true, v, err
}

func cTime(_, cBin string, o op, n int) (bool, float64, error) {
	c := libmlx5emu.Command(cBin, "time", o.name, strconv.Itoa(n))
	c.Env = append(c.Env, cEnv...)
	b, err := c.CombinedOutput()
	if err != nil {
		return false, 0, fmt.Errorf("C %s: %w\n%s", o.name, err, b)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ns/op "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return false, f, err
		}
	}
	return false, 0, fmt.Errorf("C %s: no ns/op in\n%s", o.name, b)
}
