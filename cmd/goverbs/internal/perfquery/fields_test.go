package perfquery

import (
	"bytes"
	"testing"
)

// The field engine against the IB layout: BITSOFFS fields are big-endian
// at their IB bit offsets.
func TestFieldsIBLayout(t *testing.T) {
	p := make([]byte, 64)
	pcFields[1].set(p, 0xbeef) // CounterSelect, bits 16-31
	pcFields[12].set(p, 0xa)   // LocalLinkIntegrityErrors, bits 152-155
	pcFields[13].set(p, 0x5)   // ExcessiveBufferOverrunErrors, bits 156-159
	pcFields[15].set(p, 0x01020304)
	want := make([]byte, 64)
	want[2], want[3], want[19] = 0xbe, 0xef, 0xa5
	want[24], want[25], want[26], want[27] = 1, 2, 3, 4
	if !bytes.Equal(p, want) {
		t.Fatalf("got %x\nwant %x", p, want)
	}
	if pcFields[12].get(p) != 0xa || pcFields[13].get(p) != 5 || pcFields[1].get(p) != 0xbeef {
		t.Fatal("get")
	}
	// libibmad's QP1Dropped reads VL15Dropped's bytes (22-23).
	p[22], p[23] = 0x12, 0x34
	if pcQP1Dropped.get(p) != 0x1234 || pcFields[14].get(p) != 0x1234 {
		t.Fatalf("QP1Dropped %x VL15Dropped %x", pcQP1Dropped.get(p), pcFields[14].get(p))
	}
}

func FuzzFields(f *testing.F) {
	f.Add(make([]byte, 192))
	f.Add(bytes.Repeat([]byte{0xff}, 192))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := make([]byte, 1024)
		copy(p, b)
		_ = dumpPerfcounters(p)
		_ = dumpExt(p, capExtWidth, cap2AddlPortCtrs)
		for _, fl := range append(append([]field{pcQP1Dropped}, pcFields...), pcExtErrFields[0]) {
			q := append([]byte(nil), p...)
			v := fl.get(q)
			fl.set(q, v)
			if !bytes.Equal(q, p) {
				t.Fatalf("%s: set(get) changed the buffer", fl.name)
			}
		}
		for _, fl := range append(append([]field(nil), pcExtFields[2:]...), pcExtErrFields[1:]...) {
			q := append([]byte(nil), p...)
			fl.set64(q, fl.get64(q))
			if !bytes.Equal(q, p) {
				t.Fatalf("%s: set64(get64) changed the buffer", fl.name)
			}
		}
	})
}
