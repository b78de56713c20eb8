package pingpong

import (
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"

	"strings"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
)

var roceGID = uverbs.GID{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 233, 0, 1}

func TestEncodeDest(t *testing.T) {
	tests := []struct {
		d    dest
		want string
	}{
		{dest{}, "0000:000000:000000:00000000000000000000000000000000"},
		{dest{lid: 0x1, qpn: 0x11, psn: 0x5bf7e3, gid: roceGID}, "0001:000011:5bf7e3:00000000000000000000ffff0ae90001"},
		{dest{lid: 0xffff, qpn: 0xffffff, psn: 0xffffff, gid: uverbs.GID{0xfe, 0x80, 15: 0x42}},
			"ffff:ffffff:ffffff:fe800000000000000000000000000042"},
	}
	for _, tt := range tests {
		msg := tt.d.encode()
		if len(msg) != msgSize || msg[msgSize-1] != 0 || string(msg[:msgSize-1]) != tt.want {
			t.Errorf("encode(%+v) = %q, want %q and a NUL", tt.d, msg, tt.want)
		}
		if got := decodeDest(msg); got != tt.d {
			t.Errorf("decode(encode(%+v)) = %+v", tt.d, got)
		}
	}
}

func TestDecodeDest(t *testing.T) {
	tests := []struct {
		msg  string
		want dest
	}{
		// What rdma-core's tools send.
		{"0000:000012:ff3bbe:00000000000000000000ffff0ae90001\x00", dest{qpn: 0x12, psn: 0xff3bbe, gid: roceGID}},
		// sscanf stops at the first field that does not scan; the rest stay 0.
		{"0001:zz:000003:00000000000000000000ffff0ae90001\x00", dest{lid: 1}},
		{"0001\x00", dest{lid: 1}},
		{"", dest{}},
		{"\x00garbage", dest{}},
		// %x takes a sign and a 0x prefix; values wrap to the int fields as in C.
		{"-1:0x10:+7:", dest{lid: -1, qpn: 0x10, psn: 7}},
		{"fffffffff:1:1:", dest{lid: -1, qpn: 1, psn: 1}},
		// %s skips leading white space and stops at the next; a GID word that does not scan stays 0.
		{"1:2:3: 0000000100000002zzzzzzzz00000004 tail", dest{lid: 1, qpn: 2, psn: 3,
			gid: uverbs.GID{3: 1, 7: 2, 15: 4}}},
		// A short GID fills what it has.
		{"1:2:3:00000001", dest{lid: 1, qpn: 2, psn: 3, gid: uverbs.GID{3: 1}}},
	}
	for _, tt := range tests {
		if got := decodeDest([]byte(tt.msg)); got != tt.want {
			t.Errorf("decodeDest(%q) = %+v, want %+v", tt.msg, got, tt.want)
		}
	}
}

func TestInetNtop6(t *testing.T) {
	tests := []struct {
		a    uverbs.GID
		want string
	}{
		{uverbs.GID{}, "::"},
		{roceGID, "::ffff:10.233.0.1"},
		{uverbs.GID{12: 10, 13: 233, 14: 0, 15: 1}, "::10.233.0.1"},
		{uverbs.GID{0xfe, 0x80, 8: 0x02, 9: 0x15, 10: 0x5d, 11: 0xff, 12: 0xfe, 13: 0x12, 14: 0x34, 15: 0x56}, "fe80::215:5dff:fe12:3456"},
		{uverbs.GID{1: 1, 15: 1}, "1::1"},
		{uverbs.GID{1: 1, 3: 0, 5: 1, 15: 1}, "1:0:1::1"},
		{uverbs.GID{1: 1, 7: 1, 15: 1}, "1:0:0:1::1"},
		{uverbs.GID{1: 1, 3: 1, 5: 1, 7: 1, 9: 1, 11: 1, 13: 1, 15: 1}, "1:1:1:1:1:1:1:1"},
		{uverbs.GID{1: 1, 3: 1, 5: 1, 7: 1, 9: 1, 11: 1, 13: 1}, "1:1:1:1:1:1:1:0"},
		{uverbs.GID{1: 1}, "1::"},
	}
	for _, tt := range tests {
		if got := cstd.InetNtop6(tt.a); got != tt.want {
			t.Errorf("cstd.InetNtop6(%x) = %q, want %q", tt.a, got, tt.want)
		}
	}
}

// FuzzDecodeDest: any bytes decode without panicking, and a record the tools would send (fields within their
// widths) decodes to what was encoded.
func FuzzDecodeDest(f *testing.F) {
	f.Add([]byte("0000:000012:ff3bbe:00000000000000000000ffff0ae90001\x00"), uint16(1), uint32(2), uint32(3), []byte("0123456789abcdef"))
	f.Add([]byte("-0x:::"), uint16(0), uint32(0), uint32(0), []byte{})
	f.Fuzz(func(t *testing.T, raw []byte, lid uint16, qpn, psn uint32, gid []byte) {
		decodeDest(raw)
		d := dest{lid: int(lid), qpn: int(qpn & 0xffffff), psn: int(psn & 0xffffff)}
		copy(d.gid[:], gid)
		msg := d.encode()
		if len(msg) != msgSize {
			t.Fatalf("encode(%+v) is %d bytes", d, len(msg))
		}
		if got := decodeDest(msg); got != d {
			t.Fatalf("decode(encode(%+v)) = %+v (%q)", d, got, msg)
		}
	})
}

// FuzzParseWireGID: any text parses without panicking; 32 hex digits round-trip through wireGID.
func FuzzParseWireGID(f *testing.F) {
	f.Add("00000000000000000000ffff0ae90001", []byte{})
	f.Add("zz", []byte{0xfe, 0x80})
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		parseWireGID(s)
		var g uverbs.GID
		copy(g[:], raw)
		w := wireGID(g)
		if len(w) != 32 || strings.Trim(w, "0123456789abcdef") != "" {
			t.Fatalf("wireGID(%x) = %q", g, w)
		}
		if got := parseWireGID(w); got != g {
			t.Fatalf("parseWireGID(%q) = %x, want %x", w, got, g)
		}
	})
}

// FuzzScanHex: any text scans without panicking; printed numbers scan back, with or without 0x.
func FuzzScanHex(f *testing.F) {
	f.Add("0x1f", uint64(31))
	f.Add("-", uint64(0))
	f.Fuzz(func(t *testing.T, s string, v uint64) {
		scanHex(s)
		for _, text := range []string{strings.ToLower(hex(v)), "0x" + hex(v), " \t" + strings.ToUpper(hex(v)) + ":x"} {
			got, ok := scanHex(text)
			if !ok || got != v {
				t.Fatalf("scanHex(%q) = %#x, %v; want %#x", text, got, ok, v)
			}
		}
	})
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v >>= 4 {
		b = append([]byte{digits[v&15]}, b...)
	}
	return string(b)
}
