package pingpong

import (
	"testing"

	"github.com/goverbs/goverbs/uverbs"
)

func TestRecordRoundTrip(t *testing.T) {
	g := uverbs.GID{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 233, 0, 1}
	d := dest{lid: 0x1234, qpn: 0x11, psn: 0xabcdef, gid: g}
	msg := d.encode()
	if len(msg) != msgSize {
		t.Fatalf("record is %d bytes, want %d", len(msg), msgSize)
	}
	const want = "1234:000011:abcdef:00000000000000000000ffff0ae90001\x00"
	if string(msg) != want {
		t.Fatalf("record %q, want %q", msg, want)
	}
	if got := decodeDest(msg); got != d {
		t.Fatalf("decoded %+v, want %+v", got, d)
	}
}

// What the C tools' sscanf("%x:%x:%x:%s") makes of odd records: fields that do not scan stay zero.
func TestDecodeOdd(t *testing.T) {
	for _, c := range []struct {
		in   string
		want dest
	}{
		{"", dest{}},
		{"zz", dest{}},
		{"0001:0x000002:3", dest{lid: 1, qpn: 2, psn: 3}},
		{"1:2:3:fe800000000000000000000000000001", dest{lid: 1, qpn: 2, psn: 3,
			gid: uverbs.GID{0xfe, 0x80, 15: 1}}},
		// A word scans up to its first non-hex character, as %x does: "fe80zzzz" is 0x0000fe80.
		{"1:2:3:fe80zzzz", dest{lid: 1, qpn: 2, psn: 3, gid: uverbs.GID{2: 0xfe, 3: 0x80}}},
	} {
		if got := decodeDest([]byte(c.in)); got != c.want {
			t.Errorf("decodeDest(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func FuzzDecodeDest(f *testing.F) {
	f.Add([]byte("0000:000011:0db26a:00000000000000000000ffff0ae90001\x00"))
	f.Add([]byte("ffff:ffffff:ffffff:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decodeDest(b)
		// Anything decoded re-encodes to a record that decodes to the same values (within the record's widths).
		if d.lid >= 0 && d.lid <= 0xffff && d.qpn >= 0 && d.qpn <= 0xffffff && d.psn >= 0 && d.psn <= 0xffffff {
			if d2 := decodeDest(d.encode()); d2 != d {
				t.Fatalf("%+v re-decodes as %+v", d, d2)
			}
		}
	})
}
