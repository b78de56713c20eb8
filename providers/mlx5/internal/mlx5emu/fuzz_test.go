package mlx5emu

import (
	"encoding/binary"
	"testing"
)

// FuzzParseWQE feeds arbitrary WQE bytes to the segment parser: it must not
// panic, and the segments it returns must lie inside ds*16 bytes.
func FuzzParseWQE(f *testing.F) {
	seed := func(opcode uint8, segs ...[]byte) []byte {
		w := make([]byte, 16)
		for _, s := range segs {
			w = append(w, s...)
		}
		binary.BigEndian.PutUint32(w[0:], uint32(opcode))
		binary.BigEndian.PutUint32(w[4:], 0x100<<8|uint32(len(w)/16))
		return w
	}
	f.Add(seed(tOpSend, dataSeg(8, 1, 2)), uint8(RC))
	f.Add(seed(tOpRDMARead, raddrSeg(1, 2), dataSeg(8, 1, 2)), uint8(RC))
	f.Add(seed(tOpAtomicCS, raddrSeg(8, 2), atomicSeg(1, 2), dataSeg(8, 1, 2)), uint8(RC))
	f.Add(seed(tOpSendImm, udAV(1, 2, 3, true, [16]byte{}), inlineSeg([]byte("abc"))), uint8(UD))
	f.Add(seed(tOpSend, inlineSeg(make([]byte, 100))), uint8(UC))
	f.Fuzz(func(t *testing.T, b []byte, typ uint8) {
		if len(b) < 8 {
			return
		}
		_, _, _, ds := parseCtrl(b)
		nbb := (ds*16 + 63) / 64
		raw := make([]byte, max(nbb, 1)*64)
		copy(raw, b)
		w, why := parseWQE(QPType(typ%3+1), raw)
		if why != "" {
			return
		}
		used := 16
		for _, s := range w.sges {
			if s.hasInl {
				used += (4 + len(s.inline) + 15) &^ 15
			} else {
				used += 16
			}
		}
		if used > max(ds*16, 16)+15 || w.nbb != nbb {
			t.Fatalf("segments use %d bytes of ds %d", used, ds)
		}
	})
}

// FuzzProcess writes arbitrary bytes into an SQ, its doorbell record, a
// receive queue and the UAR registers of a connected RC pair and runs the
// engine: it must neither panic nor stop answering.
func FuzzProcess(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x0a, 0, 1, 0, 2, 0, 0, 0, 8}, uint16(1), uint16(1), []byte{0, 0, 0, 0x0a, 0, 1, 0, 2})
	f.Add(make([]byte, 200), uint16(0xffff), uint16(3), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, sq []byte, sqPI, rqPI uint16, uar []byte) {
		d, err := New(Options{BFRegSize: 512})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		p := newPair(t, d, RC, 2, qpOpts{sqCnt: 4, rqCnt: 4})
		copy(p.a.sq, sq)
		copy(p.b.rq, sq)
		storeBE32(p.a.dbr[4:], uint32(sqPI))
		storeBE32(p.b.dbr[0:], uint32(rqPI))
		copy(d.UAR()[BFOffset:], uar)
		copy(d.UAR()[CQDoorbellOffset:CQDoorbellOffset+8], uar)
		for i := 0; i < 4; i++ {
			d.Process()
			for p.scqA.poll() != nil {
			}
			for p.rcqB.poll() != nil {
			}
		}
	})
}
