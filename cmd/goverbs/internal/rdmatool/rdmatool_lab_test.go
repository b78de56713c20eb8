package rdmatool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/test/labtest"
)

// These tests run goverbs' rdma and iproute2 7.3's rdma (sid's root) side by side
// in the lab VM (every kernel of the matrix, rxe0 on veth0) and require identical
// stdout, stderr and exit status. Our tool runs as a separate process: the
// test binary re-executes itself with execEnv set (see TestMain).

const execEnv = "GOVERBS_RDMATOOL_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(Main("rdma", os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// requireLab gates on labtest.Require, and then on the lab itself: these
// tests add, rename and delete RDMA links and expect the lab's topology
// (rxe0 on veth0, a free veth1), so they do not run on other hosts.
func requireLab(t *testing.T) {
	t.Helper()
	labtest.Require(t)
	if !labtest.InLab() {
		t.Skip("changes RDMA links and expects the lab topology; runs only in the lab VM")
	}
}

type toolResult struct {
	stdout, stderr string
	code           int
}

func (r toolResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// rdmaBin is one way to run an rdma binary: ours re-executes the test binary,
// theirs runs iproute2's in the root of the newest Debian release (sid),
// the release goverbs' rdma reproduces.
type rdmaBin struct {
	path, root string
	env        []string
	cred       *syscall.Credential // run unprivileged when set
}

func (tl rdmaBin) run(t *testing.T, args ...string) toolResult {
	t.Helper()
	return tl.runIn(t, "", args...)
}

// runIn runs the tool with stdin as its standard input.
func (tl rdmaBin) runIn(t *testing.T, stdin string, args ...string) toolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tl.path, args...)
	cmd.Env = append(os.Environ(), tl.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: tl.root, Credential: tl.cred}
	if tl.cred != nil {
		cmd.Dir = "/" // the working directory may be one the unprivileged user cannot enter
	}
	cmd.Stdin = strings.NewReader(stdin)
	r, err := golden.Exec(cmd)
	if err != nil {
		t.Fatalf("run %s %v: %v", tl.path, args, err)
	}
	return toolResult{r.Stdout, r.Stderr, r.Status}
}

func oursTool(t *testing.T) rdmaBin {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return rdmaBin{path: self, env: []string{execEnv + "=1"}}
}

// theirsTool is iproute2's rdma of the newest Debian release (sid's root, built by labsuite).
func theirsTool(t *testing.T) rdmaBin {
	t.Helper()
	return rdmaBin{path: "/usr/bin/rdma", root: labtest.PeerRoot(t, "sid")}
}

func ours(t *testing.T, args ...string) toolResult {
	t.Helper()
	return oursTool(t).run(t, args...)
}

func theirs(t *testing.T, args ...string) toolResult {
	t.Helper()
	return theirsTool(t).run(t, args...)
}

// same runs both tools with args and fails the test on any difference.
func same(t *testing.T, args ...string) toolResult {
	t.Helper()
	o, r := ours(t, args...), theirs(t, args...)
	if o != r {
		t.Errorf("rdma %s differs:\n=== iproute2:\n%s=== goverbs:\n%s", strings.Join(args, " "), r, o)
	}
	return r
}

