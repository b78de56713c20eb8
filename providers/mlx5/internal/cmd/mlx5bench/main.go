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
// The public path (issue 28 part 4): the same streams through uverbs' QP.PostSend, QP.PostRecv and CQ.Poll (the
// closed gate and the status-to-error step, then goverbs' mlx5 provider with its QP state check and queue locks,
// then the hw package) in uverbs' BenchmarkMlx5Public, over the registered mlx5 provider behind a fake kernel;
// against libmlx5's ibv_post_send, ibv_post_recv and ibv_poll_cq with its defaults (locks on, BlueFlame for every
// single-WQE post that fits, MLX5_POST_SEND_PREFER_BF unset: so is goverbs' provider). Rows pub-*: a QP and CQ as
// CreateQP and CreateCQ make them, against libmlx5's default locking; rows td-*: the QP and CQ made in a parent
// domain with a thread domain (goverbs' QP then posts without its queue locks; its CQ still locks, as libmlx5's
// CQ in such a parent domain does: create_cq takes its lock setting from MLX5_SINGLE_THREADED alone), against
// libmlx5 with MLX5_SINGLE_THREADED=1 (no lock anywhere: the QP's as in such a parent domain, and the CQ's as
// well, which a thread domain alone does not drop; the td-poll rows are locked Go against unlocked C). Measured
// calls: Go (*QP).PostSend, (*QP).PostRecv, (*CQ).Poll of package uverbs.
//
// The extended API (issue 25; -set ext): the inline, doorbell and list16 streams built with the work-request
// builder, uverbs' QP.StartWR … Complete on a QP created with SendOps SEND | RDMA_WRITE, against ibv_wr_start,
// ibv_wr_send or ibv_wr_rdma_write, ibv_wr_set_inline_data or ibv_wr_set_sge, ibv_wr_complete on a QP made by
// ibv_create_qp_ex with IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE (rows wr-*); and the poll streams read with
// the extended poll, uverbs' CQ.StartPoll, NextPoll, EndPoll on a CQ as CreateCQEx makes it, against
// ibv_start_poll, ibv_next_poll, ibv_end_poll on a CQ from ibv_create_cq_ex, 16 completions per poll, reading
// wr_id, status, opcode and byte_len of each (rows pollex-*). Locked (Go: the public QP and CQ; C: libmlx5's
// defaults) and td-* (Go: the td variant's QP, and the CQ with CQSingleThreaded; C: MLX5_SINGLE_THREADED=1 and
// IBV_CREATE_CQ_ATTR_SINGLE_THREADED). Measured calls: Go uverbs' mlx5WRInline, mlx5WRDoorbell, mlx5WRList16,
// mlx5PollEx (test functions of one chain or one poll each); C the harness's op_wr_inline, op_wr_doorbell,
// op_wr_list16, op_pollex.
//
// -set hw, public, td or ext runs only those rows (default: all); -op one row by name (inline, pub-inline,
// td-inline, wr-inline, td-pollex-send, ...).
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
	// set is the row's group: hw (the hw package against unlocked libmlx5), public or td (uverbs' public path).
	set string
	// goBench is the Go benchmark (-test.bench pattern, without the trailing $), cOp the harness's operation and
	// cEnv the harness's libmlx5 configuration.
	goBench, cOp string
	cEnv         []string
}

// cEnv: libmlx5 without locks (as goverbs' hw queues, which leave serialisation to the caller) and BlueFlame for
// inline WQEs only, so that the SGE SEND rings the 8-byte doorbell. cLockedEnv is libmlx5's default locking.
// cPublicEnv and cTDEnv are the public rows' libmlx5: its defaults (locks, BlueFlame for every single-WQE post
// that fits, as goverbs' provider), and the same without locks.
var (
	cEnv       = []string{"MLX5_SINGLE_THREADED=1", "MLX5_POST_SEND_PREFER_BF=0"}
	cLockedEnv = []string{"MLX5_SINGLE_THREADED=0", "MLX5_POST_SEND_PREFER_BF=0"}
	cPublicEnv = []string{"MLX5_SINGLE_THREADED=0", "MLX5_POST_SEND_PREFER_BF=1"}
	cTDEnv     = []string{"MLX5_SINGLE_THREADED=1", "MLX5_POST_SEND_PREFER_BF=1"}
)

