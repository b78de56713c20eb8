package siwlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/labtest"
)

// The rsockets tools over siw0: goverbs' rstream, riostream and rcopy (package rsocket, whose connections use
// librdmacm's message-send mode on an iWARP device: data by RDMA WRITE plus a 4-byte SEND of the message word,
// since iWARP has no immediate data) against rdmacm-utils' C tools in both roles, and C against C as the
// lab's control. Each pair runs as two processes (the goverbs binary, GOVERBS_BIN); the client starts once the
// server's rdma_cm id listens on the port.

// rsHeader and rsRow are rstream's and riostream's output: the header and one result row per run.
const rsHeader = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n"

var rsRow = regexp.MustCompile(`^custom    (\S+ *){4} +\d+\.\d\ds +\d+\.\d\d +\d+\.\d\d$`)

// keepaliveLine is what rstream -k prints each time it sets the option (client: once; server: on the
// listening socket, then on the accepted one).
var keepaliveLine = regexp.MustCompile(`^(Keepalive: ON|  time: \d+)$`)

// rsPairDeadline bounds one attempt of a pair: every pairing here ends in seconds under TCG.
const rsPairDeadline = 60 * time.Second

// rsResult is one side's run.
type rsResult struct {
	rc       int
	out, err string
	killed   bool // still running at the attempt's deadline
}

// rsCmd is tool ("rstream", "riostream", "rcopy") of impl ("c": rdmacm-utils', "go": goverbs') with args.
func rsCmd(ctx context.Context, t *testing.T, impl, tool string, args ...string) *exec.Cmd {
	if impl == "go" {
		return exec.CommandContext(ctx, interop.Binary(t), append([]string{tool}, args...)...)
	}
	return exec.CommandContext(ctx, tool, args...)
}

// runSide runs cmd to its end (or the context's) and collects its result.
func runSide(ctx context.Context, cmd *exec.Cmd) rsResult {
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := rsResult{out: o.String(), err: e.String(), killed: ctx.Err() != nil}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.rc = ee.ExitCode()
	case err != nil:
		r.rc, r.err = -1, r.err+err.Error()
	}
	return r
}

// rsStalled says whether a failed attempt looks like Linux 7.3.4's siw losing a connection's first message
// (docs/kernels.md 11): on 7.3 and later only, both sides were still running at the attempt's deadline with
// no result row printed — the connection was set up and then nothing moved. rstream and riostream print
// nothing while they wait, so that stall is the only sign the log gives; any other failure fails.
func rsStalled(s, c rsResult) bool {
	return labtest.Kernel().AtLeast(7, 3) && s.killed && c.killed &&
		!strings.Contains(s.out, "custom") && !strings.Contains(c.out, "custom")
}

// rsPair runs tool's server (-b, srvImpl) and client (-s, cliImpl) with extra on port, again while an
// attempt stalls as rsStalled says (up to siwRaceReruns more times, with a note), and checks: both exit 0
// with nothing on stderr, print the header, -k's keepalive lines, and the same result row up to the timings.
func rsPair(t *testing.T, tool, srvImpl, cliImpl string, port int, extra []string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s, c := rsPairOnce(t, tool, srvImpl, cliImpl, port, extra)
		if s.rc == 0 && c.rc == 0 {
			checkRows(t, s, c, extra)
			return
		}
		msg := fmt.Sprintf("%s %s-server/%s-client %q:\nclient rc %d killed %v\n%s%s\nserver rc %d killed %v\n%s%s",
			tool, srvImpl, cliImpl, extra, c.rc, c.killed, c.out, c.err, s.rc, s.killed, s.out, s.err)
		if !rsStalled(s, c) || attempt == siwRaceReruns {
			t.Fatal(msg)
		}
		labtest.Note(t, "%s %s-server/%s-client %q: both sides stalled after connecting (siw's lost first message, docs/kernels.md 11), running the pair again", tool, srvImpl, cliImpl, extra)
	}
}

