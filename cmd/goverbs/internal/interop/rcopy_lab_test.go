package interop_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/labtest"
)

// rcopyServer is a running rcopy server (it serves for ever, as the C tool does).
type rcopyServer struct {
	name     string
	cmd      *exec.Cmd
	out, err labtest.SyncBuffer
	exited   chan struct{}
}

// startRcopyServer starts argv (rcopy -p port) and waits until its rdma_cm id listens; the server is killed
// at the end of the test.
func startRcopyServer(t *testing.T, name string, port int, argv ...string) *rcopyServer {
	t.Helper()
	s := &rcopyServer{name: name, exited: make(chan struct{})}
	s.cmd = exec.Command(argv[0], append(argv[1:], "-p", interop.Itoa(port))...)
	s.cmd.Args[0] = filepath.Base(argv[0])
	s.cmd.Dir = t.TempDir()
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.err
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.stop(t, port) })
	if err := interop.WaitCMListening(labtest.Device(), uint16(port), 60*time.Second); err != nil {
		s.stop(t, port)
		t.Fatalf("%s: %v\nstdout %q\nstderr %q", name, err, s.out.String(), s.err.String())
	}
	return s
}

// stop kills the server and checks that its rdma_cm ids are gone with it.
func (s *rcopyServer) stop(t *testing.T, port int) {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.exited
	if ids := cmIDsOnPort(t, uint16(port)); ids != "" {
		t.Errorf("%s killed, rdma_cm ids left on port %d: %s", s.name, port, ids)
	}
}

