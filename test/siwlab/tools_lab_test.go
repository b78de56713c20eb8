package siwlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/labtest"
)

// The tests of this file pair goverbs' tools (the static binary, run under each C tool's name so that usage and
// error texts print the same argv[0]) with rdma-core's, perftest's and iproute2's on siw0, both ways:
//
//   - "c" is the lab's own C tools (Debian 12: rdma-core 44, perftest 6.06, iproute2 6.1), what the rxe
//     interop tests pair with;
//   - "c@trixie" and "c@sid" are another release's, run from its root by chroot (labtest.PeerRoot): rdma-core
//     56 and 65, perftest 6.24, iproute2 6.15 and 7.3. Each kernel of the lab has its release's peer (kernelPeer).
//   - "go" is goverbs.
//
// Where a C tool cannot work on iWARP (UD and multicast in udaddy and mckey, the pingpongs' out-of-band
// connection of an RC QP, which iWARP's connection manager does not allow), the test asserts that C fails and
// that goverbs fails the same way, with the same words and status.

// result is one tool run: its exit status, stdout and stderr; killed says the test's deadline ended it.
type result struct {
	rc       int
	out, err string
	killed   bool
}

func (r result) String() string {
	k := ""
	if r.killed {
		k = " (killed at the deadline)"
	}
	return fmt.Sprintf("exit %d%s\n--- stdout:\n%s--- stderr:\n%s", r.rc, k, r.out, r.err)
}

// kernelPeer is the Debian release whose C tools go with the lab's kernel: bookworm's own (the lab's "c") for
// 6.1, trixie's for 6.12, sid's for the newest.
func kernelPeer() string {
	k := labtest.Kernel()
	switch {
	case k.AtLeast(6, 13):
		return "c@sid"
	case k.AtLeast(6, 12):
		return "c@trixie"
	}
	return "c"
}

// cImpls are the C tools goverbs is paired with on this kernel: the lab's own and the kernel's peer's.
func cImpls() []string {
	if p := kernelPeer(); p != "c" {
		return []string{"c", p}
	}
	return []string{"c"}
}

// toolCmd is impl's tool name with args.
func toolCmd(ctx context.Context, t *testing.T, impl, name string, args ...string) *exec.Cmd {
	t.Helper()
	switch {
	case impl == "go":
		return exec.CommandContext(ctx, interop.Alias(t, name), args...)
	case impl == "c":
		return exec.CommandContext(ctx, name, args...)
	}
	era, ok := strings.CutPrefix(impl, "c@")
	if !ok {
		t.Fatalf("unknown implementation %q", impl)
	}
	root := labtest.PeerRoot(t, era)
	path := "/usr/bin/" + name
	if name == "ibstat" {
		path = "/usr/sbin/ibstat"
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Args[0] = name // as a shell runs it: usage texts print argv[0]
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	return cmd
}

// exitOf is a finished command's result.
func exitOf(ctx context.Context, o, e *bytes.Buffer, err error) result {
	r := result{out: o.String(), err: e.String(), killed: ctx.Err() != nil}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.rc = ee.ExitCode()
	case err != nil:
		r.rc, r.err = -1, r.err+err.Error()
	}
	return r
}

