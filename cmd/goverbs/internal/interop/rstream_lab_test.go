package interop_test

import (
	"github.com/goverbs/goverbs/test/interop"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/rstream"
	"github.com/goverbs/goverbs/test/labtest"
)

var rstreamTool = ppTool{"rstream", rstream.Main}

const rstreamHeader = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n"

var rstreamRow = regexp.MustCompile(`^custom    (\S+ *){4} +\d+\.\d\ds +\d+\.\d\d +\d+\.\d\d$`)

// keepaliveLine is what rstream -k prints each time it sets the option (client: once; server: on the
// listening socket, then on the accepted one).
var keepaliveLine = regexp.MustCompile(`^(Keepalive: ON|  time: \d+)$`)

// pairStream runs tool's server (-b) and client (-s) with extra, one goverbs' (in-process) and one rdma-core's
// (killed after 3 minutes: C riostream spins for ever on a lost peer), and checks both exit 0 with nothing on
// stderr and print the header, the keepalive lines of -k, and the same custom row (up to the timings).
func pairStream(t *testing.T, tool ppTool, port int, extra []string, goServer bool) {
	t.Helper()
	pairStreamWith(t, cPP, tool, port, extra, goServer)
}

// pairStreamWith is pairStream with cRun running rdma-core's side (cPPIn: another release's).
func pairStreamWith(t *testing.T, cRun func(ppTool, []string) ppResult, tool ppTool, port int, extra []string, goServer bool) {
	t.Helper()
	sArgs := append([]string{"-b", labIP, "-p", interop.Itoa(port)}, extra...)
	cArgs := append([]string{"-s", labIP, "-p", interop.Itoa(port)}, extra...)
	keepalive := slices.Contains(extra, "-k")
	s, c, sName, cName := cmPair(t, cRun, tool, port, sArgs, cArgs, goServer, false, 3*time.Minute)
	var rows []string
	for _, r := range []struct {
		name   string
		res    ppResult
		server bool
	}{{cName, c, false}, {sName, s, true}} {
		if !strings.HasPrefix(r.res.out, rstreamHeader) {
			t.Errorf("%s stdout lacks the header:\n%s", r.name, r.res.out)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.res.out, rstreamHeader), "\n"), "\n")
		ka := 0
		for len(lines) > 1 && keepaliveLine.MatchString(lines[0]) {
			ka++
			lines = lines[1:]
		}
		if want := map[bool]int{false: 0, true: map[bool]int{false: 2, true: 4}[r.server]}[keepalive]; ka != want {
			t.Errorf("%s printed %d keepalive lines, want %d:\n%s", r.name, ka, want, r.res.out)
		}
		row := strings.Join(lines, "\n")
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

// TestLabRstreamInterop: rstream between goverbs and rdma-core, both ways, with -T v (the receivers check every
// byte).
func TestLabRstreamInterop(t *testing.T) {
	labtest.Require(t)
	streamMatrix(t, rstreamTool, 700, []string{"-T", "v"}, [][]string{
		{"-S", "1000", "-C", "50"},
		{"-S", "64", "-C", "500", "-T", "b"},
		{"-S", "65536", "-C", "20", "-I", "2", "-B", "131072"},
		{"-S", "1000000", "-C", "3", "-i", "0"},
	})
}

// TestLabRstreamKeepaliveInterop: rstream -k 1 (keepalive probes every second on both sides, runs of a few
// seconds so that probes cross while data flows) between goverbs and rdma-core, both ways.
func TestLabRstreamKeepaliveInterop(t *testing.T) {
	labtest.Require(t)
	streamMatrix(t, rstreamTool, 720, nil, [][]string{
		{"-k", "1", "-S", "1000000", "-C", "15", "-T", "v"},
		{"-k", "2", "-S", "64", "-C", "2000", "-I", "2"},
	})
}

var riostreamTool = ppTool{"riostream", rstream.MainRiostream}

// TestLabRiostreamInterop: riostream between goverbs and rdma-core, both ways: each side riomaps its buffer
// into the other's one-entry iomap table and the data goes by riowrite (plain RDMA WRITEs) into it, the
// receiver polling the last byte; with -T v both check the pattern of every answer.
func TestLabRiostreamInterop(t *testing.T) {
	labtest.Require(t)
	streamMatrix(t, riostreamTool, 740, nil, [][]string{
		{"-S", "4096", "-C", "10"},
		{"-S", "1000", "-C", "50", "-T", "v"},
		{"-S", "64", "-C", "100", "-I", "20", "-T", "v"},
		{"-S", "65536", "-C", "20", "-I", "3", "-B", "131072", "-T", "v"},
		{"-S", "1000000", "-C", "3", "-i", "0", "-T", "v"},
	})
}

// streamMatrix runs pairStream of tool with opts and each extra, a C and a Go server each, on ports after
// portBase (interop.Port), in subtests named by extra and the server's side.
func streamMatrix(t *testing.T, tool ppTool, portBase int, opts []string, extras [][]string) {
	port := interop.Port(portBase)
	for _, extra := range extras {
		for _, goServer := range []bool{false, true} {
			port++
			name := strings.Join(extra, "") + map[bool]string{false: "_Cserver", true: "_Goserver"}[goServer]
			t.Run(name, func(t *testing.T) { pairStream(t, tool, port, append(slices.Clone(opts), extra...), goServer) })
		}
	}
}