// cmIDsOnPort lists the rdma_cm ids (any state) with port as source or destination, waiting up to 10 s for
// the kernel to drop those of an exited process.
func cmIDsOnPort(t *testing.T, port uint16) string {
	c, err := netlinkrdma.Dial()
	if err != nil {
		t.Error(err)
		return ""
	}
	defer c.Close()
	d, err := c.Device(labtest.Device())
	if err != nil {
		t.Error(err)
		return ""
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, err := c.CMIDs(netlinkrdma.ResQuery{DevIndex: d.Index})
		if err != nil {
			t.Error(err)
			return ""
		}
		var left []string
		for _, id := range ids {
			if id.SrcAddr.Port() == port || id.DstAddr.Port() == port {
				left = append(left, fmt.Sprintf("%s %v->%v", id.State, id.SrcAddr, id.DstAddr))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, ", ")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitOutput waits until the server's stdout is want (it prints "waiting for connection..." once it is
// ready for the next client).
func (s *rcopyServer) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.out.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s stdout:\n%q\nwant\n%q\nstderr %q", s.name, s.out.String(), want, s.err.String())
		}
		select {
		case <-s.exited:
			t.Fatalf("%s exited: stdout %q stderr %q", s.name, s.out.String(), s.err.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func runRcopy(argv ...string) ppResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Args[0] = filepath.Base(argv[0]) // as a shell runs it: the usage text shows argv[0]
	return runC(cmd)
}

var rcopyPerf = regexp.MustCompile(`^opening\.\.\.transferring\.\.\.closing\.\.\.done\n(\d+) bytes in \d+\.\d\d seconds = (\d+\.\d\d|inf) Gb/sec\n$`)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// rcopyCase is one client run against a running server: what the client prints and returns, and what the
// server prints for the connection (after "waiting for connection...").
type rcopyCase struct {
	name   string
	size   int    // source size (-1: no source file)
	dst    string // destination path; "" = a fresh file in the test's directory
	rc     int
	client string // expected client stdout; "" = the success lines (rcopyPerf)
	server string // expected server output for the connection; "" = the success lines
}

func rcopyCases() []rcopyCase {
	return []rcopyCase{
		{name: "1B", size: 1},
		{name: "5KiB+3", size: 5<<10 + 3},
		{name: "3MiB+17", size: 3<<20 + 17}, // not a multiple of any buffer or chunk size
		{name: "128KiB", size: 128 << 10},   // exactly the receive buffer
		// rcopy maps the source: mmap of length 0 fails with EINVAL before any message is sent.
		{name: "empty", size: 0, rc: 22, client: "opening...", server: "client: " + labIP + "\n"},
		{name: "missing", size: -1, rc: 255, client: "opening...", server: "client: " + labIP + "\n"},
		{name: "baddst", size: 6, dst: "/nonexistent-rcopy-dir/x", rc: 2, client: "opening...",
			server: "client: " + labIP + "\nopening: /nonexistent-rcopy-dir/x, unable to open destination file\n"},
		{name: "6B", size: 6}, // the server is still usable after the failures
	}
}

// pairRcopy runs every case with client argv against server argv on port.
func pairRcopy(t *testing.T, port int, sName string, server []string, cName string, client []string) {
	srv := startRcopyServer(t, sName, port, server...)
	want := "waiting for connection..."
	srv.waitOutput(t, want)
	dir := t.TempDir()
	for _, c := range rcopyCases() {
		src := filepath.Join(dir, c.name+".src")
		if c.size >= 0 {
			data := make([]byte, c.size)
			rand.Read(data)
			if err := os.WriteFile(src, data, 0o640); err != nil {
				t.Fatal(err)
			}
		}
		dst := c.dst
		if dst == "" {
			dst = filepath.Join(dir, c.name+".dst")
		}
		r := runRcopy(append(append([]string{}, client...), src, labIP+":"+dst, "-p", interop.Itoa(port))...)
		if c.client == "" {
			m := rcopyPerf.FindStringSubmatch(r.out)
			if r.rc != 0 || m == nil || m[1] != interop.Itoa(c.size) || r.err != "" {
				t.Fatalf("%s: %s: rc %d\nstdout %q\nstderr %q\n%s: %q %q", c.name, cName, r.rc, r.out, r.err, sName, srv.out.String(), srv.err.String())
			}
			if fileSum(t, src) != fileSum(t, dst) {
				t.Errorf("%s: %s -> %s: destination differs from source (SHA-256)", c.name, cName, sName)
			}
			if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o640&^0o022 && st.Mode().Perm() != 0o640 {
				t.Errorf("%s: destination mode %v (%v)", c.name, st.Mode(), err)
			}
			want += "client: " + labIP + "\nopening: " + dst + ", transferring..." + interop.Itoa(c.size) + " bytes...closing...done\n"
		} else {
			if r.rc != c.rc || r.out != c.client || r.err != "" {
				t.Errorf("%s: %s: rc %d, stdout %q, stderr %q; want %d, %q, \"\"", c.name, cName, r.rc, r.out, r.err, c.rc, c.client)
			}
			if c.dst == "" {
				if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: destination exists (%v)", c.name, err)
				}
			}
			want += c.server
		}
		want += "waiting for connection..."
		srv.waitOutput(t, want)
		t.Logf("%s: %s: rc %d %q", c.name, cName, r.rc, r.out)
	}
	if e := srv.err.String(); e != "" {
		t.Errorf("%s stderr: %q", sName, e)
	}
	srv.stop(t, port)
	t.Logf("%s stdout:\n%s", sName, srv.out.String())
}

// TestLabRcopyInterop copies files of several sizes between goverbs' rcopy (the multi-call binary) and
// rdmacm-utils' rcopy in both roles: the copies are byte-identical, both sides print what the C tool prints,
// and the failures (empty source, missing source, bad destination) give the C tool's output and status.
func TestLabRcopyInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rcopy", "rdmacm-utils")
	goRcopy := interop.Alias(t, "rcopy")
	t.Run("Cserver_Goclient", func(t *testing.T) {
		pairRcopy(t, interop.Port(900), "C server", []string{"rcopy"}, "Go client", []string{goRcopy})
	})
	t.Run("Goserver_Cclient", func(t *testing.T) {
		pairRcopy(t, interop.Port(901), "Go server", []string{interop.Binary(t), "rcopy"}, "C client", []string{"rcopy"})
	})
}

// TestLabRcopyErrors runs goverbs' and rdmacm-utils' rcopy with the same bad input and requires the same
// stdout, stderr and exit status: wrong usage, no listener (refused), no route, 127.0.0.1 (no RDMA device),
// unknown host, bad port, and a second server on a port already served.
func TestLabRcopyErrors(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rcopy", "rdmacm-utils")
	goRcopy := interop.Alias(t, "rcopy")
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	busy := interop.Port(902)
	startRcopyServer(t, "C server", busy, "rcopy")
	for _, args := range [][]string{
		{"-x"},
		{src},
		{src, labIP, "-q"},
		{src, labIP, "-p", interop.Itoa(interop.Port(903))}, // nothing listens: rconnect failed: Connection refused
		{src, "192.0.2.1"}, // no route: Network is unreachable
		{src, "127.0.0.1"}, // no RDMA device on lo: No such device
		{src, "no-such-host.invalid"},
		{src, labIP, "-p", "no-such-service"},
		{"-p", "no-such-service"},
		{"-p", interop.Itoa(busy)}, // rbind failed: Cannot assign requested address
	} {
		c := runRcopy(append([]string{"rcopy"}, args...)...)
		g := runRcopy(append([]string{goRcopy}, args...)...)
		t.Logf("rcopy %q: rc %d stdout %q stderr %q", args, c.rc, c.out, c.err)
		if c != g {
			t.Errorf("rcopy %q:\nC  rc %d stdout %q stderr %q\nGo rc %d stdout %q stderr %q", args, c.rc, c.out, c.err, g.rc, g.out, g.err)
		}
	}
}
