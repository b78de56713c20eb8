package interop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"io"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/pingpong"
	"github.com/goverbs/goverbs/test/labtest"
)

// ppTool is one of rdma-core's pingpong tools and goverbs' clone of it.
type ppTool struct {
	ctool string
	run   func(prog string, args []string, stdout, stderr io.Writer) int
}

var (
	ppRC  = ppTool{"ibv_rc_pingpong", pingpong.MainRC}
	ppUC  = ppTool{"ibv_uc_pingpong", pingpong.MainUC}
	ppUD  = ppTool{"ibv_ud_pingpong", pingpong.MainUD}
	ppSRQ = ppTool{"ibv_srq_pingpong", pingpong.MainSRQ}
	ppXRC = ppTool{"ibv_xsrq_pingpong", pingpong.MainXSRQ}
)

// The lines the pingpong tools print on a successful run.
var (
	ppLocal    = regexp.MustCompile(`^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-f:.]+$`)
	ppLocalUD  = regexp.MustCompile(`^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID [0-9a-f:.]+$`)
	ppRemote   = regexp.MustCompile(`^  remote address: LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-f:.]+$`)
	ppBytes    = regexp.MustCompile(`^\d+ bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec$`)
	ppIters    = regexp.MustCompile(`^\d+ iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter$`)
	ppLines    = []*regexp.Regexp{ppLocal, ppRemote, ppBytes, ppIters}
	ppLinesUD  = []*regexp.Regexp{ppLocalUD, ppRemote, ppBytes, ppIters}
	ppAddrLine = regexp.MustCompile(`QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6})`)
)

// srqLines are srq_pingpong's lines with n QPs: n local addresses, n remote ones, the results.
func srqLines(n int) []*regexp.Regexp {
	var res []*regexp.Regexp
	for i := 0; i < n; i++ {
		res = append(res, ppLocal)
	}
	for i := 0; i < n; i++ {
		res = append(res, ppRemote)
	}
	return append(res, ppBytes, ppIters)
}

func checkPPOutput(t *testing.T, who, out string, want []*regexp.Regexp) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%s printed %d lines, want %d:\n%s", who, len(lines), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("%s line %d %q does not match %v", who, i+1, lines[i], re)
		}
	}
}

// checkPeers demands that each side's remote addresses are the other side's local ones, in order: the
// records crossed the wire intact in both directions.
func checkPeers(t *testing.T, out1, out2 string) {
	t.Helper()
	addrs := func(out, which string) []string {
		var res []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  "+which+" address:") {
				res = append(res, ppAddrLine.FindString(l))
			}
		}
		return res
	}
	if l1, r2 := addrs(out1, "local"), addrs(out2, "remote"); fmt.Sprint(l1) != fmt.Sprint(r2) {
		t.Errorf("side 1 local %v, side 2 remote %v", l1, r2)
	}
	if l2, r1 := addrs(out2, "local"), addrs(out1, "remote"); fmt.Sprint(l2) != fmt.Sprint(r1) {
		t.Errorf("side 2 local %v, side 1 remote %v", l2, r1)
	}
}

type ppResult struct {
	rc       int
	out, err string
}

// goPP runs the goverbs tool in-process.
func goPP(tool ppTool, args []string) ppResult {
	var o, e bytes.Buffer
	// An in-process Main cannot be killed as cPP's C side is: one still running after 3 minutes (every pairing
	// ends in seconds) ends the test binary with every goroutine's stack and the pair's name, so a hang names
	// itself long before go test's package timeout.
	hung := time.AfterFunc(3*time.Minute, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("goverbs %s %q still running after 3 minutes", tool.ctool, args))
	})
	rc := tool.run(tool.ctool, args, &o, &e)
	hung.Stop()
	return ppResult{rc, o.String(), e.String()}
}

