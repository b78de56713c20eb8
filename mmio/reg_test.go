package mmio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"unsafe"
)

func alignedBuf(n int) []byte {
	b := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), n)
}

func TestBarriersRun(t *testing.T) {
	// They have no observable effect on one CPU; this proves they are callable on this architecture.
	ToDeviceBarrier()
	FromDeviceBarrier()
	FlushWrites()
	WCStart()
}

func TestWrite64(t *testing.T) {
	b := alignedBuf(64)
	r, err := RegFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	r.Write64(16, 0x0807060504030201)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if string(b[16:24]) != string(want) {
		t.Fatalf("bytes 16..24 = %x, want %x (native little-endian store)", b[16:24], want)
	}
	for i, c := range b {
		if (i < 16 || i >= 24) && c != 0 {
			t.Fatalf("byte %d written: %x", i, c)
		}
	}
}

// TestWCStores checks the combined write-combining primitives land exactly like Write64 and CopyBlock.
func TestWCStores(t *testing.T) {
	dst := alignedBuf(256)
	src := countingBlock()
	r := mustReg(t, dst)
	r.WCCopyBlock(128, (*[64]byte)(src))
	r.WCWrite64(8, 0x0807060504030201)
	want := make([]byte, 256)
	copy(want[128:], src)
	copy(want[8:], []byte{1, 2, 3, 4, 5, 6, 7, 8})
	if !bytes.Equal(dst, want) {
		t.Fatalf("got %x\nwant %x", dst, want)
	}
	mustPanic(t, map[string]func(){
		"write misaligned": func() { r.WCWrite64(4, 0) },
		"write past end":   func() { r.WCWrite64(256, 0) },
		"block misaligned": func() { r.WCCopyBlock(8, (*[64]byte)(src)) },
		"block past end":   func() { r.WCCopyBlock(256, (*[64]byte)(src)) },
	})
}

func TestCopy64(t *testing.T) {
	dst := alignedBuf(256)
	src := countingBlock()
	r := mustReg(t, dst)
	r.Copy64(128, src)
	if string(dst[128:192]) != string(src) {
		t.Fatalf("copy: got %x", dst[128:192])
	}
	for i, c := range dst {
		if (i < 128 || i >= 192) && c != 0 {
			t.Fatalf("byte %d written", i)
		}
	}
}

func TestRegChecks(t *testing.T) {
	b := alignedBuf(64)
	if _, err := RegFromBytes(b[1:]); !errors.Is(err, ErrMisaligned) {
		t.Errorf("misaligned window: err = %v", err)
	}
	if _, err := RegFromBytes(nil); err == nil {
		t.Errorf("empty window accepted")
	}
	r, _ := RegFromBytes(b)
	mustPanic(t, map[string]func(){
		"write misaligned":  func() { r.Write64(4, 0) },
		"write past end":    func() { r.Write64(64, 0) },
		"copy past end":     func() { r.Copy64(8, b) },
		"copy short source": func() { r.Copy64(0, b[:63]) },
		"copy misaligned":   func() { r.Copy64(0, alignedBuf(72)[1:65]) },
		"sub out of range":  func() { r.Sub(32, 64) },
		"block misaligned":  func() { r.CopyBlock(8, (*[64]byte)(b)) },
		"block past end":    func() { r.CopyBlock(64, (*[64]byte)(b)) },
	})
	src := countingBlock()
	big, _ := RegFromBytes(alignedBuf(128))
	big.CopyBlock(64, (*[64]byte)(src))
	if got := unsafe.Slice((*byte)(big.base), 128); !bytes.Equal(got[64:], src) || !bytes.Equal(got[:64], make([]byte, 64)) {
		t.Errorf("CopyBlock landed wrong: %x", got)
	}
	s := r.Sub(32, 32)
	s.Write64(0, 7)
	if binary.LittleEndian.Uint64(b[32:]) != 7 || s.Len() != 32 {
		t.Errorf("sub-window write landed wrong")
	}
}

func TestWCLock(t *testing.T) {
	var l WCLock
	var wg sync.WaitGroup
	n := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				l.Lock()
				n++
				FlushWrites()
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 4000 {
		t.Fatalf("n = %d, want 4000", n)
	}
}

func BenchmarkWrite64(b *testing.B) {
	r, _ := RegFromBytes(alignedBuf(64))
	for i := 0; i < b.N; i++ {
		r.Write64(8, uint64(i))
	}
}

func BenchmarkCopy64(b *testing.B) {
	r, _ := RegFromBytes(alignedBuf(64))
	src := alignedBuf(64)
	for i := 0; i < b.N; i++ {
		r.Copy64(0, src)
	}
}

// mustPanic checks that each of the named calls panics.
func mustPanic(t *testing.T, calls map[string]func()) {
	t.Helper()
	for name, f := range calls {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// countingBlock is an aligned 64-byte block holding 1, 2, ..., 64.
func countingBlock() []byte {
	b := alignedBuf(64)
	for i := range b {
		b[i] = byte(i + 1)
	}
	return b
}

// mustReg is RegFromBytes(b), which must succeed.
func mustReg(t *testing.T, b []byte) Reg {
	t.Helper()
	r, err := RegFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
