package cmcommon

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGetAddr(t *testing.T) {
	for _, tc := range []struct {
		network, service, host string
		numeric, passive       bool
		want, err              string
	}{
		{"tcp", "7471", "", false, true, "0.0.0.0:7471", ""},
		{"tcp", "7471", "", false, false, "127.0.0.1:7471", ""},
		{"udp", "7174", "10.233.0.1", true, false, "10.233.0.1:7174", ""},
		{"tcp", "7471", "fe80::1", true, false, "[fe80::1]:7471", ""},
		{"tcp", "7471", "not-an-address", true, false, "invalid AddrPort", "Name or service not known"},
		{"tcp", "no-such-service", "10.0.0.1", true, false, "invalid AddrPort", "Servname not supported for ai_socktype"},
	} {
		got, err := GetAddr(tc.network, tc.service, tc.host, tc.numeric, tc.passive)
		if got.String() != tc.want || err != tc.err {
			t.Errorf("GetAddr(%q, %q, %q) = %v, %q; want %s, %q", tc.network, tc.service, tc.host, got, err, tc.want, tc.err)
		}
	}
}

func TestRdmaGetaddrinfo(t *testing.T) {
	for _, tc := range []struct {
		host, service string
		wildcard      bool
		want, err     string
		code          int
	}{
		{"", "7471", true, "0.0.0.0:7471", "", 0},
		{"0.0.0.0", "7471", false, "0.0.0.0:7471", "", 0},
		{"10.233.0.1", "7471", false, "10.233.0.1:7471", "", 0},
		{"10.233.0.1", "no-such-service", true, "invalid AddrPort", "Servname not supported for ai_socktype", -8},
	} {
		got, err, code := RdmaGetaddrinfo(tc.host, tc.service, tc.wildcard)
		if got.String() != tc.want || err != tc.err || code != tc.code {
			t.Errorf("RdmaGetaddrinfo(%q, %q, %v) = %v, %q, %d; want %s, %q, %d", tc.host, tc.service, tc.wildcard,
				got, err, code, tc.want, tc.err, tc.code)
		}
	}
}

// On a host without RDMA devices (the unit-test hosts: no rdma_cm, or no device behind it) the channel fails
// with ENODEV and the one line librdmacm's examples print; where a device exists the channel opens silently.
func TestCreateFirstEventChannel(t *testing.T) {
	var stderr strings.Builder
	ch, err := CreateFirstEventChannel(&stderr)
	if err == nil {
		defer ch.Close()
		if stderr.Len() != 0 {
			t.Errorf("printed %q on success", stderr.String())
		}
		return
	}
	if errors.Is(err, unix.ENODEV) {
		if got := stderr.String(); got != "No RDMA devices were detected\n" {
			t.Errorf("ENODEV printed %q", got)
		}
		return
	}
	if !strings.HasPrefix(stderr.String(), "failed to create RDMA CM event channel: ") {
		t.Errorf("%v printed %q", err, stderr.String())
	}
}