// runTool runs impl's tool to its end, killed after limit.
func runTool(t *testing.T, limit time.Duration, impl, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := toolCmd(ctx, t, impl, name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	return exitOf(ctx, &o, &e, cmd.Run())
}

// pairResult is a server's and a client's results.
type pairResult struct{ srv, cli result }

// runPair starts srvImpl's srvTool with sArgs, waits until it listens on TCP port (an iWARP listen is a kernel TCP
// listener, in /proc/PID/net/tcp), runs cliImpl's cliTool with cArgs, and waits for the server. Each side is
// killed after limit; with stopServer the server is killed once the client has ended (cmtime's never exits).
func runPair(t *testing.T, limit time.Duration, srvImpl, srvTool string, sArgs []string, cliImpl, cliTool string, cArgs []string,
	port int, stopServer bool) pairResult {
	t.Helper()
	sctx, scancel := context.WithTimeout(context.Background(), limit+5*time.Second)
	defer scancel()
	srv := toolCmd(sctx, t, srvImpl, srvTool, sArgs...)
	var so, se bytes.Buffer
	srv.Stdout, srv.Stderr = &so, &se
	if err := srv.Start(); err != nil {
		t.Fatalf("start %s %s: %v", srvImpl, srvTool, err)
	}
	var srvErr error
	exited := make(chan struct{})
	go func() { srvErr = srv.Wait(); close(exited) }()
	if err := interop.WaitListeningIn(srv.Process.Pid, port, 30*time.Second, exited); err != nil {
		if err := srv.Process.Kill(); err != nil {
			t.Log(err)
		}
		<-exited
		t.Fatalf("%s %s %q: %v\n%s", srvImpl, srvTool, sArgs, err, exitOf(sctx, &so, &se, srvErr))
	}
	cli := runTool(t, limit, cliImpl, cliTool, cArgs...)
	if stopServer {
		if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
			t.Log(err)
		}
	}
	<-exited
	s := exitOf(sctx, &so, &se, srvErr)
	if stopServer {
		s.killed = false
	}
	return pairResult{s, cli}
}

// pairs are the directions a goverbs tool is paired with C in: C against C (the lab's control), goverbs as
// server, goverbs as client, for each C of cImpls, and goverbs against itself.
func pairs() [][2]string {
	var ps [][2]string
	for _, c := range cImpls() {
		ps = append(ps, [2]string{c, c}, [2]string{"go", c}, [2]string{c, "go"})
	}
	return append(ps, [2]string{"go", "go"})
}

// withReruns runs one pair until it does not stall (a side killed at the deadline), at most siwRaceReruns more
// times, noting each rerun: 7.3.4's siw loses a connection's first message now and then (see TestSIWRping).
func withReruns(t *testing.T, name string, run func() pairResult) pairResult {
	t.Helper()
	for attempt := 0; ; attempt++ {
		r := run()
		if (!r.srv.killed && !r.cli.killed) || attempt == siwRaceReruns {
			return r
		}
		labtest.Note(t, "%s: a side stalled (killed at the deadline), running the pair again\nserver: %s\nclient: %s", name, r.srv, r.cli)
	}
}

// port hands out TCP ports, one per pair (an iWARP connection is a TCP connection: no port is reused while its
// last connection may linger).
var nextPort = 23000

func port() int { nextPort++; return nextPort }

// ucmatoseConnectError is what a ucmatose client prints when siw fails its connection after the server's
// (TestSIWUcmatose).
const ucmatoseConnectError = "cmatose: event: RDMA_CM_EVENT_CONNECT_ERROR, error: -22\n"

const (
	cmatoseServerOut = "cmatose: starting server\ninitiating data transfers\ncompleting sends\n" +
		"receiving data transfers\ndata transfers complete\ncmatose: disconnecting\ndisconnected\n" +
		"test complete\nreturn status 0\n"
	cmatoseClientOut = "cmatose: starting client\ncmatose: connecting\nreceiving data transfers\n" +
		"sending replies\ndata transfers complete\ntest complete\nreturn status 0\n"
)

