package uverbs

import (
	"net/netip"
	"testing"
)

// The MACs multicast and IPv6 link-local addresses encode, as libibverbs' neigh.c derives them.
func TestEncodedMAC(t *testing.T) {
	for _, tc := range []struct{ addr, mac string }{
		{"239.1.2.3", "01:00:5e:01:02:03"},
		{"224.129.255.1", "01:00:5e:01:ff:01"}, // the group's top bit is not carried
		{"ff02::1:ff00:99", "33:33:ff:00:00:99"},
		{"fe80::ff:fe00:99", "02:00:00:00:00:99"},
		{"fe80::5054:ff:fe12:3456", "52:54:00:12:34:56"},
		{"10.233.0.2", ""},
		{"fe80:1::1", ""}, // not in fe80::/64
		{"2001:db8::1", ""},
	} {
		got := encodedMAC(netip.MustParseAddr(tc.addr)).String()
		if got != tc.mac {
			t.Errorf("%s: %q, want %q", tc.addr, got, tc.mac)
		}
	}
	if a := gidIP(GID(netip.MustParseAddr("::ffff:10.0.0.1").As16())); !a.Is4() || a.String() != "10.0.0.1" {
		t.Errorf("gidIP of a v4-mapped GID: %v", a)
	}
}