// rsPairOnce runs one attempt: the server, then the client once the server's cm_id listens.
func rsPairOnce(t *testing.T, tool, srvImpl, cliImpl string, port int, extra []string) (s, c rsResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rsPairDeadline)
	defer cancel()
	sArgs := append([]string{"-b", addr, "-p", interop.Itoa(port)}, extra...)
	cArgs := append([]string{"-s", addr, "-p", interop.Itoa(port)}, extra...)
	done := make(chan rsResult, 1)
	go func() { done <- runSide(ctx, rsCmd(ctx, t, srvImpl, tool, sArgs...)) }()
	if err := interop.WaitCMListening(labtest.Device(), uint16(port), 30*time.Second); err != nil {
		cancel()
		s = <-done
		t.Fatalf("%s %s server %q: %v\n%s%s", srvImpl, tool, sArgs, err, s.out, s.err)
	}
	c = runSide(ctx, rsCmd(ctx, t, cliImpl, tool, cArgs...))
	s = <-done
	t.Logf("%s client %q:\n%s%s server %q:\n%s", cliImpl, cArgs, c.out, srvImpl, sArgs, s.out)
	return s, c
}

// checkRows checks both sides' output of a successful pair.
func checkRows(t *testing.T, s, c rsResult, extra []string) {
	t.Helper()
	keepalive := slices.Contains(extra, "-k")
	var rows []string
	for _, r := range []struct {
		name   string
		res    rsResult
		server bool
	}{{"client", c, false}, {"server", s, true}} {
		if r.res.err != "" {
			t.Errorf("%s stderr: %s", r.name, r.res.err)
		}
		if !strings.HasPrefix(r.res.out, rsHeader) {
			t.Errorf("%s stdout lacks the header:\n%s", r.name, r.res.out)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.res.out, rsHeader), "\n"), "\n")
		ka := 0
		for len(lines) > 1 && keepaliveLine.MatchString(lines[0]) {
			ka++
			lines = lines[1:]
		}
		if want := map[bool]int{false: 0, true: map[bool]int{false: 2, true: 4}[r.server]}[keepalive]; ka != want {
			t.Errorf("%s printed %d keepalive lines, want %d:\n%s", r.name, ka, want, r.res.out)
		}
		row := strings.Join(lines, "\n")
		if !rsRow.MatchString(row) {
			t.Errorf("%s row %q", r.name, row)
			continue
		}
		rows = append(rows, row[:42])
	}
	if len(rows) == 2 && rows[0] != rows[1] {
		t.Errorf("rows differ: %q vs %q", rows[0], rows[1])
	}
}

// rsPairs are the pairings: C-C (the control), then goverbs in each role.
var rsPairs = [][2]string{{"c", "c"}, {"c", "go"}, {"go", "c"}}

// rsMatrix runs tool in every pairing with each of extras on ports from portBase.
func rsMatrix(t *testing.T, tool string, portBase int, extras [][]string) {
	interop.NeedTool(t, tool, "rdmacm-utils")
	port := interop.Port(portBase)
	for _, extra := range extras {
		for _, p := range rsPairs {
			port++
			t.Run(strings.Join(extra, "")+"/"+p[0]+"-server_"+p[1]+"-client", func(t *testing.T) {
				rsPair(t, tool, p[0], p[1], port, extra)
			})
		}
	}
}

// TestSIWRstream: rstream over siw0, goverbs against rdma-core both ways (and C-C): small and large messages,
// -T b (blocking), a 64 KiB buffer with two iterations, one-megabyte transfers without poll (-i 0), with -T v
// (every byte checked by the receivers), and keepalive probes every second (-k 1) while data flows.
func TestSIWRstream(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	rsMatrix(t, "rstream", 1100, [][]string{
		{"-T", "v", "-S", "1000", "-C", "50"},
		{"-T", "v", "-S", "64", "-C", "500", "-T", "b"},
		{"-T", "v", "-S", "65536", "-C", "20", "-I", "2", "-B", "131072"},
		{"-T", "v", "-S", "1000000", "-C", "3", "-i", "0"},
		{"-k", "1", "-S", "1000000", "-C", "8", "-T", "v"},
	})
}