// TestSIWUcmatose runs ucmatose (librdmacm's connection test: several RC connections through the iWARP CM, SENDs
// both ways, disconnect) in every pairing, with the options that apply to iWARP; each side must exit 0 and print
// exactly what it prints on rxe.
//
// On 6.12 the active side's connection now and then ends in RDMA_CM_EVENT_CONNECT_ERROR (-EINVAL) after the
// server has sent, received and disconnected (3 of 21 pairs in one run, C against C among them, rdma-core's and
// goverbs' clients alike; the server sends first, right after its accept, and the data follows the MPA reply):
// such a pair is run again, up to siwRaceReruns times, with a note.
func TestSIWUcmatose(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	for _, extra := range [][]string{nil, {"-c", "2", "-C", "3"}, {"-S", "4096", "-C", "5"}} {
		for _, p := range pairs() {
			name := fmt.Sprintf("%v/%s-server/%s-client", extra, p[0], p[1])
			t.Run(name, func(t *testing.T) {
				r := withReruns(t, name, func() pairResult {
					for attempt := 0; ; attempt++ {
						n := port()
						r := runPair(t, 30*time.Second, p[0], "ucmatose", append([]string{"-b", addr, "-p", fmt.Sprint(n)}, extra...),
							p[1], "ucmatose", append([]string{"-s", addr, "-p", fmt.Sprint(n)}, extra...), n, false)
						if !strings.Contains(r.cli.out, ucmatoseConnectError) || attempt == siwRaceReruns {
							return r
						}
						labtest.Note(t, "%s: the client's connection failed after the server's (siw's active-side race), running the pair again", name)
					}
				})
				if r.srv.rc != 0 || r.cli.rc != 0 || r.srv.out != cmatoseServerOut || r.cli.out != cmatoseClientOut || r.srv.err != "" || r.cli.err != "" {
					t.Fatalf("server: %s\nclient: %s", r.srv, r.cli)
				}
			})
		}
	}
}

// TestSIWRdmaServerClient runs rdma_server and rdma_client (librdmacm's rdma_verbs API: rdma_create_ep, one
// SEND each way) in every pairing.
func TestSIWRdmaServerClient(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	for _, p := range pairs() {
		name := fmt.Sprintf("%s-server/%s-client", p[0], p[1])
		t.Run(name, func(t *testing.T) {
			r := withReruns(t, name, func() pairResult {
				n := port()
				return runPair(t, 30*time.Second, p[0], "rdma_server", []string{"-s", addr, "-p", fmt.Sprint(n)},
					p[1], "rdma_client", []string{"-s", addr, "-p", fmt.Sprint(n)}, n, false)
			})
			if r.srv.rc != 0 || r.cli.rc != 0 || r.srv.out != "rdma_server: start\nrdma_server: end 0\n" ||
				r.cli.out != "rdma_client: start\nrdma_client: end 0\n" || r.srv.err != "" || r.cli.err != "" {
				t.Fatalf("server: %s\nclient: %s", r.srv, r.cli)
			}
		})
	}
}

var cmtimeRow = regexp.MustCompile(`^[a-z ]{13}: ( *-?\d+\.\d\d){4}$`)

// cmtimeShape is cmtime's output with the table's numbers blanked.
func cmtimeShape(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if cmtimeRow.MatchString(l) {
			lines[i] = l[:13] + ": N N N N"
		}
	}
	return strings.Join(lines, "\n")
}

// TestSIWCmtime runs cmtime's client (connection setup and teardown timed step by step) against a server of
// each implementation: the client exits 0, prints nothing on stderr, and its output has the C client's shape
// against the C server of the same release.
//
// Only the lab's own cmtime (rdma-core 44) is paired: from rdma-core 46 on (trixie's 56, sid's 65) cmtime is
// another program (a controller on -C, listeners on -L, an out-of-band TCP port), which goverbs' cmtime, a
// clone of 44's, does not speak.
func TestSIWCmtime(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	for _, extra := range [][]string{{"-c", "4"}, {"-c", "3", "-r", "5", "-t", "1000"}} {
		refs := map[string]string{}
		for _, p := range [][2]string{{"c", "c"}, {"go", "c"}, {"c", "go"}, {"go", "go"}} {
			name := fmt.Sprintf("%v/%s-server/%s-client", extra, p[0], p[1])
			t.Run(name, func(t *testing.T) {
				r := withReruns(t, name, func() pairResult {
					n := port()
					return runPair(t, 60*time.Second, p[0], "cmtime", []string{"-p", fmt.Sprint(n)},
						p[1], "cmtime", append([]string{"-s", addr, "-p", fmt.Sprint(n)}, extra...), n, true)
				})
				// rdma-core's cmtime client never joins its event thread, which may print this as main destroys
				// the channel (see cmd/goverbs/internal/interop's TestLabCmtimeInterop): C's race, status 0.
				if strings.HasPrefix(p[1], "c") && strings.Contains(r.cli.err, cmtimeTeardownRace) {
					r.cli.err = strings.Replace(r.cli.err, cmtimeTeardownRace, "", 1)
					labtest.Note(t, "%s: C cmtime's event thread met the destroyed channel (its race); its line dropped", name)
				}
				if r.cli.rc != 0 || r.cli.err != "" || r.srv.err != "" || !strings.Contains(r.cli.out, "connect      :") {
					t.Fatalf("server: %s\nclient: %s", r.srv, r.cli)
				}
				c := p[0] // the C release of the pair (the lab's own for goverbs against itself)
				if c == "go" {
					c = p[1]
				}
				if c == "go" {
					c = "c"
				}
				if p[0] == p[1] && p[0] != "go" {
					refs[c] = r.cli.out
				}
				ref, ok := refs[c]
				if !ok {
					t.Fatalf("no %s-%s reference run", c, c)
				}
				if cmtimeShape(r.cli.out) != cmtimeShape(ref) {
					t.Fatalf("client output differs in shape from %s's against itself\nthis run:\n%s\n%s-%s:\n%s", c, r.cli.out, c, c, ref)
				}
			})
		}
	}
}

