package interop_test

import (
	"context"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
)

// runCMPairOnce is runPairOnce for perftest's rdma_cm modes: the server listens on an rdma_cm id, not on a
// TCP port, so readiness is read from the kernel's cm_id table.
func runCMPairOnce(t *testing.T, tool, srvImpl, cliImpl string, port int, args []string) (*side, *side) {
	t.Helper()
	// Two minutes bound a pair. A C server that printed its result and never exited after a goverbs client was
	// goverbs' fault, not perftest's: the client moved its exchange QP to ERR right after its last receive
	// completion, which on rxe can drop that SEND's ACK, and the C server (retry count 7: infinite on rxe)
	// retransmitted it for ever while busy-polling for its completion. cmComm.Close now destroys the QP in RTS
	// as C's process exit does (cmd/goverbs/internal/perftest/cmcomm.go); nothing retries such a hang any more.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer notePair(t, srvImpl, cliImpl, time.Now())
	common := append([]string{"-d", labtest.Device(), "-p", fmt.Sprint(port)}, args...)
	srv, cli := &side{impl: srvImpl}, &side{impl: cliImpl}
	sc := command(ctx, t, srvImpl, tool, common)
	sc.Stdout, sc.Stderr = &srv.out, &srv.err
	if err := sc.Start(); err != nil {
		t.Fatalf("start %s server: %v", srvImpl, err)
	}
	exited := make(chan struct{})
	go func() { sc.Wait(); close(exited) }()
	listening := make(chan error, 1)
	go func() { listening <- interop.WaitCMListening(labtest.Device(), uint16(port), 60*time.Second) }()
	select {
	case err := <-listening:
		if err != nil {
			t.Fatalf("%s server: %v", srvImpl, err)
		}
	case <-exited:
		t.Fatalf("%s server exited before listening:\n%s%s", srvImpl, srv.out.String(), srv.err.String())
	}
	cc := command(ctx, t, cliImpl, tool, append(common, serverAddr))
	cc.Stdout, cc.Stderr = &cli.out, &cli.err
	if err := cc.Start(); err != nil {
		t.Fatalf("start %s client: %v", cliImpl, err)
	}
	cliExited := make(chan struct{})
	go func() { cc.Wait(); close(cliExited) }()
	// A side that ends on its own can leave the other waiting for ever: in rdma_cm mode the exchange runs over an
	// RC QP that a vanished peer never answers (no timeout in perftest, nor in goverbs' clone), where the TCP
	// side channel would have given EOF. End the other side at once when the one that exited says why:
	//   - its clock sampling failed (cClockFlake): perftest's print_report_bw exits 1 ("Can't produce a report")
	//     after the test, before the closing exchange. This was the two-minute stall seen now and then (the
	//     pair ran into the bound, then was run again for the clock): once on 6.1 and once on 6.12 in one run
	//     with two VMs sharing the host, found by the notes labsuite now keeps;
	//   - the C client lost perftest's listen race (cListenRace): the C server waits for a client that gave up.
	// The pair is run again in both cases (runCMPair), so ending the survivor early loses nothing.
	gaveUp := func(s *side, impl string, other *exec.Cmd, otherExited <-chan struct{}) {
		stderr := s.err.String()
		if !strings.Contains(stderr, cClockFlake) && !(strings.HasPrefix(srvImpl, "c") && strings.HasPrefix(cliImpl, "c") && cListenRace(stderr)) {
			return
		}
		select {
		case <-otherExited:
		case <-time.After(2 * time.Second): // a clean end of the other side needs far less
			labtest.Note(t, "%s-server/%s-client: %s ended the pair (%s); ending its peer", srvImpl, cliImpl, impl, firstLine(stderr, cClockFlake, "RDMA_CM_EVENT"))
			other.Process.Kill()
		}
	}
	select {
	case <-cliExited:
		gaveUp(cli, cliImpl+" client", sc, exited)
	case <-exited:
		gaveUp(srv, srvImpl+" server", cc, cliExited)
	}
	<-cliExited
	<-exited
	srv.rc, cli.rc = sc.ProcessState.ExitCode(), cc.ProcessState.ExitCode()
	return srv, cli
}

// firstLine is the first line of s that contains one of subs ("" if none).
func firstLine(s string, subs ...string) string {
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}

// cListenRace reports whether perftest's client says its rdma_cm connect beat the server's listen: REJECTED
// with reason 8 (no listener) for RC, UNREACHABLE for UD.
func cListenRace(stderr string) bool {
	return strings.Contains(stderr, "Event: RDMA_CM_EVENT_REJECTED; error: 8.") ||
		strings.Contains(stderr, "Event: RDMA_CM_EVENT_UNREACHABLE")
}

// cmBWLine is a bandwidth result row (perftest pads the average with blanks before its tabs).
var cmBWLine = regexp.MustCompile(`^ \d+ +\d+ +\d+\.\d+ +\d+\.\d+[ \t]+\d+\.\d{6}$`)

// cmResultLines are the result rows of out; each run must print at least one.
func cmResultLines(out, kind string) []string {
	if kind == "lat" {
		return resultLines(out, kind)
	}
	var r []string
	for _, l := range strings.Split(out, "\n") {
		if cmBWLine.MatchString(l) {
			r = append(r, l)
		}
	}
	return r
}

