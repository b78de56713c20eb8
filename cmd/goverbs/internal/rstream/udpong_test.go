package rstream

import (
	"bytes"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// udpongUsage is what udpong.c (rdma-core 44 and 65) prints for an unknown option or -T value.
const udpongUsage = `usage: udpong
	[-s server_address]
	[-b bind_address]
	[-B buffer_size]
	[-C transfer_count]
	[-S transfer_size]
	[-p port_number]
	[-T test_option]
	    s|sockets - use standard tcp/ip sockets
	    a|async - asynchronous operation (use poll)
	    b|blocking - use blocking calls
	    n|nonblocking - use nonblocking calls
	    e|echo - server echoes all messages
`

func runUdpong(args ...string) (rc int, out, errOut string) {
	var o, e bytes.Buffer
	rc = MainUdpong("udpong", args, &o, &e)
	return rc, o.String(), e.String()
}

func TestUdpongOptions(t *testing.T) {
	for _, c := range []struct {
		args        []string
		rc          int
		out, errOut string
	}{
		{[]string{"-T", "x"}, 1, udpongUsage, ""},
		{[]string{"-T", "sockets", "-T", "bogus"}, 1, udpongUsage, ""},
		{[]string{"-S", "15"}, 1, "size must be at least 16 bytes\n", ""},
		{[]string{"-S", "4096", "-T", "s", "-s", "127.0.0.1"}, 1, "", "udpong: transfer size 4096 exceeds the 2056-byte message\n"},
		// Datagram rsockets (the default) are refused in both roles, after address resolution.
		{[]string{"-s", "10.0.0.1", "-C", "10"}, 255, udpongHeader, "rconnect: Operation not supported\n"},
		{[]string{"-b", "10.0.0.1"}, 255, "", "rbind: Operation not supported\n"},
		{[]string{"-s", "no.such.host.invalid"}, 254, udpongHeader + "getaddrinfo: Name or service not known\n", ""},
	} {
		rc, out, errOut := runUdpong(c.args...)
		if rc != c.rc || out != c.out || errOut != c.errOut {
			t.Errorf("udpong %q: exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q", c.args, rc, out, errOut,
				c.rc, c.out, c.errOut)
		}
	}
}

const udpongHeader = "name      bytes   xfers   total       time     Gb/sec    usec/xfer\n"

var udpongRowRE = regexp.MustCompile(`^(\S+) +(\S+) +(\S+) +(\S+) +\d+\.\d\ds +\d+\.\d\d +\d+\.\d\d$`)

// TestUdpongLoopback runs goverbs' udpong -T s client against its server over loopback UDP: the login, a
// bandwidth run (the server's count) and an echo run (twice the count), and the full test table's names.
func TestUdpongLoopback(t *testing.T) {
	var srvOut, srvErr bytes.Buffer
	srv := &udpong{stdout: &srvOut, stderr: &srvErr}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	srv.conn = conn
	done := make(chan int)
	go func() { done <- srv.serve() }()
	port := strconv.Itoa(conn.LocalAddr().(*net.UDPAddr).Port)

	rows := func(args ...string) [][]string {
		t.Helper()
		rc, out, errOut := runUdpong(append([]string{"-T", "s", "-s", "127.0.0.1", "-p", port}, args...)...)
		if rc != 0 || errOut != "" || !strings.HasPrefix(out, udpongHeader) {
			t.Fatalf("udpong %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, rc, out, errOut)
		}
		var r [][]string
		for _, l := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, udpongHeader), "\n"), "\n") {
			m := udpongRowRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("udpong %q: row %q", args, l)
			}
			r = append(r, m[1:5])
		}
		return r
	}
	if r := rows("-C", "300", "-S", "100"); len(r) != 1 || r[0][0] != "custom" || r[0][1] != "100" {
		t.Errorf("bandwidth rows %q", r)
	}
	if r := rows("-C", "50", "-S", "64", "-T", "e"); len(r) != 1 || strings.Join(r[0], " ") != "custom 64 100 6.2k" {
		t.Errorf("echo rows %q, want custom 64 100 6.2k", r)
	}
	if testing.Short() {
		t.Log("-short: the full test table (18 runs) is skipped")
	} else {
		var names []string
		for _, row := range rows() {
			names = append(names, row[0])
		}
		if got, want := strings.Join(names, " "), "64_lat 128_lat 192_lat 256_lat 384_lat 512_lat 768_lat 1k_lat 1.5k_lat "+
			"64_bw 128_bw 192_bw 256_bw 384_bw 512_bw 768_bw 1k_bw 1.5k_bw"; got != want {
			t.Errorf("test names %q\nwant %q", got, want)
		}
	}
	conn.Close()
	if rc := <-done; rc != -1 {
		t.Errorf("server ended with %d after its socket closed", rc)
	}
	logins := strings.Count(srvOut.String(), "client login from 127.0.0.1\n")
	if want := map[bool]int{true: 2, false: 3}[testing.Short()]; logins != want || srvOut.Len() != want*len("client login from 127.0.0.1\n") {
		t.Errorf("server stdout %q, want %d logins", srvOut.String(), want)
	}
}