func TestLabShowMatchesIproute2(t *testing.T) {
	requireLab(t)
	for _, args := range [][]string{
		{}, {"help"}, {"dev"}, {"dev", "show"}, {"dev", "list", "rxe0"}, {"-d", "dev"}, {"-j", "dev"},
		{"-j", "-p", "dev"}, {"-dj", "dev"}, {"-jdp", "dev", "show", "rxe0"}, {"dev", "show", "nosuch"},
		{"dev", "help"},
		{"link"}, {"link", "show"}, {"-d", "link"}, {"-j", "link"}, {"-jp", "link"}, {"-dj", "link"},
		{"link", "show", "rxe0/1"}, {"link", "show", "rxe0"}, {"link", "show", "rxe0/2"},
		{"link", "show", "nosuch/1"}, {"link", "help"}, {"link", "bogus"},
		{"sys"}, {"system", "show"}, {"-j", "sys"}, {"-jp", "sys", "show", "netns"}, {"sys", "help"},
		{"sys", "set"}, {"sys", "set", "netns", "bogus"},
		{"res"}, {"resource", "show"}, {"-j", "res"}, {"-jp", "res"}, {"res", "show", "rxe0"},
		{"res", "show", "nosuch"}, {"res", "help"},
		{"stat"}, {"statistic", "show"}, {"-j", "stat"}, {"-p", "stat"}, {"-jp", "stat"},
		{"stat", "show", "link", "rxe0/1"}, {"stat", "help"}, {"stat", "qp", "mode"}, {"-j", "stat", "qp", "mode"},
		{"stat", "qp", "show"}, {"stat", "mode"}, {"stat", "mode", "supported"}, {"stat", "mr"},
		{"stat", "qp", "bind", "link", "rxe0/1", "lqpn", "1"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "type", "on"}, {"stat", "qp", "mode"}, {"-j", "stat", "qp", "mode"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "off"}, {"stat", "qp", "mode"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "type", "on", "optional-counters", "yes"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "type", "on", "optional-counters", "on,off"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "off", "bogus", "on"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "type", "on", "optional-counters", "on"}, {"stat", "qp", "mode"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "off", "optional-counters", "off"}, {"stat", "qp", "mode"},
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "bogus", "on"},
		{"bogus"}, {"-x", "dev"}, {"--json", "dev"}, {"dev", "-j"}, {"-b"},
		{"res", "show", "qp", "lqpn"}, {"res", "show", "qp", "bogus", "1"}, {"res", "show", "qp", "lqpn", "x"},
		{"res", "show", "qp", "link"}, {"res", "show", "qp", "link", "rxe0/1", "type", "gsi"},
		{"res", "show", "qp", "lqpn", "1"}, {"-j", "res", "show", "qp", "lqpn", "0-5"},
		{"-r", "res", "show", "qp"}, {"-dd", "res", "show", "qp"}, {"-ddj", "res", "show", "cq"},
		{"dev", "set", "rxe0", "netns", "nosuch"}, {"dev", "set"}, {"dev", "set", "rxe0"},
		{"dev", "set", "rxe0", "adaptive-moderation"}, {"dev", "set", "rxe0", "name"},
		{"stat", "qp", "unbind", "link", "rxe0/1", "cntn", "1"}, {"stat", "set", "link", "rxe0/1"},
		{"stat", "unset", "link", "rxe0/1", "optional-counters"},
		{"-b", "/nonexistent"},
		{"-o", "-d", "dev"}, {"--oneline", "stat"}, {"-o", "sys"}, {"-o", "-d", "link"}, {"-oj", "res"},
		{"sys", "set", "privileged-qkey"}, {"sys", "set", "privileged-qkey", "yes"}, {"sys", "show", "monitor"},
		{"dev", "add"}, {"dev", "add", "smi0"}, {"dev", "add", "smi0", "type", "foo"}, {"dev", "add", "smi0", "type", "smi"},
		{"dev", "add", "smi0", "type", "smi", "parent", "nosuch"}, {"dev", "add", "smi0", "type", "SMI", "parent", "rxe0"},
		{"dev", "delete"}, {"dev", "delete", "rxe0", "now"}, {"dev", "set", "rxe0", "netns", "999999"},
		{"dev", "set", "rxe0", "netns", "/nonexistent/ns"}, {"res", "show", "srq"}, {"-j", "res", "show", "srq"},
		{"-r", "res", "show", "srq"}, {"mon", "help"},
		{"res", "show", "frmr_pools"}, {"-j", "res", "show", "frmr_pools"}, {"-d", "res", "show", "frmr_pools", "dev", "rxe0"},
		{"res", "show", "frmr_pools", "queue", "1"}, {"res", "set"}, {"res", "set", "frmr_pools"},
		{"res", "set", "frmr_pools", "dev"}, {"res", "set", "frmr_pools", "dev", "rxe0"},
		{"res", "set", "frmr_pools", "dev", "rxe0", "aging"}, {"res", "set", "frmr_pools", "dev", "rxe0", "aging", "0"},
		{"res", "set", "frmr_pools", "dev", "rxe0", "aging", "x"}, {"res", "set", "frmr_pools", "dev", "rxe0", "aging", "60"},
		{"res", "set", "frmr_pools", "dev", "rxe0", "pinned"}, {"res", "set", "frmr_pools", "dev", "rxe0", "pinned", "1:2"},
		{"res", "set", "frmr_pools", "dev", "rxe0", "pinned", "1:2:3:1"},
		{"res", "set", "frmr_pools", "dev", "rxe0", "pinned", "1:2:100000000:1", "5"},
		{"res", "set", "frmr_pools", "dev", "rxe0", "pinned", "1:2:3:1", "5"},
		{"res", "set", "frmr_pools", "dev", "nosuch", "aging", "60"},
	} {
		same(t, args...)
	}
	// Batch commands from standard input (the lab's file systems are read
	// only): comments, blank lines, continuations, quotes, a failing line.
	batch := "dev show # comment\n\nlink \\\nshow\ndev show nosuch\n-j sys\n'dev' \"show\"\n"
	for _, args := range [][]string{{"-b", "-"}, {"-f", "-b", "-"}, {"-j", "-force", "-batch=-"}, {"--force", "--batch", "-"}} {
		o := oursTool(t).runIn(t, batch, args...)
		r := theirsTool(t).runIn(t, batch, args...)
		if o != r {
			t.Errorf("rdma %s < batch differs:\n=== iproute2:\n%s=== goverbs:\n%s", strings.Join(args, " "), r, o)
		}
	}
}

