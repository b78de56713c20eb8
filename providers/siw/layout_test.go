package siw

import (
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

// The flags word is stored and loaded whole: its packing must put each C field where the ABI has it.
func TestFlagsWordLayout(t *testing.T) {
	var sqe abi.SiwSqe
	*flagsWord(unsafe.Pointer(&sqe)) = wqeWord{flags: 0x1234, numSGE: 5, opcode: 3}.pack()
	if sqe.Flags != 0x1234 || sqe.NumSge != 5 || sqe.Opcode != 3 || sqe.Id != 0 || sqe.Rkey != 0 {
		t.Errorf("SQE word: flags %#x num_sge %d opcode %d (id %d rkey %d), want 0x1234 5 3", sqe.Flags, sqe.NumSge, sqe.Opcode, sqe.Id, sqe.Rkey)
	}
	if w := unpackWQE(*flagsWord(unsafe.Pointer(&sqe))); w != (wqeWord{0x1234, 5, 3}) {
		t.Errorf("unpackWQE = %+v", w)
	}
	var rqe abi.SiwRqe
	*flagsWord(unsafe.Pointer(&rqe)) = wqeWord{flags: abi.SIW_WQE_VALID, numSGE: 6}.pack()
	if rqe.Flags != abi.SIW_WQE_VALID || rqe.NumSge != 6 || rqe.Opcode != 0 || rqe.Unused != 0 {
		t.Errorf("RQE word: %+v", rqe)
	}
	var cqe abi.SiwCqe
	*flagsWord(unsafe.Pointer(&cqe)) = cqeWord{flags: 0x21, opcode: 8, status: 0x0304}.pack()
	if cqe.Flags != 0x21 || cqe.Opcode != 8 || cqe.Status != 0x0304 || cqe.Bytes != 0 || cqe.Id != 0 {
		t.Errorf("CQE word: %+v", cqe)
	}
	if w := unpackCQE(*flagsWord(unsafe.Pointer(&cqe))); w != (cqeWord{0x21, 8, 0x0304}) {
		t.Errorf("unpackCQE = %+v", w)
	}
	// Inline data goes to sge[1..]: SIW_MAX_INLINE bytes up to the end of the SQE.
	if off := unsafe.Offsetof(sqe.Sge) + abi.SizeofSiwSge; off+abi.SIW_MAX_INLINE != abi.SizeofSiwSqe {
		t.Errorf("inline area %d..%d, SQE ends at %d", off, off+abi.SIW_MAX_INLINE, abi.SizeofSiwSqe)
	}
}
