package perftest

import (
	"encoding/hex"
	"testing"
)

// The -z key record is struct pingpong_dest with every field big-endian (perftest's HAVE_ENDIAN build): 56
// bytes up to 6.28, 64 from 6.29 on (tail_markers_vaddr after vaddr, zero here).
func TestDestRecord(t *testing.T) {
	d := Dest{LID: 0x12, OutReads: 128, QPN: 0x11, PSN: 0xabcdef, RKey: 0x1234, VAddr: 0x7f0011223344,
		GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 233, 14: 0, 15: 1}, SRQN: 5}
	head := "00000012" + "00000080" + "00000011" + "00abcdef" + "00001234" + "00000000" + "00007f0011223344"
	tail := "00000000000000000000ffff0ae90001" + "00000005" + "00000001"
	for _, c := range []struct {
		wide bool
		want string
	}{{false, head + tail}, {true, head + "0000000000000000" + tail}} {
		b := encodeDest(&d, 1, c.wide)
		if got := hex.EncodeToString(b); got != c.want {
			t.Fatalf("wide %v: record\n got %s\nwant %s", c.wide, got, c.want)
		}
		back := decodeDest(b, c.wide)
		want := d
		want.SRQN = 0 // rdma_read_keys does not take the SRQ number
		if back != want {
			t.Fatalf("wide %v: decoded %+v, want %+v", c.wide, back, want)
		}
	}
}