// TestLabSettingsBothWays changes device and system settings with one tool
// and reads them back with the other.
func TestLabSettingsBothWays(t *testing.T) {
	requireLab(t)
	t.Cleanup(func() {
		theirs(t, "dev", "set", "rxe0", "adaptive-moderation", "off")
		theirs(t, "sys", "set", "netns", "shared")
		theirs(t, "sys", "set", "privileged-qkey", "off")
	})
	for _, step := range []struct {
		by   func(*testing.T, ...string) toolResult
		args []string
	}{
		{ours, []string{"dev", "set", "rxe0", "adaptive-moderation", "on"}},
		{theirs, []string{"dev", "set", "rxe0", "adaptive-moderation", "off"}},
		{ours, []string{"sys", "set", "netns", "exclusive"}},
		{theirs, []string{"sys", "set", "netns", "shared"}},
		{ours, []string{"sys", "set", "privileged-qkey", "on"}},
		{theirs, []string{"sys", "set", "privileged-qkey", "off"}},
		{theirs, []string{"sys", "set", "privileged-qkey", "on"}},
		{ours, []string{"sys", "set", "privileged-qkey", "off"}},
		{ours, []string{"dev", "set", "rxe0", "name", "rxe7"}},
		{theirs, []string{"dev", "set", "rxe7", "name", "rxe0"}},
	} {
		if r := step.by(t, step.args...); r != (toolResult{}) {
			t.Fatalf("rdma %s: %v", strings.Join(step.args, " "), r)
		}
		same(t, "-d", "dev")
		same(t, "-j", "-d", "dev")
		same(t, "sys")
		same(t, "link")
	}
}

// startProc starts a background command in its own process group.
func startProc(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return cmd
}

// waitFor polls cond (the lab has no events to wait on for these) until it
// holds, failing after limit.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var resCommands = [][]string{
	{"res"}, {"-j", "res"}, {"res", "show", "qp"}, {"-j", "res", "show", "qp"}, {"-jp", "res", "show", "qp"},
	{"res", "show", "cq"}, {"-j", "res", "show", "cq"}, {"res", "show", "mr"}, {"-j", "res", "show", "mr"},
	{"res", "show", "pd"}, {"-j", "res", "show", "pd"}, {"-d", "res", "show", "pd"}, {"res", "show", "ctx"},
	{"-j", "res", "show", "ctx"}, {"res", "show", "cm_id"}, {"res", "show", "srq"},
	{"res", "show", "qp", "link", "rxe0/1"}, {"res", "show", "qp", "type", "rc"},
	{"res", "show", "qp", "link", "rxe0", "type", "RC,GSI"}, {"res", "show", "cq", "dev", "rxe0", "users", "1-3"},
	{"res", "show", "mr", "mrlen", "4096"}, {"res", "show", "pd", "dev", "rxe0"}, {"stat"},
}