var hwOps = []op{
	{"inline", "one signaled 32 B inline SEND + BlueFlame", 1, "*hw.(*SendQueue).PostSend", "op_post", 20000, "", "", "", nil},
	{"doorbell", "one signaled SEND, 1 SGE + 8 B doorbell", 1, "*hw.(*SendQueue).PostSend", "op_post", 20000, "", "", "", nil},
	{"list16", "16 RDMA WRITEs, one doorbell (per WR)", 16, "*hw.(*SendQueue).PostSend", "op_post", 2000, "", "", "", nil},
	{"recv", "post one receive, 1 SGE", 1, "*hw.(*RecvQueue).PostRecv", "op_recv", 20000, "", "", "", nil},
	{"pollsend", "poll send CQEs, 16 per poll (per CQE)", 16, "*hw.(*CQ).Poll", "op_poll", 2000, "", "", "", nil},
	{"pollrecv", "poll receive CQEs, 16 per poll (per CQE)", 16, "*hw.(*CQ).Poll", "op_poll", 2000, "", "", "", nil},
}

// ops are the hw rows, then the public path's: the same streams, with the provider's default BlueFlame (the
// doorbell stream's SEND is BlueFlamed on both sides).
var ops = func() []op {
	var all []op
	for _, o := range hwOps {
		o.set, o.goBench, o.cOp, o.cEnv = "hw", "Libmlx5/"+o.name, o.name, cEnv
		all = append(all, o)
	}
	pubFn := map[string]string{"op_post": "*uverbs.(*QP).PostSend", "op_recv": "*uverbs.(*QP).PostRecv",
		"op_poll": "*uverbs.(*CQ).Poll"}
	for _, v := range []struct{ set, prefix, bench string }{{"public", "pub-", "locked"}, {"td", "td-", "td"}} {
		for _, o := range hwOps {
			p := o
			p.set, p.name, p.goFn, p.goBench, p.cOp = v.set, v.prefix+o.name, pubFn[o.cFn], "Mlx5Public/"+v.bench+"/"+o.name, o.name
			p.cEnv = cPublicEnv
			if v.set == "td" {
				p.cEnv = cTDEnv
			}
			if o.name == "doorbell" {
				p.what = "one signaled SEND, 1 SGE, BlueFlame (default PREFER_BF)"
			}
			all = append(all, p)
		}
	}
	for _, v := range []struct{ prefix, bench string }{{"", "locked"}, {"td-", "td"}} {
		for _, x := range extOps {
			p := x
			p.set, p.name, p.goBench, p.cOp = "ext", v.prefix+x.name, "Mlx5Public/"+v.bench+"/"+x.name, x.name
			p.cEnv = cPublicEnv
			if v.bench == "td" {
				p.cEnv = cTDEnv
			}
			all = append(all, p)
		}
	}
	return all
}()

// extOps are the extended API's rows (set ext), locked and td-*.
var extOps = []op{
	{"wr-inline", "builder: one signaled 32 B inline SEND + BlueFlame", 1, "*uverbs.mlx5WRInline", "op_wr_inline", 20000, "", "", "", nil},
	{"wr-doorbell", "builder: one signaled SEND, 1 SGE, BlueFlame", 1, "*uverbs.mlx5WRDoorbell", "op_wr_doorbell", 20000, "", "", "", nil},
	{"wr-list16", "builder: 16 RDMA WRITEs, one doorbell (per WR)", 16, "*uverbs.mlx5WRList16", "op_wr_list16", 2000, "", "", "", nil},
	{"pollex-send", "extended poll of send CQEs, 16 per poll (per CQE)", 16, "*uverbs.mlx5PollEx", "op_pollex", 2000, "", "", "", nil},
	{"pollex-recv", "extended poll of receive CQEs, 16 per poll (per CQE)", 16, "*uverbs.mlx5PollEx", "op_pollex", 2000, "", "", "", nil},
}

