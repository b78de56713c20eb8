package rdmatool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
)

// These tests run goverbs' rdma and iproute2's /usr/bin/rdma side by side
// in the lab VM (Debian 6.1 kernel, rxe0 on veth0) and require identical
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

func runTool(t *testing.T, prefix []string, path string, env []string, args ...string) toolResult {
	t.Helper()
	return runToolIn(t, "", prefix, path, env, args...)
}

// runToolIn runs a tool with stdin as its standard input.
func runToolIn(t *testing.T, stdin string, prefix []string, path string, env []string, args ...string) toolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append(append([]string{}, prefix...), path)
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", path, args, err)
	}
	return toolResult{o.String(), e.String(), code}
}

func ours(t *testing.T, args ...string) toolResult {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return runTool(t, nil, self, []string{execEnv + "=1"}, args...)
}

func theirs(t *testing.T, args ...string) toolResult {
	t.Helper()
	return runTool(t, nil, "/usr/bin/rdma", nil, args...)
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
		{"stat", "qp", "set", "link", "rxe0/1", "auto", "type", "on"},
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
	} {
		same(t, args...)
	}
	// Batch commands from standard input (the lab's file systems are read
	// only): comments, blank lines, continuations, quotes, a failing line.
	batch := "dev show # comment\n\nlink \\\nshow\ndev show nosuch\n-j sys\n'dev' \"show\"\n"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-b", "-"}, {"-f", "-b", "-"}, {"-j", "-force", "-batch=-"}, {"--force", "--batch", "-"}} {
		o := runToolIn(t, batch, nil, self, []string{execEnv + "=1"}, args...)
		r := runToolIn(t, batch, nil, "/usr/bin/rdma", nil, args...)
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
	})
	for _, step := range []struct {
		by   func(*testing.T, ...string) toolResult
		args []string
	}{
		{ours, []string{"dev", "set", "rxe0", "adaptive-moderation", "on"}},
		{theirs, []string{"dev", "set", "rxe0", "adaptive-moderation", "off"}},
		{ours, []string{"sys", "set", "netns", "exclusive"}},
		{theirs, []string{"sys", "set", "netns", "shared"}},
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
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	drop := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"}
	for _, args := range [][]string{
		{"link", "add", "rxe2", "type", "rxe", "netdev", "veth1"}, {"link", "delete", "rxe0"},
		{"dev", "set", "rxe0", "name", "foo"}, {"dev"}, {"res", "show", "qp"},
	} {
		o := runTool(t, drop, self, []string{execEnv + "=1"}, args...)
		r := runTool(t, drop, "/usr/bin/rdma", nil, args...)
		if o != r {
			t.Errorf("unprivileged rdma %s differs:\n=== iproute2:\n%s=== goverbs:\n%s", strings.Join(args, " "), r, o)
		}
	}
}
