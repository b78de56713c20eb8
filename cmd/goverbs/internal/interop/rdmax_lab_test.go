package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/rdmax"
	"github.com/goverbs/goverbs/test/labtest"
)

var (
	rdmaXServerTool = ppTool{"rdma_xserver", rdmax.MainServer}
	rdmaXClientTool = ppTool{"rdma_xclient", rdmax.MainClient}
)

// TestLabRdmaXServerClientInterop pairs goverbs' rdma_xserver/rdma_xclient (RC) with rdmacm-utils' both ways.
func TestLabRdmaXServerClientInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rdma_xserver", "rdmacm-utils")
	port := interop.Port(820)
	for _, mode := range [][]string{nil, {"-c", "r"}} {
		for _, goServer := range []bool{false, true} {
			port++
			p := port
			t.Run(fmt.Sprintf("%v/goServer=%v", mode, goServer), func(t *testing.T) {
				serve, connect := cPP, goPP
				if goServer {
					// A C client the server has already answered can wait for ever (below): bounded tighter.
					serve, connect = goPP, func(tool ppTool, args []string) ppResult { return cPPTimeout(tool, args, 30*time.Second) }
				}
				var c, s ppResult
				for try := 1; ; try++ {
					done := make(chan ppResult, 1)
					go func() { done <- serve(rdmaXServerTool, append([]string{"-p", interop.Itoa(p)}, mode...)) }()
					if err := interop.WaitCMListening(labtest.Device(), uint16(p), 60*time.Second); err != nil {
						t.Fatal(err)
					}
					c = connect(rdmaXClientTool, append([]string{"-s", labIP, "-p", interop.Itoa(p)}, mode...))
					select {
					case s = <-done:
					case <-time.After(60 * time.Second):
						t.Fatalf("server did not exit after the client (%+v)", c)
					}
					// rdma_xserver disconnects as soon as its receive completes; rdma_xclient waits for its send's
					// completion (rdmacm-utils 44 rdma_xserver.c/rdma_xclient.c). rxe posts the receive completion
					// before it sends the ACK, and a server that moves its QP to ERR in between leaves the client's
					// SEND unacknowledged, retried for ever (retry count 7 is unlimited on rxe): seen on 7.3.4 once in
					// ten runs with goverbs' server and rdmacm-utils' client, a race of the tools' protocol.
					if goServer && try < 3 && c.rc == -1 && strings.Contains(c.err, "still running") &&
						s.rc == 0 && s.out == "rdma_xserver: start\nrdma_xserver: end 0\n" {
						labtest.Note(t, "the C client waited for ever for its send's ACK after the server had its message and disconnected (the tools' race), running the pair again")
						p += 1000 // a fresh port: the killed pair's rdma_cm id may linger
						continue
					}
					break
				}
				if c.rc != 0 || s.rc != 0 || c.out != "rdma_xclient: start\nrdma_xclient: end 0\n" ||
					s.out != "rdma_xserver: start\nrdma_xserver: end 0\n" || c.err != "" || s.err != "" {
					t.Fatalf("client rc %d %q %q\nserver rc %d %q %q", c.rc, c.out, c.err, s.rc, s.out, s.err)
				}
			})
		}
	}
}

// Early exits and failures, XRC included (rxe has none): byte-identical to rdmacm-utils'.
func TestLabRdmaXErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rdma_xclient", "rdmacm-utils")
	for _, c := range []struct {
		tool ppTool
		args []string
	}{
		{rdmaXClientTool, []string{"-x"}},
		{rdmaXClientTool, []string{"-c", "q"}},
		{rdmaXClientTool, []string{"-s", labIP, "-p", interop.Itoa(interop.Port(830))}}, // no listener
		{rdmaXClientTool, []string{}},                                                   // 127.0.0.1: no RDMA device
		{rdmaXClientTool, []string{"-s", labIP, "-p", interop.Itoa(interop.Port(831)), "-c", "x"}},
		{rdmaXServerTool, []string{"-s", labIP}},
	} {
		t.Run(fmt.Sprint(c.tool.ctool, c.args), func(t *testing.T) {
			cr := cPPTimeout(c.tool, c.args, 20*time.Second)
			g := goPP(c.tool, c.args)
			if cr.rc != g.rc || cr.out != g.out || cr.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", cr.rc, cr.out, cr.err, g.rc, g.out, g.err)
			}
		})
	}
}

// cPPTimeout is cPP with a deadline: a C tool still running then is killed and reported (rc -1).
func cPPTimeout(tool ppTool, args []string, d time.Duration) ppResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool.ctool, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		return ppResult{-1, o.String(), e.String() + fmt.Sprintf("(still running after %v, killed)", d)}
	}
	return exitResult(o.String(), e.String(), err)
}

// TestLabRdmaXServerXRCWaits: on rxe the C rdma_xserver -c x neither fails nor exits, it waits for a request
// (its client fails before connecting); goverbs' does the same. Both must still run after 3 s with nothing on
// stderr; then the C one is killed and ours stopped through its context.
func TestLabRdmaXServerXRCWaits(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rdma_xserver", "rdmacm-utils")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "rdma_xserver", "-p", interop.Itoa(interop.Port(833)), "-c", "x")
	var co, ce bytes.Buffer
	cmd.Stdout, cmd.Stderr = &co, &ce
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cDone := make(chan struct{})
	go func() { cmd.Wait(); close(cDone) }()
	var gOut, gErr bytes.Buffer
	gDone := make(chan int, 1)
	go func() {
		gDone <- rdmax.MainServerContext(ctx, "rdma_xserver", []string{"-p", interop.Itoa(interop.Port(834)), "-c", "x"}, &gOut, &gErr)
	}()
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	select {
	case <-cDone:
		t.Fatalf("C rdma_xserver -c x exited: %s%s", co.String(), ce.String())
	case rc := <-gDone:
		t.Fatalf("goverbs rdma_xserver -c x exited %d: %s%s", rc, gOut.String(), gErr.String())
	case <-deadline.C:
	}
	cancel()
	<-cDone
	if rc := <-gDone; rc != 0 || gOut.String() != "rdma_xserver: start\nrdma_xserver: end 0\n" || gErr.Len() != 0 {
		t.Fatalf("goverbs rdma_xserver -c x after stop: rc %d %q %q", rc, gOut.String(), gErr.String())
	}
}
