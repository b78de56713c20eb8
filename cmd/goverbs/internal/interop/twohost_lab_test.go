package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabTwoHosts runs the interop pairs across two hosts: rxe0 in the lab's namespace and the peer host's
// rxe1 in a namespace of its own (labtest.TwoHosts, Linux 7.1+), so every packet crosses the veth with real
// GIDs at both ends. Each pair runs with goverbs on one host and rdma-core's, perftest's or librdmacm's C
// tool on the other, the server on either host. The test must not run in parallel with others: it moves
// veth1 and adds a device.
func TestLabTwoHosts(t *testing.T) {
	peer := labtest.TwoHosts(t)
	local := endpoint{}
	far := endpoint{peer: peer}
	// Each pair: goverbs on one host, the C tool (cImpl: "c", or "c@trixie" for that release's) on the other,
	// the server on either.
	type pair struct{ srv, cli endpoint }
	pairsWith := func(cImpl string) []pair {
		var ps []pair
		for _, srvFar := range []bool{true, false} {
			for _, goServer := range []bool{true, false} {
				s, c := local, far
				if srvFar {
					s, c = far, local
				}
				s.impl, c.impl = cImpl, "go"
				if goServer {
					s.impl, c.impl = "go", cImpl
				}
				ps = append(ps, pair{s, c})
			}
		}
		return ps
	}
	pairs := pairsWith("c")
	name := func(p pair) string {
		where := func(e endpoint) string {
			if e.peer != nil {
				return "peer"
			}
			return "lab"
		}
		return fmt.Sprintf("%s@%s-server/%s@%s-client", p.srv.impl, where(p.srv), p.cli.impl, where(p.cli))
	}

	t.Run("pingpong", func(t *testing.T) {
		interop.NeedTool(t, "ibv_rc_pingpong", "ibverbs-utils")
		port := interop.Port(1300)
		for _, pc := range crossPPCases {
			for _, events := range []bool{false, true} {
				for _, p := range pairs {
					port++
					args := pc.args(port, events)
					t.Run(fmt.Sprintf("%s/events=%v/%s", pc.tool, events, name(p)), func(t *testing.T) {
						crossPingpong(t, pc.tool, p.srv, p.cli, port, args, pc.want)
					})
				}
			}
		}
	})

	t.Run("perftest", func(t *testing.T) {
		interop.NeedTool(t, "ib_write_bw", "perftest")
		port := 19900
		for _, pc := range []pcase{{"ib_write_bw", "RC", nil}, {"ib_read_lat", "RC", nil}, {"ib_send_bw", "UD", nil},
			{"ib_send_lat", "UC", nil}, {"ib_atomic_bw", "RC", nil}} {
			kind := "bw"
			if strings.HasSuffix(pc.tool, "_lat") {
				kind = "lat"
			}
			args := append([]string{"-n", "20", "-c", pc.conn}, pc.args...)
			for _, p := range append(pairsWith("c"), pairsWith("c@trixie")...) {
				port++
				t.Run(pc.tool+"/"+pc.conn+"/"+name(p), func(t *testing.T) {
					srv, cli := runPairOn(t, pc.tool, p.srv, p.cli, port, args)
					for _, s := range []*side{srv, cli} {
						if s.rc != 0 {
							t.Fatalf("%s side exited %d\nstdout:\n%s\nstderr:\n%s", s.impl, s.rc, s.out.String(), s.err.String())
						}
					}
					// The client reports; a latency server of READ/WRITE/atomics prints no results, and whether
					// a send_bw server does depends on the release (TestLabPerftestInterop compares with C).
					if len(resultLines(cli.out.String(), kind)) == 0 {
						t.Errorf("client %s printed no result line:\n%s", p.cli, cli.out.String())
					}
					if kind == "bw" && pc.tool != "ib_send_bw" && len(resultLines(srv.out.String(), kind)) == 0 {
						t.Errorf("server %s printed no result line:\n%s", p.srv, srv.out.String())
					}
				})
			}
		}
	})

	t.Run("rping", func(t *testing.T) {
		interop.NeedTool(t, "rping", "rdmacm-utils")
		port := 19950
		for _, p := range pairs {
			port++
			t.Run(name(p), func(t *testing.T) { crossRping(t, p.srv, p.cli, port) })
		}
	})
}

// crossPPCases are the pingpong tools the cross-host and cross-release pairs run.
var crossPPCases = []crossPPCase{{"ibv_rc_pingpong", nil, ppLines}, {"ibv_ud_pingpong", nil, ppLinesUD},
	{"ibv_srq_pingpong", []string{"-q", "4"}, srqLines(4)}}

type crossPPCase struct {
	tool  string
	extra []string         // the tool's own arguments
	want  []*regexp.Regexp // the lines both sides print
}

// args are the case's arguments on port (20 iterations, GID index 1), with -e for events.
func (c crossPPCase) args(port int, events bool) []string {
	args := append([]string{"-g", "1", "-n", "20", "-p", interop.Itoa(port)}, c.extra...)
	if events {
		args = append(args, "-e")
	}
	return args
}

