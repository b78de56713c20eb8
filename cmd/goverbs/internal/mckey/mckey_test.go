package mckey

import (
	"bytes"
	"testing"
)

// Exits before any device is needed (the same runs are compared with the C tool in cmd/goverbs/internal/interop).
func TestEarlyExits(t *testing.T) {
	for _, c := range []struct {
		args []string
		rc   int
		out  string
	}{
		{[]string{"-M", "ff0e::1"}, 1, "unmapped multicast address requires binding to source address\n"},
		{[]string{"-x"}, 1, "usage: mckey\n\t-m multicast_address\n\t[-M unmapped_multicast_address]\n" +
			"\t replaces -m and requires -b\n\t[-s(ender)]\n\t[-b bind_address]\n\t[-c connections]\n" +
			"\t[-C message_count]\n\t[-S message_size]\n\t[-p port_space - 0x111 for UDP (default), 0x2 for IPOIB]\n" +
			"\t[-o join as a send-only full-member]\n\t[-l join without multicast loopback]\n"},
	} {
		var o, e bytes.Buffer
		if rc := Main("mckey", c.args, &o, &e); rc != c.rc || o.String() != c.out {
			t.Errorf("%v: rc %d\n%s", c.args, rc, o.String())
		}
	}
}