// cPP runs rdma-core's tool, killed after 3 minutes (every pairing ends in seconds; a C side that hangs — a
// lost peer, one of its own races — then fails its test with "still running after 3m0s, killed" instead of
// holding the package until go test's timeout, which names no pair).
func cPP(tool ppTool, args []string) ppResult { return cPPTimeout(tool, args, 3*time.Minute) }

// cPPIn runs another release's rdma-core tool from its root (peerRoot), by chroot, killed after 3 minutes (C
// riostream spins for ever on a lost peer).
func cPPIn(root string) func(ppTool, []string) ppResult {
	return func(tool ppTool, args []string) ppResult {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/usr/bin/"+tool.ctool, args...)
		cmd.Args[0] = tool.ctool // as a shell runs it: usage texts print argv[0]
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
		return runC(cmd)
	}
}

// runC runs cmd and collects its status and output.
func runC(cmd *exec.Cmd) ppResult {
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return exitResult(o.String(), e.String(), err)
}

// exitResult is a finished command's result: its exit status, or -1 with the error that kept it from running
// after its stderr.
func exitResult(out, errOut string, err error) ppResult {
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ppResult{ee.ExitCode(), out, errOut}
	case err != nil:
		return ppResult{-1, out, errOut + err.Error()}
	}
	return ppResult{0, out, errOut}
}

// pairPP runs a server and a client of tool on port with args, one side goverbs' and the other rdma-core's,
// and checks that both succeed, print the expected lines and saw each other's addresses.
func pairPP(t *testing.T, tool ppTool, port int, args []string, goServer bool, want []*regexp.Regexp) {
	t.Helper()
	clientArgs := append(append([]string{}, args...), "127.0.0.1")
	serve, connect, sName, cName := sides(cPP, goServer)
	done := make(chan ppResult, 1)
	go func() { done <- serve(tool, args) }()
	if err := interop.WaitListening(port, 60*time.Second); err != nil {
		t.Fatalf("%s: %v; server said: %+v", sName, err, <-done)
	}
	c := connect(tool, clientArgs)
	s := <-done
	if c.rc != 0 || s.rc != 0 {
		fatalPair(t, s, c, sName, cName)
	}
	checkPPOutput(t, cName, c.out, want)
	checkPPOutput(t, sName, s.out, want)
	checkPeers(t, c.out, s.out)
}

// ppMatrix runs tool Go<->C in both directions, polling and with events, for each size.
func ppMatrix(t *testing.T, tool ppTool, portBase int, sizes []int, extra []string, want []*regexp.Regexp) {
	labtest.Require(t)
	interop.NeedTool(t, tool.ctool, "ibverbs-utils")
	dev := labtest.Device()
	port := interop.Port(portBase)
	for _, events := range []bool{false, true} {
		for _, size := range sizes {
			for _, goServer := range []bool{true, false} {
				port++
				name := fmt.Sprintf("size=%d/events=%v/goServer=%v", size, events, goServer)
				args := append([]string{"-d", dev, "-g", "1", "-s", interop.Itoa(size), "-p", interop.Itoa(port)}, extra...)
				if events {
					args = append(args, "-e")
				}
				t.Run(name, func(t *testing.T) { pairPP(t, tool, port, args, goServer, want) })
			}
		}
	}
}

func TestLabRCPingpongInterop(t *testing.T) {
	ppMatrix(t, ppRC, 0, []int{1, 4096, 65536}, []string{"-n", "10"}, ppLines)
}

// -N (rc_pingpong's "new post send WR API"): rdma-core posts with ibv_wr_start / ibv_wr_send / ibv_wr_set_sge /
// ibv_wr_complete on a QP created with IBV_QP_EX_WITH_SEND, goverbs with its work-request builder (QP.StartWR);
// each pairs with the other and with itself, with and without events, inline (1 byte) and not (4096).
func TestLabRCPingpongNewSendInterop(t *testing.T) {
	ppMatrix(t, ppRC, 500, []int{1, 4096}, []string{"-n", "10", "-c", "-N"}, ppLines)
}