// crossPingpong runs one pingpong pair, each side on its host (endpoint.peer nil: the lab's own), goverbs as
// the multi-call binary, C as the host's tool or ("c@ERA") that release's from its root.
func crossPingpong(t *testing.T, tool string, srv, cli endpoint, port int, args []string, want []*regexp.Regexp) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := func(e endpoint, args []string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		prog := tool
		if e.impl == "go" {
			prog = interop.Alias(t, tool)
		}
		c := exec.CommandContext(ctx, prog, append([]string{"-d", e.device()}, args...)...)
		if era, ok := strings.CutPrefix(e.impl, "c@"); ok { // another Debian release's tool, from its root
			c = exec.CommandContext(ctx, "/usr/bin/"+tool, append([]string{"-d", e.device()}, args...)...)
			c.SysProcAttr = &syscall.SysProcAttr{Chroot: peerRoot(t, era)}
			c.Dir = "/"
		}
		if e.peer != nil {
			e.peer.Enter(c)
		}
		var o, eb bytes.Buffer
		c.Stdout, c.Stderr = &o, &eb
		return c, &o, &eb
	}
	sc, sout, serr := cmd(srv, args)
	if err := sc.Start(); err != nil {
		t.Fatalf("start %s server: %v", srv, err)
	}
	exited := make(chan struct{})
	go func() { sc.Wait(); close(exited) }()
	waitListen(t, sc.Process.Pid, port, exited)
	cc, cout, cerr := cmd(cli, append(append([]string{}, args...), srv.addr()))
	cerrRun := cc.Run()
	<-exited
	if cerrRun != nil || sc.ProcessState.ExitCode() != 0 {
		t.Fatalf("client %s: %v\n%s%s\nserver %s: exit %d\n%s%s", cli, cerrRun, cout, cerr, srv,
			sc.ProcessState.ExitCode(), sout, serr)
	}
	checkPPOutput(t, "client "+cli.String(), cout.String(), want)
	checkPPOutput(t, "server "+srv.String(), sout.String(), want)
	checkPeers(t, cout.String(), sout.String())
	// The GIDs are the hosts' own: each side's local GID is its netdev's address.
	for _, x := range []struct {
		e   endpoint
		out string
	}{{srv, sout.String()}, {cli, cout.String()}} {
		if !strings.Contains(x.out, "GID ::ffff:"+x.e.addr()) {
			t.Errorf("%s does not show its host's GID ::ffff:%s:\n%s", x.e, x.e.addr(), x.out)
		}
	}
}

// crossRping runs rping's ping loop across the hosts: a server bound to its host's address, a client that
// connects to it and verifies each ping (-V), as the kernel's rxe_rping_between_netns.sh does.
func crossRping(t *testing.T, srv, cli endpoint, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// stdout carries the ping lines; stderr the DISCONNECT and state lines, which C prints or not as its
	// threads race (TestLabRpingInterop).
	cmd := func(e endpoint, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		prog := "rping"
		if e.impl == "go" {
			prog = interop.Alias(t, "rping")
		}
		c := exec.CommandContext(ctx, prog, args...)
		if e.peer != nil {
			e.peer.Enter(c)
		}
		var o, eb bytes.Buffer
		c.Stdout, c.Stderr = &o, &eb
		return c, &o, &eb
	}
	const count = 5
	sc, sout, serr := cmd(srv, "-s", "-v", "-V", "-C", interop.Itoa(count), "-a", srv.addr(), "-p", interop.Itoa(port))
	if err := sc.Start(); err != nil {
		t.Fatalf("start %s server: %v", srv, err)
	}
	exited := make(chan struct{})
	go func() { sc.Wait(); close(exited) }()
	dev := srv.device()
	if err := interop.WaitCMListening(dev, uint16(port), 60*time.Second); err != nil {
		cancel()
		<-exited
		t.Fatalf("%v; server said:\n%s%s", err, sout, serr)
	}
	cc, cout, cerrOut := cmd(cli, "-c", "-v", "-V", "-C", interop.Itoa(count), "-a", srv.addr(), "-p", interop.Itoa(port))
	cerr := cc.Run()
	<-exited
	if cerr != nil || sc.ProcessState.ExitCode() != 0 {
		t.Fatalf("client %s: %v\n%s%s\nserver %s: exit %d\n%s%s", cli, cerr, cout, cerrOut, srv,
			sc.ProcessState.ExitCode(), sout, serr)
	}
	if want := rpingLines("ping data: ", count, 64); cout.String() != want {
		t.Errorf("client %s printed\n%s\nwant\n%s", cli, cout, want)
	}
	if want := rpingLines("server ping data: ", count, 64); sout.String() != want {
		t.Errorf("server %s printed\n%s\nwant\n%s", srv, sout, want)
	}
}
