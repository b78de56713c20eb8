package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/rsocket"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// profileEnv names the directory where Go peers write a CPU profile each (scalebench -profile).
const profileEnv = "SCALEBENCH_PROFILE"

// peer is the Go side of test/cpeer/scalepeer.c: the same modes, arguments and output lines, with goverbs.
func peer(args []string) int {
	if dir := os.Getenv(profileEnv); dir != "" && len(args) > 0 {
		// A CPU profile of this peer process (under -icount, CPU time is instructions): 1000 samples a
		// second of CPU, one per million instructions.
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", args[0], os.Getpid())))
		if err == nil {
			runtime.SetCPUProfileRate(1000)
			if err = pprof.StartCPUProfile(f); err == nil {
				defer pprof.StopCPUProfile()
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scalebench peer: profile:", err)
			return 1
		}
	}
	var err error
	switch {
	case len(args) == 3 && args[0] == "objects":
		err = objects(args[1], atoi(args[2]))
	case len(args) == 5 && args[0] == "cqload":
		err = cqload(args[1], atoi(args[2]), atoi(args[3]))
	case len(args) == 4 && args[0] == "mr":
		err = mrCurve(args[1], atoi(args[2]), atoi(args[3]))
	case len(args) == 4 && args[0] == "rsidle":
		err = rsidle(args[1], args[2], atoi(args[3]))
	case len(args) == 4 && args[0] == "rsserve":
		err = rsserve(args[1], args[2], atoi(args[3]))
	default:
		fmt.Fprintln(os.Stderr, "usage: scalebench peer objects DEVICE N | mr DEVICE BYTES REPS | cqload DEVICE N MSGS GIDX | rsidle IP PORT N")
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench peer:", err)
		return 1
	}
	return 0
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "scalebench peer: %q is not a count ≥ 1\n", s)
		os.Exit(2)
	}
	return n
}

// openPD opens dev and allocates a PD on it.
func openPD(dev string) (*uverbs.Context, *uverbs.PD, error) {
	ctx, err := uverbs.Open(dev)
	if err != nil {
		return nil, nil, err
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		ctx.Close()
		return nil, nil, err
	}
	return ctx, pd, nil
}

// perObject is the guest nanoseconds per object of what ran from t0 to t1.
func perObject(t0, t1 time.Time, n int) float64 {
	return float64(t1.Sub(t0).Nanoseconds()) / float64(n)
}

func objects(dev string, n int) error {
	ctx, pd, err := openPD(dev)
	if err != nil {
		return err
	}
	defer ctx.Close()
	defer pd.Close()
	cqs := make([]*uverbs.CQ, n)
	t0 := time.Now()
	for i := range cqs {
		if cqs[i], err = ctx.CreateCQ(uverbs.CQAttr{CQE: 16}); err != nil {
			return err
		}
	}
	t1 := time.Now()
	for _, cq := range cqs {
		if err := cq.Close(); err != nil {
			return err
		}
	}
	t2 := time.Now()
	fmt.Printf("cq_create %.1f\ncq_destroy %.1f\n", perObject(t0, t1, n), perObject(t1, t2, n))

	cq, err := ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		return err
	}
	defer cq.Close()
	attr := uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}
	qps := make([]*uverbs.QP, n)
	t0 = time.Now()
	for i := range qps {
		if qps[i], err = pd.CreateQP(attr); err != nil {
			return err
		}
	}
	t1 = time.Now()
	for _, qp := range qps {
		if err := qp.Close(); err != nil {
			return err
		}
	}
	t2 = time.Now()
	fmt.Printf("qp_create %.1f\nqp_destroy %.1f\n", perObject(t0, t1, n), perObject(t1, t2, n))
	return nil
}

