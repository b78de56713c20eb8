package interop

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/tools/rstream"
	"github.com/goverbs/goverbs/test/labtest"
)

var rstreamTool = ppTool{"rstream", rstream.Main}

const rstreamHeader = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n"

var rstreamRow = regexp.MustCompile(`^custom    (\S+ *){4} +\d+\.\d\ds +\d+\.\d\d +\d+\.\d\d$`)

// pairRstream runs an rstream server and client, one goverbs' (in-process) and one rdma-core's, with -T v (the
// receivers check every byte), and checks both exit 0 and print the header and the same custom row (up to the
// timings).
func pairRstream(t *testing.T, port int, extra []string, goServer bool) {
	t.Helper()
	sArgs := append([]string{"-b", labIP, "-p", Itoa(port), "-T", "v"}, extra...)
	cArgs := append([]string{"-s", labIP, "-p", Itoa(port), "-T", "v"}, extra...)
	serve, connect := cPP, goPP
	sName, cName := "C server", "Go client"
	if goServer {
		serve, connect = goPP, cPP
		sName, cName = "Go server", "C client"
	}
	done := make(chan ppResult, 1)
	go func() { done <- serve(rstreamTool, sArgs) }()
	if err := WaitCMListening(labtest.Device(), uint16(port), 60*time.Second); err != nil {
		t.Fatalf("%s: %v", sName, err)
	}
	c := connect(rstreamTool, cArgs)
	var s ppResult
	select {
	case s = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit after the client (%+v)", sName, c)
	}
	if c.rc != 0 || s.rc != 0 {
		t.Fatalf("%s: rc %d\n%s%s\n%s: rc %d\n%s%s", cName, c.rc, c.out, c.err, sName, s.rc, s.out, s.err)
	}
	var rows []string
	for _, r := range []struct {
		name string
		res  ppResult
	}{{cName, c}, {sName, s}} {
		if !strings.HasPrefix(r.res.out, rstreamHeader) {
			t.Errorf("%s stdout lacks the header:\n%s", r.name, r.res.out)
			continue
		}
		row := strings.TrimSuffix(strings.TrimPrefix(r.res.out, rstreamHeader), "\n")
		if !rstreamRow.MatchString(row) {
			t.Errorf("%s row %q", r.name, row)
			continue
		}
		rows = append(rows, row[:42])
		if r.res.err != "" {
			t.Errorf("%s stderr: %s", r.name, r.res.err)
		}
	}
	if len(rows) == 2 && rows[0] != rows[1] {
		t.Errorf("rows differ: %q vs %q", rows[0], rows[1])
	}
	t.Logf("%s %v:\n%s%s %v:\n%s", cName, cArgs, c.out, sName, sArgs, s.out)
}

func TestLabRstreamInterop(t *testing.T) {
	labtest.Require(t)
	port := Port(700)
	for _, extra := range [][]string{
		{"-S", "1000", "-C", "50"},
		{"-S", "64", "-C", "500", "-T", "b"},
		{"-S", "65536", "-C", "20", "-I", "2", "-B", "131072"},
		{"-S", "1000000", "-C", "3", "-i", "0"},
	} {
		for _, goServer := range []bool{false, true} {
			port++
			name := strings.Join(extra, "") + map[bool]string{false: "_Cserver", true: "_Goserver"}[goServer]
			t.Run(name, func(t *testing.T) { pairRstream(t, port, extra, goServer) })
		}
	}
}