func TestLabUCPingpongInterop(t *testing.T) {
	ppMatrix(t, ppUC, 100, []int{1, 4096}, []string{"-n", "10", "-c"}, ppLines)
}

// -c (validate) makes the server check the client's marks in the payload: a message at the wrong offset
// (UD's 40-byte GRH room) prints "invalid data in page" and fails the line check.

// UD messages must fit the path MTU (rxe on a 1500-byte veth: 1024).
func TestLabUDPingpongInterop(t *testing.T) {
	ppMatrix(t, ppUD, 200, []int{1, 1024}, []string{"-n", "10", "-c"}, ppLinesUD)
}

func TestLabSRQPingpongInterop(t *testing.T) {
	ppMatrix(t, ppSRQ, 300, []int{1, 4096}, []string{"-q", "4", "-n", "12", "-c"}, srqLines(4))
}

// Runs that end before any connection, byte for byte and status for status against rdma-core 65's tools (sid's
// root, the release goverbs' clones follow): usage errors, option checks, rc_pingpong's -U (no parent domain on
// rxe), and on rxe (no XRC) all of ibv_xsrq_pingpong's behaviour.
func TestLabPingpongErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	dev := labtest.Device()
	cPP := cPPIn(labtest.PeerRoot(t, "sid"))
	cases := []struct {
		tool ppTool
		args []string
	}{
		{ppUC, []string{"-x"}},
		{ppUC, []string{"-m", "100"}},
		{ppUC, []string{"a", "b"}},
		{ppUC, []string{"-d", "nosuchdev"}},
		{ppUC, []string{"-d", dev, "-i", "0"}},
		{ppUD, []string{"-m", "1024"}},
		{ppUD, []string{"-p", "-1"}},
		{ppUD, []string{"-d", dev, "-s", "2048"}},
		{ppUD, []string{"-d", "nosuchdev"}},
		{ppSRQ, []string{"-s", "0"}},
		{ppSRQ, []string{"-d", dev, "-r", "4"}},
		{ppSRQ, []string{"-d", dev, "-q", "256", "-r", "1000"}},
		{ppSRQ, []string{"-d", dev, "-q", "-1"}},
		{ppSRQ, []string{"--num-qp"}},
		{ppUC, []string{"-d", dev, "-i", "2"}},
		{ppUD, []string{"-d", dev, "-i", "2"}},
		{ppSRQ, []string{"-d", dev, "-i", "2", "-q", "2"}},
		{ppXRC, []string{"-x"}},
		{ppXRC, []string{"-d", dev, "-i", "2"}},
		{ppXRC, []string{"-d", dev, "-s", "0"}},
		{ppXRC, []string{"-d", dev, "-s", "-1"}},
		{ppXRC, []string{"-d", dev, "-c", "-1"}},
		{ppXRC, []string{"-p", "70000"}},
		{ppXRC, []string{"-d", "nosuchdev"}},
		{ppXRC, []string{"-d", dev}},
		{ppXRC, []string{"-d", dev, "-e", "-c", "3"}},
		{ppXRC, []string{"-d", dev, "-o"}},
		{ppXRC, []string{"-d", dev, "-g", "1", "127.0.0.1"}},
		{ppRC, []string{"-d", dev, "-U"}},
		{ppRC, []string{"-d", dev, "-U", "-e", "-g", "1"}},
		{ppRC, []string{"-U", "-j"}},
		{ppRC, []string{"-x"}},
	}
	for _, c := range cases {
		want := cPP(c.tool, c.args)
		got := goPP(c.tool, c.args)
		if got != want {
			t.Errorf("%s %q:\n--- C: rc %d\n%s%s--- goverbs: rc %d\n%s%s", c.tool.ctool, c.args,
				want.rc, want.out, want.err, got.rc, got.out, got.err)
		}
	}
}