// TestSIWRiostream: riostream over siw0 both ways (and C-C): each side riomaps its buffer into the other's
// iomap table (an IOMAP_SGL message: WRITE plus SEND in message-send mode), the data goes by riowrite (plain
// RDMA WRITEs) and the receiver polls the buffer's last byte; -T v checks every answer's pattern.
func TestSIWRiostream(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	rsMatrix(t, "riostream", 1200, [][]string{
		{"-S", "4096", "-C", "10"},
		{"-S", "1000", "-C", "50", "-T", "v"},
		{"-S", "65536", "-C", "20", "-I", "3", "-B", "131072", "-T", "v"},
		{"-S", "1000000", "-C", "3", "-i", "0", "-T", "v"},
	})
}

var rcopyDone = regexp.MustCompile(`^opening\.\.\.transferring\.\.\.closing\.\.\.done\n(\d+) bytes in \d+\.\d\d seconds = (\d+\.\d\d|inf) Gb/sec\n$`)

// TestSIWRcopy copies files over siw0 with rcopy, goverbs' against rdmacm-utils' in both roles (and C-C):
// every copy is byte-identical to its source, the client prints the C tool's lines and exits 0.
func TestSIWRcopy(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	interop.NeedTool(t, "rcopy", "rdmacm-utils")
	port := interop.Port(1300)
	for _, p := range rsPairs {
		port++
		t.Run(p[0]+"-server_"+p[1]+"-client", func(t *testing.T) { rcopyPair(t, p[0], p[1], port) })
	}
}

// rcopyPair runs an rcopy server (it serves for ever; killed at the end) and copies files of several sizes
// to it with the client, one at a time.
func rcopyPair(t *testing.T, srvImpl, cliImpl string, port int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	srv := rsCmd(ctx, t, srvImpl, "rcopy", "-p", interop.Itoa(port))
	srv.Dir = dir
	var srvOut labtest.SyncBuffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	defer func() { cancel(); <-exited }()
	if err := interop.WaitCMListening(labtest.Device(), uint16(port), 30*time.Second); err != nil {
		t.Fatalf("%s rcopy server: %v\n%s", srvImpl, err, srvOut.String())
	}
	for _, size := range []int{1, 5<<10 + 3, 128 << 10, 3<<20 + 17} {
		src := filepath.Join(dir, fmt.Sprintf("%d.src", size))
		dst := filepath.Join(dir, fmt.Sprintf("%d.dst", size))
		data := make([]byte, size)
		rand.Read(data)
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for attempt := 0; ; attempt++ {
			cctx, ccancel := context.WithTimeout(ctx, rsPairDeadline)
			c := runSide(cctx, rsCmd(cctx, t, cliImpl, "rcopy", src, addr+":"+dst, "-p", interop.Itoa(port)))
			ccancel()
			m := rcopyDone.FindStringSubmatch(c.out)
			if c.rc == 0 && m != nil && m[1] == interop.Itoa(size) && c.err == "" {
				break
			}
			msg := fmt.Sprintf("%d bytes: %s client rc %d killed %v\nstdout %q\nstderr %q\n%s server:\n%s",
				size, cliImpl, c.rc, c.killed, c.out, c.err, srvImpl, srvOut.String())
			// The stall of siw's lost first message (docs/kernels.md 11): on 7.3+, the client still waiting at
			// the deadline after "transferring..." (connected, its first messages sent), the server silent.
			stalled := labtest.Kernel().AtLeast(7, 3) && c.killed && strings.HasPrefix(c.out, "opening...transferring...")
			if !stalled || attempt == siwRaceReruns {
				t.Fatal(msg)
			}
			labtest.Note(t, "rcopy %s-server/%s-client, %d bytes: the client stalled after connecting (siw's lost first message, docs/kernels.md 11), copying again", srvImpl, cliImpl, size)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%d bytes: %s -> %s: the copy differs from the source", size, cliImpl, srvImpl)
		}
	}
	select {
	case <-exited:
		t.Fatalf("%s rcopy server exited:\n%s", srvImpl, srvOut.String())
	default:
	}
	t.Logf("%s server:\n%s", srvImpl, srvOut.String())
}