// cmtimeTeardownRace is what rdmacm-utils' cmtime client may print as it exits.
const cmtimeTeardownRace = "failure in rdma_get_cm_event in process_server_events: Bad file descriptor\n"

var (
	perfBW     = regexp.MustCompile(`^ \d+ +\d+ +\d+\.\d+ +\d+\.\d+[ \t]+\d+\.\d{6}$`)
	perfLat    = regexp.MustCompile(`^ \d+ +\d+ +\d+\.\d+ +\d+\.\d+ +\d+\.\d+`)
	perfNumber = regexp.MustCompile(`0x[0-9a-f]+|\d+(\.\d+)?`)
	perfSpaces = regexp.MustCompile(`[ \t]+`)
)

// perfResults counts a perftest output's result rows.
func perfResults(out string, lat bool) int {
	re := perfBW
	if lat {
		re = perfLat
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

// perfShape is a perftest output with numbers and runs of blanks made uniform.
func perfShape(out string) string {
	lines := strings.Split(perfNumber.ReplaceAllString(out, "N"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(perfSpaces.ReplaceAllString(l, " "), " ")
	}
	return strings.Join(lines, "\n")
}

// TestSIWPerftestRDMACM runs perftest's send, write and read tests, bandwidth and latency, with -R (the QP
// connected through rdma_cm: the only way perftest connects on iWARP) on siw0 in every pairing of the lab's
// perftest 6.06, the kernel's peer's (6.24 on 6.12 and the newest) and goverbs'. All six work C against C on siw
// on every lab kernel. Both sides must exit 0 and print the result rows C prints in that role (a read latency
// server prints none); goverbs' output (perftest 6.24's, which it follows) must have the shape of sid's 6.24
// against itself, and its stderr be that pair's ("Device not recognized to implement inline feature. Disabling
// it" for the read tests on siw).
func TestSIWPerftestRDMACM(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	labtest.RequireRoot(t)
	if k := labtest.Kernel(); k.AtLeast(7, 3) {
		// Seen 2026-11-28 on 7.3.4 (three pairs of one run: goverbs against itself, and C servers against
		// goverbs clients): a side fails perftest's closing exchange over its rdma_cm QP ("Failed to exchange
		// data between server and clients") after its measurement; not seen on 6.1 or 6.12. Not yet
		// understood (docs/devices.md): skipped there until it is, rather than rerun.
		t.Skipf("Linux %s: perftest -R's closing exchange on siw fails intermittently (goverbs and C sides), not yet understood", k)
	}
	for _, tool := range []string{"ib_send_bw", "ib_send_lat", "ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat"} {
		t.Run(tool, func(t *testing.T) {
			lat := strings.HasSuffix(tool, "_lat")
			var ref *pairResult
			dirs := append([][2]string{{"c@sid", "c@sid"}}, pairs()...)
			for _, p := range dirs {
				name := fmt.Sprintf("%s/%s-server/%s-client", tool, p[0], p[1])
				if tool == "ib_send_bw" && (p[0] == "go") != (p[1] == "go") {
					// On iWARP C perftest's send bandwidth test paces the client with credits the server
					// RDMA-WRITEs into a buffer named in the client's record (send_bw.c send_rcredit,
					// ctx_alloc_credit); goverbs' perftest has no such credits yet, so it cannot pair with C
					// here (goverbs against itself runs, asserted above and below).
					t.Run(p[0]+"-server/"+p[1]+"-client", func(t *testing.T) {
						t.Skip("goverbs' perftest lacks C perftest's iWARP send credits (send_bw.c send_rcredit): not yet implemented")
					})
					continue
				}
				r := perfPair(t, name, tool, p)
				if r.srv.rc != 0 || r.cli.rc != 0 {
					if ref == nil {
						t.Fatalf("%s (the reference): server: %s\nclient: %s", name, r.srv, r.cli)
					}
					t.Errorf("%s: server: %s\nclient: %s", name, r.srv, r.cli)
					continue
				}
				if ref == nil {
					ref = &r
					if perfResults(r.cli.out, lat) == 0 {
						t.Fatalf("%s: the client printed no result:\n%s", name, r.cli.out)
					}
					continue
				}
				for i, s := range []result{r.srv, r.cli} {
					role, want := "server", ref.srv
					if i == 1 {
						role, want = "client", ref.cli
					}
					if got, n := perfResults(s.out, lat), perfResults(want.out, lat); got != n {
						t.Errorf("%s: the %s printed %d result rows, sid's 6.24 %d\n%s", name, role, got, n, s.out)
					}
					if p[i] == "go" {
						if perfShape(s.out) != perfShape(want.out) {
							t.Errorf("%s: goverbs' %s output differs in shape from sid's 6.24\ngoverbs:\n%s\n6.24:\n%s", name, role, s.out, want.out)
						}
						if s.err != want.err {
							t.Errorf("%s: goverbs' %s stderr %q, sid's 6.24 %q", name, role, s.err, want.err)
						}
					}
				}
			}
		})
	}
}

// perfClockFlake is what a C perftest prints when its clock sampling failed under the lab's emulation (it then
// exits 1 without a report; see cmd/goverbs/internal/interop).
const perfClockFlake = "Can't produce a report"

// perfPair runs one perftest pair, 30 s at most a side; a pair that stalled (7.3.4's lost first message) or whose C
// side's clock sampling failed runs again, twice at most, with a note. A goverbs failure that repeats is not hidden:
// the third result is returned.
func perfPair(t *testing.T, name, tool string, p [2]string) pairResult {
	t.Helper()
	for attempt := 0; ; attempt++ {
		n := port()
		common := []string{"-d", labtest.Device(), "-R", "-n", "20", "-p", fmt.Sprint(n)}
		r := runPair(t, 30*time.Second, p[0], tool, common, p[1], tool, append(common, addr), n, false)
		stalled := r.srv.killed || r.cli.killed
		flake := strings.Contains(r.srv.out+r.srv.err+r.cli.out+r.cli.err, perfClockFlake)
		if (!stalled && !flake) || attempt == 2 {
			return r
		}
		labtest.Note(t, "%s: stalled %v, C clock sampling failed %v: running the pair again\nserver: %s\nclient: %s", name, stalled, flake, r.srv, r.cli)
	}
}

var ibpanicPid = regexp.MustCompile(`ibpanic: \[\d+\]`)

// sameAs runs goverbs' tool and each C of impls with args and requires the same status, stdout and stderr.
func sameAs(t *testing.T, impls []string, name string, args ...string) {
	t.Helper()
	g := runTool(t, 30*time.Second, "go", name, args...)
	for _, c := range impls {
		w := runTool(t, 30*time.Second, c, name, args...)
		if w.killed || g.killed {
			t.Errorf("%s %q did not end:\n%s: %s\ngoverbs: %s", name, args, c, w, g)
			continue
		}
		// infiniband-diags' ibpanic prints the pid: "ibpanic: [630] main: ..."
		w.err, g.err = ibpanicPid.ReplaceAllString(w.err, "ibpanic: [PID]"), ibpanicPid.ReplaceAllString(g.err, "ibpanic: [PID]")
		if g != w {
			t.Errorf("%s %q differs:\n=== %s: %s\n=== goverbs: %s", name, args, c, w, g)
		}
	}
}

// TestSIWUdaddyMckey checks udaddy and mckey, whose UD QPs iWARP does not have: on siw both C tools resolve the
// address (and route), then fail to create the QP (EOPNOTSUPP) and say so; goverbs must print the same lines,
// to stdout and stderr, and exit with the same status. udaddy's client is refused once its route resolves (no
// server needed); mckey's sender and receiver are refused before joining, and then fail to leave the group they
// never joined.
func TestSIWUdaddyMckey(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	impls := cImpls()
	for _, args := range [][]string{
		{"-s", addr},
		{"-s", addr, "-b", addr},
		{"-s", addr, "-c", "2"},
	} {
		t.Run("udaddy "+strings.Join(args, " "), func(t *testing.T) {
			c := runTool(t, 30*time.Second, "c", "udaddy", args...)
			if c.rc == 0 || !strings.Contains(c.err, "unable to create QP: Operation not supported") {
				t.Fatalf("rdma-core's udaddy on siw: want the QP refused:\n%s", c)
			}
			sameAs(t, impls, "udaddy", args...)
		})
	}
	for _, args := range [][]string{
		{"-m", "239.1.1.1", "-b", addr},
		{"-m", "239.1.1.1", "-b", addr, "-s"},
		{"-m", "239.1.1.1", "-b", addr, "-s", "-C", "3"},
		// (-M, an AF_IB multicast address, is left out: goverbs' mckey refuses it on every device, rxe0 too.)
	} {
		t.Run("mckey "+strings.Join(args, " "), func(t *testing.T) {
			c := runTool(t, 30*time.Second, "c", "mckey", args...)
			if c.rc == 0 {
				t.Fatalf("rdma-core's mckey on siw: want a failure:\n%s", c)
			}
			sameAs(t, impls, "mckey", args...)
		})
	}
}

// TestSIWDeviceTools compares goverbs' ibv_devices, ibv_devinfo, ibstat and rdma with rdma-core 65's and
// iproute2 7.3's (sid's root: the releases goverbs' clones follow, as in cmd/goverbs/internal/labdiff and
// rdmatool) on siw0, byte for byte with the exit status.
func TestSIWDeviceTools(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	labtest.RequireRoot(t)
	dev := labtest.Device()
	sid := []string{"c@sid"}
	for _, c := range []struct {
		tool string
		args string
	}{
		{"ibv_devices", ""}, {"ibv_devices", "-v"},
		{"ibv_devinfo", ""}, {"ibv_devinfo", "-v"}, {"ibv_devinfo", "-l"}, {"ibv_devinfo", "-d DEV"},
		{"ibv_devinfo", "-v -d DEV"}, {"ibv_devinfo", "-d DEV -i 1"}, {"ibv_devinfo", "-i 2"},
		{"ibstat", ""}, {"ibstat", "DEV"}, {"ibstat", "DEV 1"}, {"ibstat", "-l"}, {"ibstat", "-p"}, {"ibstat", "-s"},
		{"rdma", "dev"}, {"rdma", "-d dev"}, {"rdma", "-j dev"}, {"rdma", "dev show DEV"},
		{"rdma", "link"}, {"rdma", "-d link"}, {"rdma", "-j link"}, {"rdma", "-jp link"}, {"rdma", "link show DEV/1"},
		{"rdma", "res"}, {"rdma", "-d res"}, {"rdma", "-j res"}, {"rdma", "res show DEV"},
		{"rdma", "res show qp"}, {"rdma", "res show cm_id"}, {"rdma", "res show mr"}, {"rdma", "res show pd"},
		{"rdma", "stat"}, {"rdma", "-j stat"}, {"rdma", "stat show link DEV/1"}, {"rdma", "stat qp mode"},
		{"rdma", "stat mode supported"}, {"rdma", "sys"},
	} {
		args := strings.Fields(strings.ReplaceAll(c.args, "DEV", dev))
		t.Run(strings.ReplaceAll(c.tool+" "+c.args, " ", "_"), func(t *testing.T) {
			sameAs(t, sid, c.tool, args...)
		})
	}
}

// TestSIWLinkAddDelete creates a second soft-iWARP link (rdma link add NAME type siw netdev veth1, as the lab
// made siw0 on veth0) with each tool and deletes it with the other, and compares both tools' refusals: a name in
// use, a netdev that already has a siw device (veth0), a netdev that does not exist, an unknown type.
func TestSIWLinkAddDelete(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	labtest.RequireRoot(t)
	dev := labtest.Device()
	show := func(impl string) result { return runTool(t, 30*time.Second, impl, "rdma", "link") }
	for _, p := range [][2]string{{"c@sid", "go"}, {"go", "c@sid"}} {
		name := "siwt" + strings.TrimPrefix(p[0], "c@")
		t.Run(p[0]+"-add/"+p[1]+"-delete", func(t *testing.T) {
			add := runTool(t, 30*time.Second, p[0], "rdma", "link", "add", name, "type", "siw", "netdev", "veth1")
			if add.rc != 0 || add.out != "" || add.err != "" {
				t.Fatalf("%s rdma link add %s: %s", p[0], name, add)
			}
			defer runTool(t, 30*time.Second, "c@sid", "rdma", "link", "delete", name)
			g, c := show("go"), show("c@sid")
			if g != c || !strings.Contains(c.out, "link "+name+"/1 state ACTIVE") || !strings.Contains(c.out, "netdev veth1") {
				t.Errorf("rdma link after the add:\n=== iproute2: %s\n=== goverbs: %s", c, g)
			}
			sameAs(t, []string{"c@sid"}, "rdma", "link", "show", name+"/1")
			sameAs(t, []string{"c@sid"}, "ibv_devices")
			del := runTool(t, 30*time.Second, p[1], "rdma", "link", "delete", name)
			if del.rc != 0 || del.out != "" || del.err != "" {
				t.Fatalf("%s rdma link delete %s: %s", p[1], name, del)
			}
			if c := show("c@sid"); strings.Contains(c.out, name) {
				t.Errorf("%s still there after the delete:\n%s", name, c)
			}
		})
	}
	for _, args := range [][]string{
		{"link", "add", dev, "type", "siw", "netdev", labtest.Netdev()},
		{"link", "add", "siwbad", "type", "siw", "netdev", labtest.Netdev()},
		{"link", "add", "siwbad", "type", "siw", "netdev", "nosuchnet"},
		{"link", "add", "siwbad", "type", "nosuchtype", "netdev", labtest.Netdev()},
		{"link", "delete", "nosuchdev"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			sameAs(t, []string{"c@sid"}, "rdma", args...)
		})
	}
}

// srqClientErr is what goverbs' ibv_srq_pingpong client says when the server closes the exchange before sending
// its records (rdma-core's loops silently for ever there; see TestSIWPingpong).
const srqClientErr = "client read: Connection reset by peer\n0/52: Couldn't read remote address [0]\nFailed to modify QP[0] to RTS\n"

var ppAddr = regexp.MustCompile(`QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}`)

// ppShape blanks a pingpong output's QPN and PSN.
func ppShape(s string) string { return ppAddr.ReplaceAllString(s, "QPN 0x______, PSN 0x______") }

// TestSIWPingpong pairs the ibv_*_pingpong tools, which connect their QPs out of band (a TCP exchange of QPN and
// PSN, then INIT, RTR, RTS by hand): iWARP QPs are connected only by the iWARP connection manager, so on siw the
// server's move to RTS fails, it says so and exits 1, closing the exchange socket. Each pairing must do what
// rdma-core 65's pair (sid's root, the release goverbs' pingpong follows) does, same lines and status on each side:
// ibv_rc_pingpong's client then fails its read of the server's address and exits 1. ibv_srq_pingpong's C client
// loops for ever on the closed socket (its record read retries a read that returns 0, silently, until killed);
// goverbs' clone, by a choice its package documents, reports the end of the stream instead, goes on with the
// records it has, as rdma-core does after a failed read, and fails at RTS: that is asserted as such (srqClientErr).
// ibv_uc_pingpong and ibv_ud_pingpong (iWARP has RC only) and ibv_xsrq_pingpong (no XRC) are refused before any
// connection.
func TestSIWPingpong(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	labtest.RequireRoot(t)
	dev := labtest.Device()
	for _, tool := range []string{"ibv_rc_pingpong", "ibv_srq_pingpong"} {
		t.Run(tool, func(t *testing.T) {
			var ref *pairResult
			for _, p := range [][2]string{{"c@sid", "c@sid"}, {"go", "c@sid"}, {"c@sid", "go"}, {"go", "go"}} {
				name := fmt.Sprintf("%s/%s-server/%s-client", tool, p[0], p[1])
				n := port()
				args := []string{"-d", dev, "-p", fmt.Sprint(n)}
				r := runPair(t, 10*time.Second, p[0], tool, args, p[1], tool, append(args, "127.0.0.1"), n, false)
				r.srv.out, r.cli.out = ppShape(r.srv.out), ppShape(r.cli.out)
				if r.cli.killed {
					// A killed C client's stdout is lost in its buffer; goverbs writes as it goes.
					r.cli.out = ""
				}
				if ref == nil {
					ref = &r
					if r.srv.killed || r.srv.rc != 1 || !strings.Contains(r.srv.err, "to RTS\nCouldn't connect to remote QP\n") {
						t.Fatalf("%s: want the server's RTS refused:\n%s", name, r.srv)
					}
					if tool == "ibv_rc_pingpong" && (r.cli.killed || r.cli.rc != 1) {
						t.Fatalf("%s: want the client to fail:\n%s", name, r.cli)
					}
					if tool == "ibv_srq_pingpong" && !r.cli.killed {
						t.Fatalf("%s: want the client to wait until killed:\n%s", name, r.cli)
					}
					continue
				}
				if r.srv != ref.srv {
					t.Errorf("%s: the server differs from sid's C pair's:\n=== C: %s\n=== this: %s", name, ref.srv, r.srv)
				}
				if tool == "ibv_srq_pingpong" && p[1] == "go" {
					if r.cli.killed || r.cli.rc != 1 || r.cli.err != srqClientErr {
						t.Errorf("%s: goverbs' srq client: want exit 1 and %q:\n%s", name, srqClientErr, r.cli)
					}
					continue
				}
				if r.cli != ref.cli {
					t.Errorf("%s: the client differs from sid's C pair's:\n=== C: %s\n=== this: %s", name, ref.cli, r.cli)
				}
			}
		})
	}
	for _, c := range []struct {
		tool string
		args []string
	}{
		{"ibv_uc_pingpong", []string{"-d", dev}},
		{"ibv_ud_pingpong", []string{"-d", dev}},
		{"ibv_xsrq_pingpong", []string{"-d", dev}},
		{"ibv_rc_pingpong", []string{"-d", dev, "-g", "1", "-p", fmt.Sprint(port()), "127.0.0.1"}}, // no server: the client's connect is refused
		{"ibv_rc_pingpong", []string{"-d", dev, "-i", "2"}},
	} {
		t.Run(c.tool+" "+strings.Join(c.args, " "), func(t *testing.T) {
			sameAs(t, []string{"c@sid"}, c.tool, c.args...)
		})
	}
}
