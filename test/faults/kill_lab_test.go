package faults

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cgroup"
	"github.com/goverbs/goverbs/internal/cgrouptest"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/labtest"
)

// killScenario is a pair of tools, one of which is killed.
type killScenario struct {
	name string
	tool string   // the C tool's name; goverbs runs as it (multi-call)
	srv  []string // server arguments
	cli  []string // client arguments (the server's address is appended)
	// connected is what a side prints once its pair is connected; a survivor that never printed it was
	// waiting for its peer to arrive, which no tool gives up on.
	connected string
	// survivorExits: a connected survivor leaves by itself (perftest's bandwidth tests through their TCP
	// channel, rping through rdma_cm's disconnect event); false: it waits forever for a receive, in C as in
	// goverbs (pingpong, send_lat: RC has no keepalive), and the test ends it.
	survivorExits bool
	window        time.Duration // the victim is killed at a uniformly random moment within this
	port          func(int) []string
}

const labAddr = "10.233.0.1"

func killScenarios() []killScenario {
	perftestPort := func(p int) []string { return []string{"-p", strconv.Itoa(p)} }
	return []killScenario{
		{name: "ib_write_bw", tool: "ib_write_bw", srv: []string{"-d", labtest.Device(), "-D", "4"},
			cli: []string{"-d", labtest.Device(), "-D", "4"}, connected: "local address", survivorExits: true,
			window: 3 * time.Second, port: perftestPort},
		{name: "ib_send_lat-events", tool: "ib_send_lat", srv: []string{"-d", labtest.Device(), "-e", "-n", "100000"},
			cli: []string{"-d", labtest.Device(), "-e", "-n", "100000"}, connected: "local address", survivorExits: false,
			window: 3 * time.Second, port: perftestPort},
		{name: "ibv_rc_pingpong-events", tool: "ibv_rc_pingpong", srv: []string{"-d", labtest.Device(), "-g", "1", "-e", "-n", "1000000"},
			cli: []string{"-d", labtest.Device(), "-g", "1", "-e", "-n", "1000000"}, connected: "remote address",
			survivorExits: false, window: 2 * time.Second, port: perftestPort},
		{name: "rping", tool: "rping", srv: []string{"-s", "-a", labAddr, "-C", "1000000"},
			cli: []string{"-c", "-a", labAddr, "-C", "1000000"}, connected: "", survivorExits: true,
			window: 2 * time.Second, port: perftestPort},
	}
}

// killOutcome is what one kill did.
type killOutcome struct {
	scenario, victim, survivor string // victim and survivor: "go client", "c server", ...
	after                      time.Duration
	reclaimed                  time.Duration // until no object of the victim's threads was left
	survivorConnected          bool
	survivorExit               string // "exit N after T", or "waited"
	exitTook                   time.Duration
	survivorLast               string        // the survivor's last line of output, when it left
	otherThreads               int           // the victim's objects the tracker named by a thread ID other than its PID
	listenWait, took           time.Duration // the server's start until it listened; the whole kill
}