func TestLabResourcesMatchIproute2(t *testing.T) {
	requireLab(t)
	hasUserQP := func() bool { return strings.Contains(theirs(t, "res", "show", "qp").stdout, "pid ") }

	// A pingpong server holds a PD, MR, CQ and an INIT QP while it waits
	// for its client: a stable state to compare.
	srv := startProc(t, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", "100000000", "-p", "18515")
	waitFor(t, "the pingpong server's QP", 30*time.Second, hasUserQP)
	for _, args := range resCommands {
		same(t, args...)
	}

	// With a client the QPs reach RTS and carry remote QPN and PSNs.
	// Stopping both processes freezes the PSNs once in-flight work is
	// acknowledged.
	cli := startProc(t, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", "100000000", "-p", "18515", "127.0.0.1")
	waitFor(t, "QPs in RTS", 30*time.Second, func() bool {
		return strings.Count(theirs(t, "res", "show", "qp").stdout, "state RTS") >= 2
	})
	for _, p := range []*exec.Cmd{srv, cli} {
		if err := syscall.Kill(-p.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the QP state to settle", 10*time.Second, func() bool {
		a := theirs(t, "res", "show", "qp").stdout
		time.Sleep(200 * time.Millisecond)
		return a == theirs(t, "res", "show", "qp").stdout
	})
	for _, args := range resCommands {
		same(t, args...)
	}
}

func linkNames(out string) []string {
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "link" {
			names = append(names, f[1])
		}
	}
	return names
}

func TestLabLinkAddDeleteBothWays(t *testing.T) {
	requireLab(t)
	t.Cleanup(func() { theirs(t, "link", "delete", "rxe1") })
	has := func(r toolResult, name string) bool {
		for _, n := range linkNames(r.stdout) {
			if n == name+"/1" {
				return true
			}
		}
		return false
	}

	// goverbs adds, iproute2 sees it.
	if r := ours(t, "link", "add", "rxe1", "type", "rxe", "netdev", "veth1"); r != (toolResult{}) {
		t.Fatalf("goverbs link add: %v", r)
	}
	if !has(same(t, "link", "show"), "rxe1") {
		t.Fatal("iproute2 does not show rxe1 added by goverbs")
	}
	same(t, "dev")
	same(t, "-j", "link")

	// Errors: a second rxe on the same netdev, an unknown netdev, an unknown
	// type, a name taken, missing words.
	for _, args := range [][]string{
		{"link", "add", "rxe2", "type", "rxe", "netdev", "veth1"},
		{"link", "add", "rxe2", "type", "rxe", "netdev", "nosuch0"},
		{"link", "add", "rxe2", "type", "bogus", "netdev", "veth1"},
		{"link", "add", "rxe1", "type", "siw", "netdev", "veth1"},
		{"link", "add", "rxe2", "type", "rxe"}, {"link", "add", "rxe2"}, {"link", "add"},
		{"link", "delete"}, {"link", "delete", "rxe1", "extra"},
	} {
		if r := same(t, args...); r.code == 0 && r.stderr == "" && len(args) > 6 {
			t.Errorf("rdma %s succeeded", strings.Join(args, " "))
		}
	}

	// goverbs deletes, iproute2 no longer sees it.
	if r := ours(t, "link", "delete", "rxe1"); r != (toolResult{}) {
		t.Fatalf("goverbs link delete: %v", r)
	}
	if has(same(t, "link"), "rxe1") {
		t.Fatal("iproute2 still shows rxe1 after goverbs deleted it")
	}
	same(t, "link", "delete", "rxe1")

	// iproute2 adds, goverbs sees it; goverbs deletes it again.
	if r := theirs(t, "link", "add", "rxe1", "type", "rxe", "netdev", "veth1"); r.code != 0 {
		t.Fatalf("iproute2 link add: %v", r)
	}
	if !has(ours(t, "link"), "rxe1") {
		t.Fatal("goverbs does not show rxe1 added by iproute2")
	}
	same(t, "link")
	same(t, "-jp", "dev")
	if r := theirs(t, "link", "delete", "rxe1"); r.code != 0 {
		t.Fatalf("iproute2 link delete: %v", r)
	}
	if has(ours(t, "link"), "rxe1") {
		t.Fatal("goverbs still shows rxe1 after iproute2 deleted it")
	}
}

func TestLabUnprivilegedMatchesIproute2(t *testing.T) {
	requireLab(t)
	// nobody, no groups: setuid from root clears the capabilities.
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: false}
	us, them := oursTool(t), theirsTool(t)
	us.cred, them.cred = nobody, nobody
	// nobody must reach the binary whatever the modes of the directories above the checkout (a clone in a
	// 0700 home directory or mktemp -d): run a copy from a directory of the test's own that anyone may enter.
	us.path = labtest.ReachableCopy(t, us.path)
	for _, args := range [][]string{
		{"link", "add", "rxe2", "type", "rxe", "netdev", "veth1"}, {"link", "delete", "rxe0"},
		{"dev", "set", "rxe0", "name", "foo"}, {"dev"}, {"res", "show", "qp"},
	} {
		o, r := us.run(t, args...), them.run(t, args...)
		if o != r {
			t.Errorf("unprivileged rdma %s differs:\n=== iproute2:\n%s=== goverbs:\n%s", strings.Join(args, " "), r, o)
		}
	}
}

