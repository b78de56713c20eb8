package interop

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/tools/pingpong"
	"github.com/goverbs/goverbs/test/labtest"
)

// The lines ibv_rc_pingpong prints on a successful run, in order.
var ppLines = []*regexp.Regexp{
	regexp.MustCompile(`^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-f:.]+$`),
	regexp.MustCompile(`^  remote address: LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-f:.]+$`),
	regexp.MustCompile(`^\d+ bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec$`),
	regexp.MustCompile(`^\d+ iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter$`),
}

func checkPPOutput(t *testing.T, who, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(ppLines) {
		t.Fatalf("%s printed %d lines, want %d:\n%s", who, len(lines), len(ppLines), out)
	}
	for i, re := range ppLines {
		if !re.MatchString(lines[i]) {
			t.Errorf("%s line %d %q does not match %v", who, i+1, lines[i], re)
		}
	}
}

// goPP runs the goverbs pingpong in-process.
func goPP(args []string) (int, string, string) {
	var o, e bytes.Buffer
	rc := pingpong.RunRC("ibv_rc_pingpong", args, &o, &e)
	return rc, o.String(), e.String()
}

func TestRCPingpongInterop(t *testing.T) {
	labtest.Require(t)
	if _, err := exec.LookPath("ibv_rc_pingpong"); err != nil {
		t.Fatalf("rdma-core's ibv_rc_pingpong is needed (apt-get install ibverbs-utils): %v", err)
	}
	dev := labtest.Device()
	port := Port(1)
	for _, events := range []bool{false, true} {
		for _, size := range []int{1, 4096, 65536} {
			for _, goServer := range []bool{true, false} {
				port++
				name := fmt.Sprintf("size=%d/events=%v/goServer=%v", size, events, goServer)
				t.Run(name, func(t *testing.T) {
					args := []string{"-d", dev, "-g", "1", "-s", Itoa(size), "-n", "10", "-p", Itoa(port)}
					if events {
						args = append(args, "-e")
					}
					clientArgs := append(append([]string{}, args...), "127.0.0.1")
					if goServer {
						type res struct {
							rc       int
							out, err string
						}
						done := make(chan res, 1)
						go func() {
							rc, o, e := goPP(args)
							done <- res{rc, o, e}
						}()
						if err := WaitListening(port, 60*time.Second); err != nil {
							t.Fatal(err)
						}
						c := exec.Command("ibv_rc_pingpong", clientArgs...)
						var co, ce bytes.Buffer
						c.Stdout, c.Stderr = &co, &ce
						cerr := c.Run()
						s := <-done
						if cerr != nil || s.rc != 0 {
							t.Fatalf("C client: %v\n%s%s\nGo server: rc %d\n%s%s", cerr, co.String(), ce.String(), s.rc, s.out, s.err)
						}
						checkPPOutput(t, "C client", co.String())
						checkPPOutput(t, "Go server", s.out)
						return
					}
					srv := exec.Command("ibv_rc_pingpong", args...)
					var so, se bytes.Buffer
					srv.Stdout, srv.Stderr = &so, &se
					if err := srv.Start(); err != nil {
						t.Fatal(err)
					}
					if err := WaitListening(port, 60*time.Second); err != nil {
						srv.Process.Kill()
						t.Fatal(err)
					}
					rc, o, e := goPP(clientArgs)
					serr := srv.Wait()
					if rc != 0 || serr != nil {
						t.Fatalf("Go client: rc %d\n%s%s\nC server: %v\n%s%s", rc, o, e, serr, so.String(), se.String())
					}
					checkPPOutput(t, "Go client", o)
					checkPPOutput(t, "C server", so.String())
				})
			}
		}
	}
}