func mrCurve(dev string, size, reps int) error {
	ctx, pd, err := openPD(dev)
	if err != nil {
		return err
	}
	defer ctx.Close()
	defer pd.Close()
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	mrs := make([]*uverbs.MR, reps)
	access := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead
	t0 := time.Now()
	for i := range mrs {
		if mrs[i], err = pd.RegMR(buf, access); err != nil {
			return err
		}
	}
	t1 := time.Now()
	for _, mr := range mrs {
		if err := mr.Close(); err != nil {
			return err
		}
	}
	t2 := time.Now()
	fmt.Printf("mr_reg %.1f\nmr_dereg %.1f\n", perObject(t0, t1, reps), perObject(t1, t2, reps))
	return nil
}

// proc is /proc/self, or /proc/PID for pid > 0.
func proc(pid int) string {
	if pid > 0 {
		return "/proc/" + strconv.Itoa(pid)
	}
	return "/proc/self"
}

// rssKiB is the resident memory of process pid (0: this one), from /proc/PID/statm.
func rssKiB(pid int) (float64, error) {
	b, err := os.ReadFile(proc(pid) + "/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("%s/statm: %q", proc(pid), b)
	}
	pages, err := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / 1024, err
}

// cpuNS is the CPU time of all the threads of process pid (0: this one), the first field of each
// /proc/PID/task/T/schedstat.
func cpuNS(pid int) (float64, error) {
	if pid == 0 {
		pid = os.Getpid()
	}
	return cpuOf([]int{pid})
}

// both sums a figure of this process and of process pid.
func both(f func(int) (float64, error), pid int) (float64, error) {
	a, err := f(0)
	if err != nil {
		return 0, err
	}
	b, err := f(pid)
	return a + b, err
}