// TestLabKill kills goverbs' tools (and rdma-core's, with goverbs as the survivor) with SIGKILL at random
// moments — while connecting, mid-transfer, with completion events armed, with MRs registered, during
// rdma_cm's connect — and checks that the kernel reclaims every object of the killed process (rdma resource
// by PID, and its cgroup's rdma.current back to zero) and that the survivor behaves as the C tool's survivor
// does: perftest's and rping's leave, pingpong's waits. GOVERBS_FAULTS_SEED repeats a run's moments.
func TestLabKill(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	if !labtest.InLab() {
		t.Skip("kills processes and moves them between cgroups: runs only in the lab VM")
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("GOVERBS_FAULTS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("GOVERBS_FAULTS_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	h := cgrouptest.UseV2(t)
	cg := cgrouptest.NewCgroup(t, h, "kill")
	cgDir, err := os.Open(cg.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer cgDir.Close()
	nl, err := netlinkrdma.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	dev, err := nl.Device(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}

	goBin := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(goBin, 0o755); err != nil {
		t.Fatal(err)
	}
	self := interop.Binary(t)
	scenarios := killScenarios()
	for _, sc := range scenarios {
		if err := os.Symlink(self, filepath.Join(goBin, sc.tool)); err != nil {
			t.Fatal(err)
		}
		if _, err := exec.LookPath(sc.tool); err != nil {
			t.Fatalf("%s is needed: %v", sc.tool, err)
		}
	}
	// Victim/survivor pairs: goverbs killed with C or goverbs surviving, and C killed with goverbs surviving.
	pairs := [][2]string{{"go", "c"}, {"go", "go"}, {"c", "go"}}
	kills := 8 * scale()
	var outcomes []killOutcome
	port := 21000
	for i := 0; i < kills; i++ {
		// Every scenario and every pairing within the first dozen kills (the short version's eight see all of
		// both): the pairing shifts by one each time the scenarios come round.
		sc := scenarios[i%len(scenarios)]
		p := pairs[(i+i/len(scenarios))%len(pairs)]
		victimIsServer := rng.IntN(2) == 0
		after := time.Duration(rng.Int64N(int64(sc.window)))
		port++
		out := killOnce(t, sc, p[0], p[1], victimIsServer, after, port, goBin, int(cgDir.Fd()), cg, nl, dev.Index)
		outcomes = append(outcomes, out)
		if out.exitTook > 10*time.Second {
			// Survivors leave within a second or two of the kill; one that took far longer waited for something
			// of the kernel's (an rdma_cm timeout, a retransmission limit). The summary keeps which (a TestLabKill
			// of 114 s instead of 30 s on 6.12 left no trace of it before).
			labtest.Note(t, "kill %d, %s: the %s left %v after its peer (the %s, killed %v after the start) died, saying %q (GOVERBS_FAULTS_SEED=%d)",
				i, sc.name, out.survivor, out.exitTook.Round(time.Millisecond), out.victim, out.after.Round(time.Millisecond), out.survivorLast, seed)
		}
		if out.took > 20*time.Second {
			// A kill takes a few seconds; TestLabKill has taken 114-117 s on 6.12 (2026-11-27, 2026-11-28 in CI)
			// with no slow survivor noted, so the time went elsewhere: say where.
			labtest.Note(t, "kill %d, %s (%s killed %v after the start): %v in all — server listening after %v, objects reclaimed %v after the kill, survivor %s",
				i, sc.name, out.victim, out.after.Round(time.Millisecond), out.took.Round(time.Millisecond), out.listenWait.Round(time.Millisecond),
				out.reclaimed.Round(time.Millisecond), out.survivorExit)
		}
		if t.Failed() {
			break
		}
	}
	report(t, outcomes)
}

type proc struct {
	cmd    *exec.Cmd
	out    labtest.SyncBuffer // stdout and stderr
	stderr labtest.SyncBuffer // stderr alone
	done   chan struct{}
}

func startTool(t *testing.T, impl, goBin, tool string, args []string, cgroupFD int) *proc {
	t.Helper()
	// The C tools run line-buffered (stdbuf), so that what a survivor printed before the kill is seen
	// while it still runs, as goverbs' unbuffered output is.
	path := "stdbuf"
	args = append([]string{"-oL", tool}, args...)
	if impl == "go" {
		path, args = filepath.Join(goBin, tool), args[2:]
	}
	p := &proc{cmd: exec.Command(path, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, io.MultiWriter(&p.out, &p.stderr)
	if cgroupFD >= 0 {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cgroupFD}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", impl, tool, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	return p
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func killOnce(t *testing.T, sc killScenario, victimImpl, survivorImpl string, victimIsServer bool, after time.Duration,
	port int, goBin string, cgroupFD int, cg *cgroup.Cgroup, nl *netlinkrdma.Conn, devIndex uint32) killOutcome {
	t.Helper()
	role := map[bool]string{true: "server", false: "client"}
	o := killOutcome{scenario: sc.name, victim: victimImpl + " " + role[victimIsServer],
		survivor: survivorImpl + " " + role[!victimIsServer], after: after}
	srvImpl, cliImpl := survivorImpl, victimImpl
	srvCG, cliCG := -1, cgroupFD
	if victimIsServer {
		srvImpl, cliImpl = victimImpl, survivorImpl
		srvCG, cliCG = cgroupFD, -1
	}
	t0 := time.Now()
	srv := startTool(t, srvImpl, goBin, sc.tool, append(append([]string{}, sc.srv...), sc.port(port)...), srvCG)
	defer func() {
		select {
		case <-srv.done:
		default:
			srv.kill()
		}
	}()
	if sc.tool == "rping" {
		if err := interop.WaitCMListening(labtest.Device(), uint16(port), 60*time.Second); err != nil {
			t.Fatalf("%s server: %v\n%s", srvImpl, err, srv.out.String())
		}
	} else if err := interop.WaitListeningIn(srv.cmd.Process.Pid, port, 60*time.Second, srv.done); err != nil {
		t.Fatalf("%s server: %v\n%s", srvImpl, err, srv.out.String())
	}
	o.listenWait = time.Since(t0)
	cliArgs := append(append(append([]string{}, sc.cli...), sc.port(port)...), labAddr)
	cli := startTool(t, cliImpl, goBin, sc.tool, cliArgs, cliCG)
	defer func() {
		select {
		case <-cli.done:
		default:
			cli.kill()
		}
	}()
	victim, survivor := cli, srv
	if victimIsServer {
		victim, survivor = srv, cli
	}
	time.Sleep(after) // the random moment: connecting, registering, mid-transfer or waiting for an event
	// The resource tracker names the thread that created an object (task_pid_vnr of the creating task), which
	// in a Go program is any of its threads: take them all just before the kill.
	pid := victim.cmd.Process.Pid
	tids := threadsOf(pid)
	if byPID, _, err := countObjects(nl, devIndex, map[uint32]bool{uint32(pid): true}); err == nil {
		if byThreads, _, err := countObjects(nl, devIndex, tids); err == nil && byThreads > byPID {
			o.otherThreads = byThreads - byPID
		}
	}
	victim.kill()

	// The kernel reclaims the victim's objects: none left with its PID, and its cgroup charges nothing.
	start := time.Now()
	for {
		left, err := objectsOf(nl, devIndex, tids)
		if err != nil {
			t.Fatal(err)
		}
		u, uerr := cg.DeviceUsage(labtest.Device())
		if uerr != nil {
			t.Fatal(uerr)
		}
		if left == "" && u.HCAHandle == 0 && u.HCAObject == 0 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s killed after %v: 30 s later the kernel still holds %s; cgroup rdma.current hca_handle=%v hca_object=%v",
				o.victim, after, left, u.HCAHandle, u.HCAObject)
		}
		time.Sleep(5 * time.Millisecond)
	}
	o.reclaimed = time.Since(start)

	// The survivor.
	o.survivorConnected = sc.connected == "" || strings.Contains(survivor.out.String(), sc.connected)
	bound := 3 * time.Second
	if o.survivorConnected && sc.survivorExits {
		bound = 90 * time.Second
	}
	select {
	case <-survivor.done:
		o.exitTook = time.Since(start)
		o.survivorExit = fmt.Sprintf("exit %d after %v", survivor.cmd.ProcessState.ExitCode(), o.exitTook.Round(time.Millisecond))
		o.survivorLast = lastLine(survivor.out.String())
	case <-time.After(bound):
		o.survivorExit = "waited"
	}
	o.took = time.Since(t0)
	if sc.connected == "" { // rping: whether it connected shows in how it ended
		o.survivorConnected = o.survivorExit != "waited"
	}
	if o.survivorConnected && sc.survivorExits && o.survivorExit == "waited" {
		t.Errorf("%s: the %s was still running %v after its peer (%s) was killed, where C's leaves:\n%s",
			sc.name, o.survivor, bound, o.victim, survivor.out.String())
	}
	return o
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// threadsOf lists the thread IDs of process pid (at least pid itself).
func threadsOf(pid int) map[uint32]bool {
	tids := map[uint32]bool{uint32(pid): true}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range ents {
		if n, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			tids[uint32(n)] = true
		}
	}
	return tids
}

// objectsOf lists the device's objects created by one of the threads tids ("" if none).
func objectsOf(nl *netlinkrdma.Conn, devIndex uint32, tids map[uint32]bool) (string, error) {
	_, desc, err := countObjects(nl, devIndex, tids)
	return desc, err
}

// countObjects counts the device's objects created by one of the threads tids, and says which.
func countObjects(nl *netlinkrdma.Conn, devIndex uint32, tids map[uint32]bool) (int, string, error) {
	q := netlinkrdma.ResQuery{DevIndex: devIndex}
	var left []string
	total := 0
	count := func(kind string, n int, err error) error {
		if err == nil && n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, kind))
			total += n
		}
		return err
	}
	qps, err := nl.QPs(q)
	if err := count("QP", countPID(qps, tids, func(x netlinkrdma.QP) uint32 { return x.PID }), err); err != nil {
		return 0, "", err
	}
	cqs, err := nl.CQs(q)
	if err := count("CQ", countPID(cqs, tids, func(x netlinkrdma.CQ) uint32 { return x.PID }), err); err != nil {
		return 0, "", err
	}
	mrs, err := nl.MRs(q)
	if err := count("MR", countPID(mrs, tids, func(x netlinkrdma.MR) uint32 { return x.PID }), err); err != nil {
		return 0, "", err
	}
	pds, err := nl.PDs(q)
	if err := count("PD", countPID(pds, tids, func(x netlinkrdma.PD) uint32 { return x.PID }), err); err != nil {
		return 0, "", err
	}
	ids, err := nl.CMIDs(q)
	if err := count("cm_id", countPID(ids, tids, func(x netlinkrdma.CMID) uint32 { return x.PID }), err); err != nil {
		return 0, "", err
	}
	ctxs, err := nl.Contexts(q)
	if err := count("context", countPID(ctxs, tids, func(x netlinkrdma.Context) uint32 { return x.PID }), err); err != nil {
		return 0, "", err
	}
	return total, strings.Join(left, ", "), nil
}

func countPID[T any](xs []T, tids map[uint32]bool, get func(T) uint32) int {
	n := 0
	for _, x := range xs {
		if tids[get(x)] {
			n++
		}
	}
	return n
}

// report logs the campaign's figures: kills per scenario and pair, reclaim times, survivor outcomes.
func report(t *testing.T, outs []killOutcome) {
	t.Helper()
	type key struct{ scenario, victim, survivor, outcome string }
	counts := map[key]int{}
	var worst time.Duration
	byThread := 0
	for _, o := range outs {
		if o.otherThreads > 0 {
			byThread++
		}
		outcome := "survivor not yet connected: waited for its peer"
		switch {
		case o.survivorConnected && strings.HasPrefix(o.survivorExit, "exit"):
			outcome = "survivor left (" + strings.SplitN(o.survivorExit, " after", 2)[0] + ")"
		case o.survivorConnected:
			outcome = "survivor waited for a completion"
		case o.survivorExit != "waited":
			outcome = "survivor left before connecting (" + strings.SplitN(o.survivorExit, " after", 2)[0] + ")"
		}
		counts[key{o.scenario, o.victim, o.survivor, outcome}]++
		worst = max(worst, o.reclaimed)
	}
	var lines []string
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%-24s killed %-9s survivor %-9s %3d× %s", k.scenario, k.victim, k.survivor, n, k.outcome))
	}
	sort.Strings(lines)
	t.Logf("%d kills, 0 objects left behind (every kill checked); slowest reclaim %v; in %d kills some of the victim's objects carried a thread ID, not its PID\n%s",
		len(outs), worst.Round(time.Millisecond), byThread, strings.Join(lines, "\n"))
}
