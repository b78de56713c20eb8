package rstream

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/rsocket"
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

func TestRiostreamUsage(t *testing.T) {
	var o, e bytes.Buffer
	if rc := MainRiostream("riostream", []string{"-k", "5"}, &o, &e); rc != 1 {
		t.Fatalf("rc %d", rc)
	}
	if e.String() != "riostream: invalid option -- 'k'\n" || !strings.HasPrefix(o.String(), "usage: riostream\n\t[-s server_address]\n") ||
		!strings.Contains(o.String(), "\t[-p port_number]\n\t[-T test_option]\n\t    a|async") {
		t.Errorf("stderr %q stdout %q", e.String(), o.String())
	}
	for _, bad := range []string{"s", "f", "r", "socket"} {
		o.Reset()
		if rc := MainRiostream("riostream", []string{"-T", bad}, &o, &e); rc != 1 || !strings.HasSuffix(o.String(), "\t    n|nonblocking - use nonblocking calls\n\t    v|verify - verify data\n") {
			t.Errorf("-T %s: rc %d, %q", bad, rc, o.String())
		}
	}
}

func TestKeepaliveLines(t *testing.T) {
	var o, e bytes.Buffer
	s := &state{stdout: &o, stderr: &e, keepalive: 3}
	s.keepaliveLines()
	if o.String() != "Keepalive: ON\n  time: 3\n" || e.Len() != 0 || s.keepaliveDuration() != 3e9 {
		t.Errorf("-k 3: %q %q %v", o.String(), e.String(), s.keepaliveDuration())
	}
	o.Reset()
	s.keepalive = -1
	s.keepaliveLines()
	if !strings.HasPrefix(o.String(), "Keepalive: ON\n  time: ") || e.String() != "rsetsockopt TCP_KEEPIDLE: Invalid argument\n" {
		t.Errorf("-k -1: %q %q", o.String(), e.String())
	}
	s.keepalive = 0
	if o := s.options(); o.KeepAlive > 0 {
		t.Errorf("no -k: keepalive %v", o.KeepAlive)
	}
}

// TestRiostreamOptions: riostream offers one iomap entry (RDMA_IOMAPSIZE 1); rstream none.
func TestRiostreamOptions(t *testing.T) {
	if o := (&state{rio: true}).options(); o.IOMapSize != 1 || o.SendBuffer != 1<<20 || o.RecvBuffer != 1<<20 {
		t.Errorf("riostream options %+v", o)
	}
	if o := (&state{}).options(); o.IOMapSize != 0 {
		t.Errorf("rstream options %+v", o)
	}
}

// TestConfigOptions: the system's defaults (/etc/rdma/rsocket) reach the
// connection except where rstream sets the option itself, as with librdmacm:
// the buffer sizes always, the inline size in the latency and bandwidth runs.
func TestConfigOptions(t *testing.T) {
	conf := rsocket.Options{PollTime: -1, SQSize: 64, RQSize: 32, InlineSize: 200, SendBuffer: 4096, RecvBuffer: 4096, IOMapSize: 8}
	o := (&state{conf: conf}).options()
	want := conf
	want.SendBuffer, want.RecvBuffer, want.KeepAlive = 1<<20, 1<<20, -1 // no -k: no probes
	if o != want {
		t.Errorf("mixed: %+v, want %+v", o, want)
	}
	if o := (&state{conf: conf, opt: optBandwidth}).options(); o.InlineSize != -1 || o.SQSize != 64 || o.PollTime != -1 {
		t.Errorf("bandwidth: %+v", o)
	}
	if o := (&state{conf: conf, rio: true}).options(); o.IOMapSize != 1 {
		t.Errorf("riostream: iomap %d, want 1 (RDMA_IOMAPSIZE)", o.IOMapSize)
	}
}