// rsserve is rsidle's server process: it listens, says "listening" on stdout, accepts n connections, reads a
// byte from each and sends it back, says "ready", and holds them until its stdin ends.
func rsserve(ip, port string, n int) error {
	ln, err := rsocket.Listen("rdma", net.JoinHostPort(ip, port))
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Printf("listening %d\n", runtime.NumGoroutine())
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	b := []byte{0}
	for _, c := range conns {
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		if _, err := c.Write(b); err != nil {
			return err
		}
	}
	fmt.Printf("ready\ngoroutines %d\n", runtime.NumGoroutine())
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// rsidle runs rsserve as a child process (this program, re-executed), connects to it n times, prints its
// figures and the server's pid, says "idle" and holds the connections until its stdin ends (the caller
// counts both processes' CPU meanwhile).
func rsidle(ip, port string, n int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "peer", "rsserve", ip, port, strconv.Itoa(n))
	stdin, err := srv.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { stdin.Close(); srv.Wait() }()
	lines := bufio.NewScanner(stdout)
	expect := func(want string) error {
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), want) {
			return fmt.Errorf("the server process said %q, want %q (%v)", lines.Text(), want, lines.Err())
		}
		return nil
	}
	if err := expect("listening"); err != nil {
		return err
	}
	var srvG0 int
	fmt.Sscanf(lines.Text(), "listening %d", &srvG0)
	pid := srv.Process.Pid
	runtime.GC()
	base, err := both(rssKiB, pid)
	if err != nil {
		return err
	}
	goroutinesBase := runtime.NumGoroutine() + srvG0
	c0, err := both(cpuNS, pid)
	if err != nil {
		return err
	}
	m0, err := machineNS()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(ip, port)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	t0 := time.Now()
	for range n {
		c, err := rsocket.Dial("rdma", addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	b := []byte{'x'}
	for _, c := range conns {
		if _, err := c.Write(b); err != nil {
			return err
		}
	}
	for _, c := range conns {
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
	}
	if err := expect("ready"); err != nil {
		return err
	}
	t1 := time.Now()
	m1, err := machineNS()
	if err != nil {
		return err
	}
	c1, err := both(cpuNS, pid)
	if err != nil {
		return err
	}
	if err := expect("goroutines"); err != nil {
		return err
	}
	var srvG int
	fmt.Sscanf(lines.Text(), "goroutines %d", &srvG)
	rss, err := both(rssKiB, pid)
	if err != nil {
		return err
	}
	goroutines := runtime.NumGoroutine() + srvG
	fmt.Printf("connect %.1f\nconnect_cpu %.1f\nconnect_machine %.1f\nrss_base %.0f\nrss %.0f\ngoroutines_base %d\ngoroutines %d\nserver_pid %d\nidle\n",
		perObject(t0, t1, n), (c1-c0)/float64(n), (m1-m0)/float64(n), base, rss, goroutinesBase, goroutines, pid)
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// cqload is scalepeer's: n connected pairs of RC QPs of this process, every QP on one CQ with a completion
// channel, rounds of one 64-byte SEND per pair until msgs messages; all 2n completions of a round are polled
// from the CQ, waiting for its event when it is empty. It prints cqload, ns per message. (gidx is the C
// peer's; QP.Endpoint chooses the port's GID as goverbs does.)
func cqload(dev string, n, msgs int) error {
	ctx, pd, err := openPD(dev)
	if err != nil {
		return err
	}
	defer ctx.Close()
	defer pd.Close()
	ch, err := ctx.CreateCompChannel(nil)
	if err != nil {
		return err
	}
	defer ch.Close()
	cq, err := ctx.CreateCQ(uverbs.CQAttr{CQE: 2 * n, Channel: ch})
	if err != nil {
		return err
	}
	defer cq.Close()
	buf, err := uverbs.AllocBuffer(2 * n * 64)
	if err != nil {
		return err
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes()[:2*n*64], uverbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer mr.Close()
	attr := uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}
	qps := make([]*uverbs.QP, 2*n)
	defer func() {
		for _, qp := range qps {
			if qp != nil {
				qp.Close()
			}
		}
	}()
	for i := range qps {
		if qps[i], err = pd.CreateQP(attr); err != nil {
			return err
		}
	}
	for i := range n {
		a, b := qps[i], qps[n+i]
		ea, err := a.Endpoint(nil)
		if err != nil {
			return err
		}
		eb, err := b.Endpoint(nil)
		if err != nil {
			return err
		}
		if err := a.Connect(eb, nil); err != nil {
			return err
		}
		if err := b.Connect(ea, nil); err != nil {
			return err
		}
	}
	rounds := max(1, msgs/n)
	sges := make([]uverbs.SGE, 2*n)
	rwr := make([]uverbs.RecvWR, n)
	swr := make([]uverbs.SendWR, n)
	for i := range n {
		sges[i], sges[n+i] = mr.SGE(i*64, 64), mr.SGE((n+i)*64, 64)
		rwr[i] = uverbs.RecvWR{WRID: uint64(n + i), SGL: sges[n+i : n+i+1]}
		swr[i] = uverbs.SendWR{WRID: uint64(i), SGL: sges[i : i+1], Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled}
	}
	wc := make([]uverbs.WC, 16)
	if err := cq.ReqNotify(false); err != nil {
		return err
	}
	bg := context.Background()
	m0, err := machineNS()
	if err != nil {
		return err
	}
	t0 := time.Now()
	for range rounds {
		for i := range n {
			if _, err := qps[n+i].PostRecv(rwr[i : i+1]); err != nil {
				return err
			}
			if _, err := qps[i].PostSend(swr[i : i+1]); err != nil {
				return err
			}
		}
		for got := 0; got < 2*n; {
			k, err := cq.Poll(wc)
			if err != nil {
				return err
			}
			for _, w := range wc[:k] {
				if err := w.Err(); err != nil {
					return fmt.Errorf("cqload: completion %d: %w", w.WRID, err)
				}
			}
			got += k
			if k == 0 {
				evCQ, err := ch.GetEvent(bg)
				if err != nil {
					return err
				}
				evCQ.AckEvents(1)
				if err := cq.ReqNotify(false); err != nil {
					return err
				}
			}
		}
	}
	t1 := time.Now()
	m1, err := machineNS()
	if err != nil {
		return err
	}
	fmt.Printf("cqload %.1f\ncqload_machine %.1f\n", float64(t1.Sub(t0).Nanoseconds())/float64(rounds*n),
		(m1-m0)/float64(rounds*n))
	return nil
}
