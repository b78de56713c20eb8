package hw

import (
	"encoding/binary"
	"testing"
)

// The clock's two words: read high, low, high; a carry between them (the high word changed) makes one more
// attempt, and the second attempt's pair is kept whatever happens (libmlx5 mlx5_read_clock).
func TestReadClockCarry(t *testing.T) {
	raw := func(v uint32) uint32 { // the word as the device stores it, loaded in host order
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		return binary.NativeEndian.Uint32(b[:])
	}
	for _, tc := range []struct {
		name  string
		reads []uint32 // high, low, high, ...
		want  uint64
		loads int
	}{
		{"steady", []uint32{0x12, 0x3456789a, 0x12}, 0x123456789a, 3},
		{"carry", []uint32{0x12, 0xffffffff, 0x13, 0x13, 0x00000002, 0x13}, 0x1300000002, 6},
		{"carry twice: second pair kept", []uint32{1, 5, 2, 2, 7, 3}, 0x200000007, 6},
	} {
		n := 0
		got := readClock(func(hi bool) uint32 {
			if want := n%3 != 1; hi != want {
				t.Errorf("%s: load %d of the high word %v", tc.name, n, hi)
			}
			v := tc.reads[n]
			n++
			return raw(v)
		})
		if got != tc.want || n != tc.loads {
			t.Errorf("%s: %#x after %d loads, want %#x after %d", tc.name, got, n, tc.want, tc.loads)
		}
	}
}

// NewClock takes the offset within the page, as libmlx5 masks it, and reads the words where they are.
func TestNewClock(t *testing.T) {
	page := make([]byte, 4096)
	binary.BigEndian.PutUint32(page[0xf08:], 0x12)
	binary.BigEndian.PutUint32(page[0xf0c:], 0x3456789a)
	c, err := NewClock(page, 0x7f08)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Read(); v != 0x123456789a {
		t.Errorf("Read = %#x", v)
	}
	for _, off := range []uint64{0xffc, 0x102} {
		if _, err := NewClock(page, off); err == nil {
			t.Errorf("offset %#x accepted", off)
		}
	}
	if c := ClockMmapOffset(4096); c != 5<<8*4096 {
		t.Errorf("ClockMmapOffset = %#x", c)
	}
}
