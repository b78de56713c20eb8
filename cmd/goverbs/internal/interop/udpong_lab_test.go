package interop_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/rstream"
	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/labtest"
)

var udpongTool = ppTool{"udpong", rstream.MainUdpong}

const udpongHeader = "name      bytes   xfers   total       time     Gb/sec    usec/xfer\n"

// udpongServer is a udpong server run as a process (the C tool, from root when root is not "", or goverbs'
// binary under the name udpong), which serves until it is killed: udpong's server never exits by itself.
type udpongServer struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
	exited chan struct{}
}

// startUdpong starts a server with args and waits until its UDP socket is bound to port (in
// /proc/net/udp or udp6); it is killed at the end of the test.
func startUdpong(t *testing.T, path, root string, port int, args []string) *udpongServer {
	t.Helper()
	s := &udpongServer{exited: make(chan struct{})}
	s.cmd = exec.Command(path, args...)
	s.cmd.Args[0] = "udpong"
	if root != "" {
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		s.cmd.Dir = "/"
	}
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.errOut
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.stop)
	want := fmt.Sprintf(":%04X", port)
	for deadline := time.Now().Add(time.Minute); ; {
		if interop.Bound("/proc/net/udp", want) || interop.Bound("/proc/net/udp6", want) {
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("udpong server %v exited before binding UDP port %d: %v\nstdout:\n%s\nstderr:\n%s", args, port,
				s.cmd.ProcessState, s.out.String(), s.errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("udpong server %v: nothing bound UDP port %d after a minute", args, port)
		}
	}
}

// stop kills the server and waits for it; its output is complete afterwards.
func (s *udpongServer) stop() {
	s.cmd.Process.Kill()
	<-s.exited
}

// cUdpong runs rdma-core's udpong client (from root when not ""), killed after 3 minutes.
func cUdpong(root string, args []string) ppResult {
	if root == "" {
		return cPP(udpongTool, args)
	}
	return cPPIn(root)(udpongTool, args)
}

// TestLabUdpongDatagramRsockets is the evidence for refusing datagram rsockets: rdma-core's own udpong fails
// between two C peers on the lab's RoCE device — with the host's rdma-core 44 and with sid's 65 — as
// "rconnect: No such file or directory" (librdmacm's UD QP address handle has no GRH; the kernel refuses it,
// and librdmacm's clean-up overwrites the EINVAL), and goverbs' udpong refuses in both roles with
// EOPNOTSUPP (rsocket.ErrDatagram) instead of failing late or, as the C server does, waiting for ever.
func TestLabUdpongDatagramRsockets(t *testing.T) {
	labtest.Require(t)
	port := interop.Port(870)
	for _, era := range []string{"", "sid"} {
		name := map[string]string{"": "host", "sid": "sid"}[era]
		t.Run("C-C/"+name, func(t *testing.T) {
			root := ""
			if era != "" {
				labtest.RequireRoot(t)
				root = peerRoot(t, era)
			}
			port++
			p := interop.Itoa(port)
			srv := startUdpong(t, "/usr/bin/udpong", root, port, []string{"-b", labIP, "-p", p})
			c := cUdpong(root, []string{"-s", labIP, "-p", p, "-C", "10"})
			if c.rc != 255 || c.out != udpongHeader || c.err != "rconnect: No such file or directory\n" {
				t.Errorf("C udpong client against a C server: exit %d\nstdout:\n%s\nstderr:\n%s\n(librdmacm's datagram rsockets fail on RoCE: has that changed?)",
					c.rc, c.out, c.err)
			}
			srv.stop()
			if srv.errOut.Len() != 0 {
				t.Errorf("C udpong server stderr: %s", srv.errOut.String())
			}
		})
	}
	t.Run("Go", func(t *testing.T) {
		c := goPP(udpongTool, []string{"-s", labIP, "-p", interop.Itoa(port + 1), "-C", "10"})
		if c.rc != 255 || c.out != udpongHeader || c.err != "rconnect: Operation not supported\n" {
			t.Errorf("goverbs udpong client: exit %d\nstdout:\n%s\nstderr:\n%s", c.rc, c.out, c.err)
		}
		s := goPP(udpongTool, []string{"-b", labIP, "-p", interop.Itoa(port + 1)})
		if s.rc != 255 || s.out != "" || s.err != "rbind: Operation not supported\n" {
			t.Errorf("goverbs udpong server: exit %d\nstdout:\n%s\nstderr:\n%s", s.rc, s.out, s.err)
		}
	})
}

var udpongRow = regexp.MustCompile(`^custom    (\S+ *){3} +\d+\.\d\ds +\d+\.\d\d +\d+\.\d\d\n$`)

// TestLabUdpongSocketsInterop: udpong -T s (kernel UDP sockets, on the lab's RDMA netdev address) between
// goverbs and rdma-core, both ways: the client prints the header and one custom row with the transfers of the
// C tool (the server's count, or twice the echoes), and goverbs' server logs the client.
//
// Echoes (-T e) run with goverbs' client only. The C client waits a millisecond for each echo and receives
// into the message it then sends again, so an echo later than that (a loaded host: it happened in the clean
// clone's run beside the unit tests) makes it resend a stale message whose answers never match, for ever;
// goverbs' client drops late answers (rstream.udpong.sendRecv). A bandwidth run ends after one exchange that
// matches, which a late answer cannot upset.
func TestLabUdpongSocketsInterop(t *testing.T) {
	labtest.Require(t)
	port := interop.Port(880)
	bw, echo := []string{"-S", "1000", "-C", "200"}, []string{"-T", "e", "-S", "64", "-C", "100"}
	for _, tc := range []struct {
		extra    []string
		goServer bool
	}{{bw, false}, {bw, true}, {echo, false}} {
		extra, goServer := tc.extra, tc.goServer
		port++
		name := strings.Join(extra, "") + map[bool]string{false: "_Cserver", true: "_Goserver"}[goServer]
		t.Run(name, func(t *testing.T) {
			p := interop.Itoa(port)
			path := "/usr/bin/udpong"
			if goServer {
				path = interop.Binary(t)
			}
			srv := startUdpong(t, path, "", port, []string{"-T", "s", "-b", labIP, "-p", p})
			args := append([]string{"-T", "s", "-s", labIP, "-p", p}, extra...)
			var c ppResult
			if goServer {
				c = cUdpong("", args)
			} else {
				c = goPP(udpongTool, args)
			}
			srv.stop()
			if c.rc != 0 || c.err != "" || !strings.HasPrefix(c.out, udpongHeader) ||
				!udpongRow.MatchString(strings.TrimPrefix(c.out, udpongHeader)) {
				t.Fatalf("client %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, c.rc, c.out, c.err)
			}
			// Echoes are counted by the client (twice the count); data messages by the server, and UDP may
			// lose some under load, so only the echo rows are exact.
			fields := strings.Fields(strings.TrimPrefix(c.out, udpongHeader))
			if extra[0] == "-T" && (fields[1] != "64" || fields[2] != "200" || fields[3] != "12k") {
				t.Errorf("echo row %q: want 64 bytes, 200 transfers, 12k in all", fields)
			}
			if goServer && srv.out.String() != "client login from "+labIP+"\n" {
				t.Errorf("goverbs server stdout %q, want the client's login", srv.out.String())
			}
			if srv.errOut.Len() != 0 {
				t.Errorf("server stderr: %s", srv.errOut.String())
			}
			t.Logf("client %v:\n%s", args, c.out)
		})
	}
}
