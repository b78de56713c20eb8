package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmtime"
	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/labtest"
)

// cmtime65Row is a row of rdma-core 65's cmtime table: the step, then six numbers.
var cmtime65Row = regexp.MustCompile(`^([a-z ]{13})  ( *\d+ ){5} *\d+$`)

// cmtime65Shape is a 65 cmtime's output with the table's numbers blanked.
func cmtime65Shape(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if m := cmtime65Row.FindStringSubmatch(l); m != nil {
			lines[i] = m[1] + "  N N N N N N"
		}
	}
	return strings.Join(lines, "\n")
}

// cmtime65Side starts one rdma-core 65 cmtime instance: goverbs' in-process, or sid's C tool from its root by
// chroot; the result comes on the channel. Both are stopped with ctx.
func cmtime65Side(ctx context.Context, impl, root string, args []string) <-chan ppResult {
	done := make(chan ppResult, 1)
	if impl == "go" {
		go func() {
			var o, e bytes.Buffer
			rc := cmtime.MainContext(ctx, "cmtime", args, &o, &e)
			done <- ppResult{rc, o.String(), e.String()}
		}()
		return done
	}
	cmd := exec.CommandContext(ctx, "/usr/bin/cmtime", args...)
	cmd.Args[0] = "cmtime"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	go func() { done <- runC(cmd) }()
	return done
}

// TestLabCmtime65Interop runs rdma-core 65's cmtime (-C controller mode) with goverbs' and Debian sid's C tool
// (rdmacm-utils 65) as listener and client, each pairing with either side as the OOB controller: both must
// finish with status 0 and nothing on stderr, and each side's output, numbers blanked, must be that of the C
// tool in the same role against the C tool (the c/c runs, made first, are the control).
func TestLabCmtime65Interop(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	root := peerRoot(t, "sid")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/cmtime")); err != nil {
		t.Fatalf("sid's root has no cmtime: %v", err)
	}
	port := interop.Port(860)
	mimic := []string{"-c", "5", "-m", "10"}
	for _, tc := range []struct {
		ctrl  string
		extra []string
	}{{"server", mimic}, {"client", mimic}, {"server", []string{"-c", "3", "-n", "2"}}} {
		ctrl := tc.ctrl
		refs := map[string]string{}
		for _, pair := range [][2]string{{"c", "c"}, {"go", "c"}, {"c", "go"}, {"go", "go"}} {
			port++
			p := port
			name := fmt.Sprintf("controller-%s/%s/%s-server/%s-client", ctrl, strings.Join(tc.extra, "_"), pair[0], pair[1])
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				common := append([]string{"-C", labIP, "-b", labIP, "-p", interop.Itoa(p)}, tc.extra...)
				// Both peers run on one host (one CA): the IB CM rejects (REJ reason 10, stale connection) a
				// REQ or REP whose QP number and CA GUID another connection of the host already has, so
				// the runs without QPs need other -q bases on the two sides (the C tool fails alike with
				// equal ones).
				sArgs := append([]string{"-L", "-q", "2000"}, common...)
				common = append(common, "-q", "1000")
				first, second := pair[0], pair[1]
				firstArgs, secondArgs := sArgs, common
				if ctrl == "client" {
					first, second, firstArgs, secondArgs = pair[1], pair[0], common, sArgs
				}
				// The controller must listen before the other peer starts: a peer that finds the OOB
				// port free would take the controller's role itself.
				fDone := cmtime65Side(ctx, first, root, firstArgs)
				exited := make(chan struct{})
				var fRes ppResult
				go func() { fRes = <-fDone; close(exited) }()
				if err := interop.WaitListeningIn(os.Getpid(), p, 60*time.Second, exited); err != nil {
					cancel()
					<-exited
					t.Fatalf("%v\ncontroller rc %d\n%s%s", err, fRes.rc, fRes.out, fRes.err)
				}
				sRes := <-cmtime65Side(ctx, second, root, secondArgs)
				<-exited
				srv, cli := fRes, sRes
				if ctrl == "client" {
					srv, cli = sRes, fRes
				}
				for _, s := range []struct {
					role string
					r    ppResult
				}{{"server", srv}, {"client", cli}} {
					if s.r.rc != 0 || s.r.err != "" {
						t.Fatalf("%s rc %d\nstdout:\n%s\nstderr:\n%s\nserver:\n%s%s\nclient:\n%s%s", s.role, s.r.rc,
							s.r.out, s.r.err, srv.out, srv.err, cli.out, cli.err)
					}
				}
				want := []string{"Accept (5) simulated QPs test (delay 10 us)\n", "Connect (5) simulated QPs test (delay 10 us)\n",
					"Connect (5) test - no QPs\n"}
				if tc.extra[1] == "3" {
					want = []string{"Accept (3) QPs test\n", "Connect (3) QPs test\n", "Connect (3) test - no QPs\n"}
				}
				if !strings.Contains(srv.out, want[0]) || !strings.Contains(cli.out, want[1]) || !strings.Contains(cli.out, want[2]) {
					t.Fatalf("missing test lines\nserver:\n%s\nclient:\n%s", srv.out, cli.out)
				}
				if pair == [2]string{"c", "c"} {
					refs["server"], refs["client"] = srv.out, cli.out
					return
				}
				for role, out := range map[string]string{"server": srv.out, "client": cli.out} {
					ref, ok := refs[role]
					if !ok {
						t.Fatal("no C reference run")
					}
					if cmtime65Shape(out) != cmtime65Shape(ref) {
						t.Errorf("%s output differs in shape from C's\nthis run:\n%s\nC against C:\n%s", role, out, ref)
					}
				}
			})
		}
	}
}

// TestLabCmtime65ErrorsMatchC: runs that end before the out-of-band setup print what sid's cmtime prints, with its
// status: usage texts (65's whenever an option only 65 has is given), getopt's messages, -B's lookups.
func TestLabCmtime65ErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	root := peerRoot(t, "sid")
	for _, args := range [][]string{
		{"-C", labIP},
		{"-C", labIP, "-h"},
		{"-C", labIP, "-b", labIP, "-S"},
		{"-C", labIP, "-b", labIP, "-P", "1"},
		{"-C", labIP, "-b", labIP, "-b", labIP},
		{"-C", labIP, "-b", labIP, "-P", "3", "-S", "x"},
		{"-C", labIP, "-B", "nosuchif0"},
		{"-C", labIP, "-B", "veth0", "-B", "veth0"},
		{"-b", labIP, "-L"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			c := cPPIn(root)(cmtimeTool, args)
			g := goPP(cmtimeTool, args)
			if c.rc != g.rc || c.out != g.out || c.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", c.rc, c.out, c.err, g.rc, g.out, g.err)
			}
		})
	}
}