func runCMPair(t *testing.T, tool, srvImpl, cliImpl string, port int, args []string) (*side, *side) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		srv, cli := runCMPairOnce(t, tool, srvImpl, cliImpl, port+attempt*1000, args)
		switch {
		case attempt == cClockReruns:
			return srv, cli
		case strings.Contains(srv.err.String()+cli.err.String(), cClockFlake):
			labtest.Note(t, "%s-server/%s-client: C clock sampling failed, running the pair again", srvImpl, cliImpl)
		case strings.HasPrefix(srvImpl, "c") && strings.HasPrefix(cliImpl, "c") && cListenRace(cli.err.String()):
			// perftest's own race: its server listens only after the handshake its client connects after; a
			// connect that comes back REJECTED (no listener) or, for UD, UNREACHABLE can make Debian's C client
			// give up, and its server then waits for ever (seen on 6.12 with RC and on 7.3 with UD).
			labtest.Note(t, "c-server/c-client: the C client's connect beat the C server's listen (perftest's race), running the pair again")
		default:
			return srv, cli
		}
	}
}

// TestLabPerftestRDMACMInterop runs goverbs' perftest with -z (the out-of-band exchange over an rdma_cm RC
// QP) and -R (the test QPs connected through rdma_cm as well) against Debian 12's perftest 6.06 both ways,
// with sid's 6.24 C pair as the reference for the output's shape.
func TestLabPerftestRDMACMInterop(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	peerRoot(t, "sid")
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Fatalf("perftest's C binaries are not installed: %v", err)
	}
	port := 21600
	var refs refCount
	defer refs.note(t, "6.24")
	for _, pc := range []pcase{
		{"ib_write_bw", "RC", []string{"-z"}},
		{"ib_send_lat", "RC", []string{"-z"}},
		{"ib_read_bw", "RC", []string{"-z"}},
		{"ib_send_bw", "UD", []string{"-z"}},
		{"ib_write_lat", "RC", []string{"-z"}},
		{"ib_write_bw", "RC", []string{"-R"}},
		{"ib_read_bw", "RC", []string{"-R"}},
		{"ib_send_bw", "RC", []string{"-R"}},
		{"ib_write_bw", "RC", []string{"-R", "-q", "2"}},
		{"ib_send_lat", "RC", []string{"-R"}},
		{"ib_write_lat", "RC", []string{"-R"}},
		{"ib_read_lat", "RC", []string{"-R"}},
		{"ib_send_bw", "UD", []string{"-R"}},
		{"ib_send_lat", "UD", []string{"-R"}},
		{"ib_send_bw", "UD", []string{"-R", "-b"}},
	} {
		t.Run(strings.Join(append([]string{pc.tool, pc.conn}, pc.args...), "/"), func(t *testing.T) {
			kind := "bw"
			if strings.HasSuffix(pc.tool, "_lat") {
				kind = "lat"
			}
			args := append([]string{"-n", "20", "-c", pc.conn}, pc.args...)
			runs := map[string][2]*side{}
			for _, dir := range [][2]string{{"go", "c"}, {"c", "go"}, {refImpl, refImpl}} {
				port++
				var srv, cli *side
				if dir[0] == refImpl {
					var cached bool
					srv, cli, cached = refPair(t, pc.tool, refImpl, func() (*side, *side) { return runCMPair(t, pc.tool, dir[0], dir[1], port, args) })
					refs.add(cached)
				} else {
					srv, cli = runCMPair(t, pc.tool, dir[0], dir[1], port, args)
				}
				runs[dir[0]+"-"+dir[1]] = [2]*side{srv, cli}
				if srv.rc != 0 || cli.rc != 0 {
					t.Fatalf("%s-server/%s-client: exit %d / %d\nserver stdout:\n%s\nserver stderr:\n%s\nclient stdout:\n%s\nclient stderr:\n%s",
						dir[0], dir[1], srv.rc, cli.rc, srv.out.String(), srv.err.String(), cli.out.String(), cli.err.String())
				}
			}
			ref := runs[refImpl+"-"+refImpl]
			saveRef(t, ref[0], ref[1])
			for _, dir := range []string{"go-c", "c-go"} {
				for i, s := range runs[dir] {
					role := [2]string{"server", "client"}[i]
					want := len(cmResultLines(ref[i].out.String(), kind))
					// Every client reports; a server reports where C's does (not in ib_read_lat).
					if got := cmResultLines(s.out.String(), kind); len(got) != want || (want == 0 && role == "client") {
						t.Errorf("%s: %s %s printed %d result lines, 6.24 prints %d\n%s", dir, s.impl, role, len(got), want, s.out.String())
					}
					if s.impl == "go" && shape(s.out.String()) != shape(ref[i].out.String()) {
						t.Errorf("%s: goverbs %s output differs in shape from 6.24's\ngoverbs:\n%s\n6.24:\n%s", dir, role, s.out.String(), ref[i].out.String())
					}
				}
			}
		})
	}
}
