package cmcommon

import "testing"

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
