package rstream

import (
	"bytes"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{64, "64"}, {1000, "1000"}, {4096, "4k"}, {6144, "6k"}, {1536, "1.5k"}, {195 * 1024, "195k"}, {3276800, "3.1m"}, {8 << 20, "8m"}} {
		if got := sizeStr(c.n); got != c.want {
			t.Errorf("sizeStr(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		n    int64
		want string
	}{{1, "1"}, {999, "999"}, {1000, "1k"}, {100000, "100k"}, {2500000, "2m"}} {
		if got := cntStr(c.n); got != c.want {
			t.Errorf("cntStr(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestShowPerf checks a row against one printed by C rstream (rdma-cm.md §3.6 shape).
func TestShowPerf(t *testing.T) {
	var o bytes.Buffer
	s := &state{stdout: &o, testName: "custom", size: 1000, count: 10, iterations: 1}
	s.showPerf(28671e3) // 28.671 ms
	want := "custom    1000    10      1       19k         0.03s      0.01    1433.55\n"
	if o.String() != want {
		t.Errorf("got  %q\nwant %q", o.String(), want)
	}
}

func TestUsage(t *testing.T) {
	var o, e bytes.Buffer
	if rc := Main("rstream", []string{"-x"}, &o, &e); rc != 1 {
		t.Fatalf("rc %d", rc)
	}
	if e.String() != "rstream: invalid option -- 'x'\n" || !strings.HasPrefix(o.String(), "usage: rstream\n\t[-s server_address]\n") {
		t.Errorf("stderr %q stdout %q", e.String(), o.String())
	}
	o.Reset()
	if rc := Main("rstream", []string{"-T", "q"}, &o, &e); rc != 1 || !strings.HasSuffix(o.String(), "\t    v|verify - verify data\n") {
		t.Errorf("-T q: rc %d, %q", rc, o.String())
	}
}