// monitorSockets counts NETLINK_RDMA sockets joined to RDMA_NL_GROUP_NOTIFY
// (bind mask 0x8), from /proc/net/netlink.
func monitorSockets(t *testing.T) int {
	b, err := os.ReadFile("/proc/net/netlink")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == "20" && f[3] == "00000008" {
			n++
		}
	}
	return n
}

// TestLabMonitorMatchesIproute2 runs both tools' `rdma monitor` (text and
// JSON) while an rxe link is added and deleted, and requires the same event
// lines. Kernels without monitor mode (6.1) get the refusal compared.
func TestLabMonitorMatchesIproute2(t *testing.T) {
	requireLab(t)
	same(t, "monitor", "help")
	if sys := theirs(t, "sys"); !strings.Contains(sys.stdout, "monitor on") {
		same(t, "monitor")
		t.Skipf("Linux %s reports no RDMA monitor mode (rdma sys: %q): only the refusal is compared",
			labtest.Kernel(), strings.TrimSpace(sys.stdout))
	}
	t.Cleanup(func() { theirs(t, "link", "delete", "rxe1") })
	type mon struct {
		name string
		cmd  *exec.Cmd
		out  labtest.SyncBuffer
		errb labtest.SyncBuffer
	}
	base := monitorSockets(t)
	var mons []*mon
	for _, tl := range []struct {
		name string
		bin  rdmaBin
	}{{"iproute2", theirsTool(t)}, {"goverbs", oursTool(t)}} {
		for _, args := range [][]string{{"monitor"}, {"-j", "monitor"}} {
			m := &mon{name: tl.name + " " + strings.Join(args, " ")}
			m.cmd = exec.Command(tl.bin.path, args...)
			m.cmd.Env = append(os.Environ(), tl.bin.env...)
			m.cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: tl.bin.root}
			m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.errb
			if err := m.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.cmd.Process.Kill(); m.cmd.Wait() })
			mons = append(mons, m)
		}
	}
	waitFor(t, "four monitors to join the notify group", 30*time.Second, func() bool {
		return monitorSockets(t) >= base+len(mons)
	})
	if r := theirs(t, "link", "add", "rxe1", "type", "rxe", "netdev", "veth1"); r.code != 0 {
		t.Fatalf("link add: %v", r)
	}
	if r := theirs(t, "link", "delete", "rxe1"); r.code != 0 {
		t.Fatalf("link delete: %v", r)
	}
	waitFor(t, "every monitor to report the unregistration", 30*time.Second, func() bool {
		for _, m := range mons {
			if !strings.Contains(m.out.String(), "[UNREGISTER]") {
				return false
			}
		}
		return true
	})
	for _, m := range mons {
		m.cmd.Process.Signal(syscall.SIGTERM)
		m.cmd.Wait()
	}
	for i := 0; i < 2; i++ {
		c, g := mons[i], mons[i+2]
		if c.out.String() != g.out.String() || c.errb.String() != g.errb.String() {
			t.Errorf("%s differs:\n=== iproute2:\n%s--- stderr:\n%s=== goverbs:\n%s--- stderr:\n%s", c.name,
				c.out.String(), c.errb.String(), g.out.String(), g.errb.String())
		}
		if !strings.Contains(c.out.String(), "REGISTER]") || !strings.Contains(c.out.String(), "veth1") {
			t.Errorf("%s: no registration or netdev event seen:\n%s", c.name, c.out.String())
		}
	}
	t.Logf("events (text):\n%s", mons[0].out.String())
}