func main() {
	runs := flag.Int("runs", 5, "timed runs of each side (alternating)")
	timeN := flag.Int("n", 200000, "operations per timed run (lists and polls: n/10)")
	instr := flag.Bool("instr", true, "count instructions with callgrind (needs valgrind)")
	only := flag.String("op", "", "run only this operation (a row name: inline, pub-inline, td-inline, ...)")
	set := flag.String("set", "", "run only this group of rows: hw, public, td or ext (default: all)")
	flag.Parse()
	if err := run(*runs, *timeN, *instr, *only, *set); err != nil {
		fmt.Fprintln(os.Stderr, "mlx5bench:", err)
		os.Exit(1)
	}
}

func run(runs, timeN int, instr bool, only, set string) error {
	var sel []op
	for _, o := range ops {
		if (only == "" || o.name == only) && (set == "" || o.set == set) {
			sel = append(sel, o)
		}
	}
	if len(sel) == 0 {
		return fmt.Errorf("no row named %q in set %q", only, set)
	}
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
	gocmd := os.Getenv("GO")
	if gocmd == "" {
		gocmd = "go"
	}
	// goBins: the hw rows' test binary (package hw) and the public rows' (package uverbs), built when needed.
	goBins := map[string]string{}
	for _, o := range sel {
		pkg := "./providers/mlx5/internal/hw"
		if o.set != "hw" {
			pkg = "./uverbs"
		}
		if _, ok := goBins[pkg]; ok {
			continue
		}
		bin := filepath.Join(dir, filepath.Base(pkg)+".test")
		if out, err := exec.Command(gocmd, "test", "-c", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c %s: %w\n%s", pkg, err, out)
		}
		goBins[pkg] = bin
	}
	binOf := func(o op) string {
		if o.set == "hw" {
			return goBins["./providers/mlx5/internal/hw"]
		}
		return goBins["./uverbs"]
	}

	var rows []row
	for _, o := range sel {
		r := row{op: o}
		goBin := binOf(o)
		if instr {
			fmt.Fprintf(os.Stderr, "mlx5bench: %s: callgrind\n", o.name)
			if r.goI, err = perUnit(o, func(n int) (float64, error) { return goInstr(dir, goBin, o, n) }); err != nil {
				return err
			}
			if r.cI, err = perUnit(o, func(n int) (float64, error) { return cInstr(dir, cBin, o, n, o.cEnv) }); err != nil {
				return err
			}
			if o.set == "hw" {
				if r.cLockedI, err = perUnit(o, func(n int) (float64, error) { return cInstr(dir, cBin, o, n, cLockedEnv) }); err != nil {
					return err
				}
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
	hw, pub, ext := false, false, false
	for _, r := range rows {
		hw, pub, ext = hw || r.op.set == "hw", pub || r.op.set == "public" || r.op.set == "td", ext || r.op.set == "ext"
	}
	if hw {
		fmt.Printf("\ngoverbs mlx5 (hw package) vs rdma-core libmlx5 (%s), same work-request streams, host %s\n",
			libmlx5emu.ProviderGlob, host)
		fmt.Println("instructions per unit: callgrind, (Ir(2N) - Ir(N)) / N of the measured call; C = libmlx5 with",
			"MLX5_SINGLE_THREADED=1 (no locks, as goverbs' queues), C locked = libmlx5's default locks")
		fmt.Printf("ns per unit: median (min-max) of %d alternating runs; noisy on a shared machine\n\n", runs)
		fmt.Println("| operation (unit) | Go instr | C instr | Go/C instr | C locked instr | Go ns | C ns | Go/C ns |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			if r.op.set != "hw" {
				continue
			}
			gi, ci, ratio, li := "-", "-", "-", "-"
			if instr {
				gi, ci, ratio, li = f1(r.goI), f1(r.cI), fmt.Sprintf("%.2f", r.goI/r.cI), f1(r.cLockedI)
			}
			gm, cm := median(r.goNs), median(r.cNs)
			fmt.Printf("| %s: %s | %s | %s | %s | %s | %s | %s | %.2f |\n", r.op.name, r.op.what, gi, ci, ratio, li,
				spread(r.goNs), spread(r.cNs), gm/cm)
		}
	}
	if pub {
		fmt.Printf("\ngoverbs' public path (uverbs QP.PostSend, QP.PostRecv, CQ.Poll over the mlx5 provider) vs "+
			"libmlx5's ibv_post_send, ibv_post_recv, ibv_poll_cq (%s), host %s\n", libmlx5emu.ProviderGlob, host)
		fmt.Println("pub-*: default locking on both sides (C: MLX5_SINGLE_THREADED=0); td-*: goverbs' QP and CQ in a",
			"parent domain with a thread domain, C: MLX5_SINGLE_THREADED=1; both: BlueFlame for every single-WQE",
			"post that fits (MLX5_POST_SEND_PREFER_BF=1, goverbs' default)")
		fmt.Println("instructions per unit: callgrind, (Ir(2N) - Ir(N)) / N of the measured call")
		fmt.Printf("ns per unit: median (min-max) of %d alternating runs; noisy on a shared machine\n\n", runs)
		fmt.Println("| operation (unit) | Go instr | C instr | Go/C instr | Go ns | C ns | Go/C ns |")
		fmt.Println("|---|---|---|---|---|---|---|")
		printRows(rows, instr, "public", "td")
	}
	if ext {
		fmt.Printf("\ngoverbs' extended API (uverbs QP.StartWR … Complete, CQ.StartPoll/NextPoll/EndPoll over the mlx5 "+
			"provider) vs libmlx5's ibv_wr_* and ibv_start_poll/ibv_next_poll/ibv_end_poll (%s), host %s\n",
			libmlx5emu.ProviderGlob, host)
		fmt.Println("locked rows: the public QP and CQ, C: libmlx5's defaults (MLX5_SINGLE_THREADED=0); td-*: the QP in a",
			"thread domain and the CQ with CQSingleThreaded, C: MLX5_SINGLE_THREADED=1 and a single-threaded CQ;",
			"both: MLX5_POST_SEND_PREFER_BF=1")
		fmt.Println("instructions per unit: callgrind, (Ir(2N) - Ir(N)) / N of the measured call (one chain or one poll)")
		fmt.Printf("ns per unit: median (min-max) of %d alternating runs; noisy on a shared machine\n\n", runs)
		fmt.Println("| operation (unit) | Go instr | C instr | Go/C instr | Go ns | C ns | Go/C ns |")
		fmt.Println("|---|---|---|---|---|---|---|")
		printRows(rows, instr, "ext")
	}
	return nil
}

// printRows prints the public-style table rows of the given sets.
func printRows(rows []row, instr bool, sets ...string) {
	for _, r := range rows {
		if !slices.Contains(sets, r.op.set) {
			continue
		}
		gi, ci, ratio := "-", "-", "-"
		if instr {
			gi, ci, ratio = f1(r.goI), f1(r.cI), fmt.Sprintf("%.2f", r.goI/r.cI)
		}
		gm, cm := median(r.goNs), median(r.cNs)
		fmt.Printf("| %s: %s | %s | %s | %s | %s | %s | %.2f |\n", r.op.name, r.op.what, gi, ci, ratio,
			spread(r.goNs), spread(r.cNs), gm/cm)
	}
}

type row struct {
	op                 op
	goI, cI, cLockedI  float64
	goNs, cNs          []float64
	goErr, cErr, notes string
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
		"-test.bench", o.goBench+"$", "-test.benchtime", fmt.Sprintf("%dx", n))
}

func cInstr(dir, cBin string, o op, n int, env []string) (float64, error) {
	return callgrind(dir, env, o.cFn, cBin, "count", o.cOp, strconv.Itoa(n))
}

var nsUnit = regexp.MustCompile(`([0-9.]+) ns/unit`)

func goTime(goBin, _ string, o op, n int) (bool, float64, error) {
	c := exec.Command(goBin, "-test.run", "^$", "-test.bench", o.goBench+"$", "-test.benchtime",
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
	c := libmlx5emu.Command(cBin, "time", o.cOp, strconv.Itoa(n))
	c.Env = append(c.Env, o.cEnv...) // after libmlx5emu.Env: the last value of a variable wins
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
