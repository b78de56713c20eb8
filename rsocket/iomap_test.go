package rsocket

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIOMapEncoding: struct rs_iomap is {offset u64, rs_sge {addr u64, key u32, length u32}}, 24 bytes in the
// writer's host order (little-endian on x86), byte-swapped for a peer whose NET flag differs.
func TestIOMapEncoding(t *testing.T) {
	m := ioMap{Offset: 0x1000, SGE: sge{Addr: 0x7f0011223344, Key: 0x1234, Length: 4096}}
	b := make([]byte, iomapLen)
	putIOMap(b, m, binary.LittleEndian)
	want, _ := hex.DecodeString("0010000000000000" + "44332211007f0000" + "34120000" + "00100000")
	if !bytes.Equal(b, want) {
		t.Errorf("little-endian %x, want %x", b, want)
	}
	if got := getIOMap(b, binary.LittleEndian); got != m {
		t.Errorf("decoded %+v, want %+v", got, m)
	}
	putIOMap(b, m, binary.BigEndian)
	want, _ = hex.DecodeString("0000000000001000" + "00007f0011223344" + "00001234" + "00001000")
	if !bytes.Equal(b, want) {
		t.Errorf("big-endian %x, want %x", b, want)
	}
	// The IOMAP_SGL immediate carries the entry's index.
	if msg(opIOMapSGL, 3) != 0xC0000003 || msgOp(0xC0000003) != opIOMapSGL || msgData(0xC0000003) != 3 {
		t.Errorf("IOMAP_SGL message %#x", msg(opIOMapSGL, 3))
	}
	// A plain WRITE's wr_id (riowrite) and the keepalive's: never an immediate.
	if msg(opWrite, 65536) != 0x40010000 || msg(opCtrl, ctrlKeepalive) != 0xE0000001 {
		t.Errorf("WRITE %#x, KEEPALIVE %#x", msg(opWrite, 65536), msg(opCtrl, ctrlKeepalive))
	}
}

// TestFindIOMap is rs_find_iomap: the first entry covering the offset; empty entries and ranges that would
// overflow never match.
func TestFindIOMap(t *testing.T) {
	table := make([]byte, 4*iomapLen)
	put := func(i int, m ioMap) { putIOMap(table[i*iomapLen:], m, binary.NativeEndian) }
	put(0, ioMap{Offset: 0, SGE: sge{Addr: 0x10000, Key: 1, Length: 100}})
	put(1, ioMap{Offset: 1000, SGE: sge{Addr: 0x20000, Key: 2, Length: 10}})
	put(3, ioMap{Offset: ^uint64(0) - 5, SGE: sge{Addr: 0x30000, Key: 3, Length: 100}}) // would overflow
	for _, c := range []struct {
		off uint64
		key uint32
	}{{0, 1}, {99, 1}, {100, 0}, {999, 0}, {1000, 2}, {1009, 2}, {1010, 0}, {^uint64(0) - 5, 3}, {^uint64(0), 3}, {5, 1}} {
		m, ok := findIOMap(table, c.off)
		if ok != (c.key != 0) || m.SGE.Key != c.key {
			t.Errorf("offset %d: %+v %v, want key %d", c.off, m, ok, c.key)
		}
	}
	if _, ok := findIOMap(nil, 0); ok {
		t.Error("empty table matched")
	}
}

// TestIOMapSize rounds RDMA_IOMAPSIZE as librdmacm's rsetsockopt does (through the 8-bit scale).
func TestIOMapSize(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 0}, {-3, 0}, {1, 1}, {128, 128}, {200, 128}, {256, 256},
		{300, 256}, {1000, 768}, {0x7f00, 0x7f00}, {1 << 20, 0x7f00}} {
		o := Options{IOMapSize: c.in}
		if got := o.iomapSize(); got != c.want {
			t.Errorf("IOMapSize %d -> %d, want %d", c.in, got, c.want)
		}
	}
}

func TestIOMapErrors(t *testing.T) {
	e := &IOMapError{Offset: 0x2000, Len: 10, Err: ErrNotMapped}
	if e.Error() != "10 bytes at offset 0x2000: not mapped: invalid argument" || !errors.Is(e, ErrNotMapped) || !errors.Is(e, unix.EINVAL) {
		t.Errorf("%v", e)
	}
	if !errors.Is(ErrIOMapFull, unix.ENOMEM) {
		t.Error("ErrIOMapFull is not ENOMEM")
	}
}

// FuzzFindIOMap: whatever the peer wrote into our iomap table, a lookup returns an entry that covers the
// offset, or none, and never panics.
func FuzzFindIOMap(f *testing.F) {
	b := make([]byte, 2*iomapLen)
	putIOMap(b, ioMap{Offset: 10, SGE: sge{Addr: 1, Key: 2, Length: 5}}, binary.NativeEndian)
	f.Add(b, uint64(12))
	f.Add(b[:30], uint64(0))
	f.Fuzz(func(t *testing.T, table []byte, off uint64) {
		m, ok := findIOMap(table, off)
		if ok && (off < m.Offset || off-m.Offset >= uint64(m.SGE.Length)) {
			t.Fatalf("offset %d matched %+v", off, m)
		}
	})
}
