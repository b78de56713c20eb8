package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmtime"
	"github.com/goverbs/goverbs/test/labtest"
)

var cmtimeTool = ppTool{"cmtime", cmtime.Main}

var cmtimeRow = regexp.MustCompile(`^[a-z ]{13}: ( *-?\d+\.\d\d){4}$`)

// cmtimeShape is the client's output with the table's numbers blanked: the lines and their layout are the
// C tool's, the timings differ by nature.
func cmtimeShape(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if cmtimeRow.MatchString(l) {
			lines[i] = l[:13] + ": N N N N"
		}
	}
	return strings.Join(lines, "\n")
}

// TestLabCmtimeInterop runs a cmtime client of one implementation against a server of the other (the server
// never exits: the C one is killed, goverbs' stopped through its context) and compares the client's output
// shape with rdmacm-utils' client against rdmacm-utils' server.
func TestLabCmtimeInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "cmtime", "rdmacm-utils")
	port := interop.Port(840)
	for _, extra := range [][]string{{"-c", "10"}, {"-c", "4", "-b", labIP}, {"-c", "3", "-r", "5", "-t", "1000"}} {
		outs := map[string]ppResult{}
		for _, pair := range [][2]string{{"c", "c"}, {"go", "c"}, {"c", "go"}} {
			port++
			p := port
			name := fmt.Sprintf("%v/%s-server/%s-client", extra, pair[0], pair[1])
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				sArgs := []string{"-p", interop.Itoa(p)}
				var srvDone chan ppResult = make(chan ppResult, 1)
				if pair[0] == "go" {
					go func() {
						var o, e bytes.Buffer
						rc := cmtime.MainContext(ctx, "cmtime", sArgs, &o, &e)
						srvDone <- ppResult{rc, o.String(), e.String()}
					}()
				} else {
					cmd := exec.CommandContext(ctx, "cmtime", sArgs...)
					var o, e bytes.Buffer
					cmd.Stdout, cmd.Stderr = &o, &e
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					go func() { cmd.Wait(); srvDone <- ppResult{0, o.String(), e.String()} }()
				}
				if err := interop.WaitCMListening(labtest.Device(), uint16(p), 60*time.Second); err != nil {
					t.Fatal(err)
				}
				cArgs := append([]string{"-s", labIP, "-p", interop.Itoa(p)}, extra...)
				var c ppResult
				if pair[1] == "go" {
					c = goPP(cmtimeTool, cArgs)
				} else {
					c = cPP(cmtimeTool, cArgs)
					// rdmacm-utils 44's cmtime destroys its event channel at exit while its event thread may
					// still wait in rdma_get_cm_event (the thread is never joined): that thread then prints
					// this line, the status stays 0. Seen once on 7.3 in CI; not the server's doing.
					c.err = strings.Replace(c.err, cmtimeTeardownRace, "", 1)
				}
				cancel()
				s := <-srvDone
				outs[pair[0]+"-"+pair[1]] = c
				if c.rc != 0 || c.err != "" || s.err != "" {
					t.Fatalf("client rc %d\n%s%s\nserver:\n%s%s", c.rc, c.out, c.err, s.out, s.err)
				}
				ref, ok := outs["c-c"]
				if !ok {
					t.Fatal("no C reference run")
				}
				if cmtimeShape(c.out) != cmtimeShape(ref.out) {
					t.Fatalf("client output differs in shape from C's\nthis run:\n%s\nC against C:\n%s", c.out, ref.out)
				}
				if !strings.Contains(c.out, "connect      :") {
					t.Fatalf("no connect row:\n%s", c.out)
				}
			})
		}
	}
}

// cmtimeTeardownRace is what rdmacm-utils 44's cmtime client may print as it exits (see TestLabCmtimeInterop).
const cmtimeTeardownRace = "failure in rdma_get_cm_event in process_server_events: Bad file descriptor\n"

// Runs that end at once: same stdout, stderr and status as rdmacm-utils' cmtime.
// cmtimeEventThreadRace is what C cmtime's unjoined event thread prints when main has destroyed the channel.
const cmtimeEventThreadRace = "failure in rdma_get_cm_event in process_server_events: Bad file descriptor\n"

func TestLabCmtimeErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "cmtime", "rdmacm-utils")
	for _, args := range [][]string{
		{"-x"},
		{"-s", labIP, "-p", interop.Itoa(interop.Port(850)), "-c", "2"}, // no listener: REJECTED 8 per connection
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			c := cPP(cmtimeTool, args)
			g := goPP(cmtimeTool, args)
			// C cmtime's own race (rdmacm-utils 44 cmtime.c): the client starts process_events, which
			// loops in rdma_get_cm_event, and never joins or cancels it; main destroys the channel at
			// the end, so the thread, when it runs before the process exits, fails with EBADF and
			// perrors this line. Whether it prints is scheduling; goverbs' cmtime has no such thread.
			if strings.Contains(c.err, cmtimeEventThreadRace) {
				c.err = strings.Replace(c.err, cmtimeEventThreadRace, "", 1)
				labtest.Note(t, "C cmtime's event thread met the destroyed channel (its race, cmtime.c): its line dropped before comparing")
			}
			if c.rc != g.rc || cmtimeShape(c.out) != cmtimeShape(g.out) || c.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", c.rc, c.out, c.err, g.rc, g.out, g.err)
			}
		})
	}
}
