package siw

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
)

// Every supported opcode's SQE, field by field against struct siw_sqe as the kernel reads it, and the flags
// word that publishes it.
func TestSendSQEEncoding(t *testing.T) {
	sgl := []verbs.SGE{{Addr: 0x1000, Length: 100, LKey: 0x11}, {Addr: 0x2000, Length: 28, LKey: 0x22}}
	one := sgl[:1]
	var six []verbs.SGE
	for i := uint32(1); i <= 6; i++ {
		six = append(six, verbs.SGE{Addr: uint64(i) << 12, Length: i, LKey: i * 3})
	}
	sges := func(s []verbs.SGE) (out [abi.SIW_MAX_SGE]abi.SiwSge) {
		for i, e := range s {
			out[i] = abi.SiwSge{Laddr: e.Addr, Length: e.Length, Lkey: e.LKey}
		}
		return out
	}
	tests := []struct {
		name   string
		sigAll bool
		wr     verbs.SendWR
		want   abi.SiwSqe
		word   wqeWord
	}{
		{"RDMA write", false, verbs.SendWR{WRID: 1, SGL: sgl, Opcode: verbs.WRRDMAWrite,
			Flags: verbs.SendSignaled | verbs.SendFence, RemoteAddr: 0xdead0000, RKey: 0x99, Imm: 0x55},
			abi.SiwSqe{Id: 1, Rkey: 0x99, Raddr: 0xdead0000, Sge: sges(sgl)},
			wqeWord{abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED | abi.SIW_WQE_READ_FENCE, 2, abi.SIW_OP_WRITE}},
		{"RDMA read", false, verbs.SendWR{WRID: 2, SGL: one, Opcode: verbs.WRRDMARead, RemoteAddr: 0x4000, RKey: 0x97},
			abi.SiwSqe{Id: 2, Rkey: 0x97, Raddr: 0x4000, Sge: sges(one)},
			wqeWord{abi.SIW_WQE_VALID, 1, abi.SIW_OP_READ}},
		{"send", false, verbs.SendWR{WRID: 3, SGL: six, Opcode: verbs.WRSend, Flags: verbs.SendSolicited,
			RemoteAddr: 0x5000, RKey: 0x98, RemoteQPN: 7},
			abi.SiwSqe{Id: 3, Sge: sges(six)},
			wqeWord{abi.SIW_WQE_VALID | abi.SIW_WQE_SOLICITED, 6, abi.SIW_OP_SEND}},
		{"send on a sig_all QP", true, verbs.SendWR{WRID: 4, SGL: one, Opcode: verbs.WRSend},
			abi.SiwSqe{Id: 4, Sge: sges(one)},
			wqeWord{abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED, 1, abi.SIW_OP_SEND}},
		{"send with invalidate", false, verbs.SendWR{WRID: 5, SGL: sgl, Opcode: verbs.WRSendWithInv, Imm: 0xabcd0102,
			RKey: 0x77, Flags: verbs.SendSignaled},
			abi.SiwSqe{Id: 5, Rkey: 0xabcd0102, Sge: sges(sgl)},
			wqeWord{abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED, 2, abi.SIW_OP_SEND_REMOTE_INV}},
		{"zero-length send", false, verbs.SendWR{WRID: 6, Opcode: verbs.WRSend, Flags: verbs.SendSignaled},
			abi.SiwSqe{Id: 6},
			wqeWord{abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED, 0, abi.SIW_OP_SEND}},
		{"zero-length read", false, verbs.SendWR{WRID: 7, Opcode: verbs.WRRDMARead, RemoteAddr: 8, RKey: 9},
			abi.SiwSqe{Id: 7, Rkey: 9, Raddr: 8},
			wqeWord{abi.SIW_WQE_VALID, 0, abi.SIW_OP_READ}},
		{"read ignores inline", false, verbs.SendWR{WRID: 8, SGL: one, Opcode: verbs.WRRDMARead, Flags: verbs.SendInline,
			RemoteAddr: 0x4000, RKey: 0x97},
			abi.SiwSqe{Id: 8, Rkey: 0x97, Raddr: 0x4000, Sge: sges(one)},
			wqeWord{abi.SIW_WQE_VALID, 1, abi.SIW_OP_READ}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := sendLimits{maxSGE: 6, maxInline: 80, sigAll: tc.sigAll}
			r, st := validateSend(&l, &tc.wr)
			if st != provider.OK {
				t.Fatalf("validateSend = %v", st.Err())
			}
			// Start from a used slot: every field the request does not use must be cleared, and the flags
			// word must be left alone (it is stored last, by publishWQE).
			var sqe abi.SiwSqe
			b := unsafeBytes(unsafe.Pointer(&sqe), abi.SizeofSiwSqe)
			for i := range b {
				b[i] = 0xa5
			}
			*flagsWord(unsafe.Pointer(&sqe)) = 0
			for i := len(tc.wr.SGL); i < abi.SIW_MAX_SGE; i++ {
				sqe.Sge[i] = abi.SiwSge{} // stale SGEs past num_sge are never read; compare only what is
			}
			word := encodeSend(unsafe.Pointer(&sqe), &l, &tc.wr, r)
			if got := *flagsWord(unsafe.Pointer(&sqe)); got != 0 {
				t.Fatalf("encodeSend stored the flags word (%#x): it must be stored last, by publishWQE", got)
			}
			if word != tc.word {
				t.Errorf("flags word %+v, want %+v", word, tc.word)
			}
			if sqe != tc.want {
				t.Errorf("SQE\n got %+v\nwant %+v", sqe, tc.want)
			}
		})
	}
}

// Inline data: copied from the SGEs' addresses into sge[1..], described by sge[0]; any number of SGEs may feed
// it, the total bounded by the QP's max_inline_data.
func TestSendInline(t *testing.T) {
	a, aAddr := userBuffer(t, "hello, ", 7)
	b, bAddr := userBuffer(t, "iWARP!", 6)
	sgl := []verbs.SGE{{Addr: aAddr, Length: 7, LKey: 1}, {Addr: 0, Length: 0}, {Addr: bAddr, Length: 6, LKey: 2}}
	for len(sgl) < 9 { // more SGEs than SIW_MAX_SGE: fine inline
		sgl = append(sgl, verbs.SGE{Addr: bAddr, Length: 1})
	}
	want := append(append(append([]byte{}, a...), b...), bytes.Repeat(b[:1], 6)...)
	l := sendLimits{maxSGE: 2, maxInline: 80}
	for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRRDMAWrite} {
		wr := verbs.SendWR{WRID: 9, SGL: sgl, Opcode: op, Flags: verbs.SendInline, RemoteAddr: 0x10, RKey: 0x20}
		r, st := validateSend(&l, &wr)
		if st != provider.OK || !r.inline || r.length != uint64(len(want)) {
			t.Fatalf("%v: validateSend = %+v, %v", op, r, st.Err())
		}
		var sqe abi.SiwSqe
		w := encodeSend(unsafe.Pointer(&sqe), &l, &wr, r)
		if w.flags != abi.SIW_WQE_VALID|abi.SIW_WQE_INLINE || w.numSGE != 1 {
			t.Errorf("%v: flags word %+v, want VALID|INLINE and num_sge 1", op, w)
		}
		if sqe.Sge[0] != (abi.SiwSge{Length: uint32(len(want))}) {
			t.Errorf("%v: sge[0] = %+v, want length %d only", op, sqe.Sge[0], len(want))
		}
		got := unsafeBytes(unsafe.Pointer(&sqe.Sge[1]), len(want))
		if !bytes.Equal(got, want) {
			t.Errorf("%v: inline data %q, want %q", op, got, want)
		}
	}
	// Exactly the limit fits; one byte more does not; the limit is the QP's, not only SIW_MAX_INLINE's.
	_, bigAddr := userBuffer(t, string(bytes.Repeat([]byte{'x'}, 81)), 81)
	for _, tc := range []struct {
		limit, n uint32
		st       provider.Status
	}{{80, 80, provider.OK}, {80, 81, provider.InlineTooLong}, {16, 16, provider.OK}, {16, 17, provider.InlineTooLong}, {0, 0, provider.OK}, {0, 1, provider.InlineTooLong}} {
		l := sendLimits{maxSGE: 6, maxInline: tc.limit}
		wr := verbs.SendWR{SGL: []verbs.SGE{{Addr: bigAddr, Length: tc.n}}, Opcode: verbs.WRSend, Flags: verbs.SendInline}
		if _, st := validateSend(&l, &wr); st != tc.st {
			t.Errorf("inline %d bytes with max_inline_data %d: %v, want %v", tc.n, tc.limit, st.Err(), tc.st.Err())
		}
	}
	// A zero-length inline send: num_sge 0, no data.
	var sqe abi.SiwSqe
	wr := verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline}
	r, _ := validateSend(&l, &wr)
	if w := encodeSend(unsafe.Pointer(&sqe), &l, &wr, r); w.numSGE != 0 || sqe.Sge[0].Length != 0 {
		t.Errorf("empty inline send: word %+v sge[0] %+v", w, sqe.Sge[0])
	}
}

// What siw refuses, and with which status (the core's errno table: OpcodeNotSupported is EOPNOTSUPP, the others
// EINVAL).
func TestValidateSendRefusals(t *testing.T) {
	l := sendLimits{maxSGE: 2, maxInline: 80}
	three := []verbs.SGE{{Length: 1}, {Length: 1}, {Length: 1}}
	two := three[:2]
	huge := []verbs.SGE{{Length: 1 << 31}, {Length: 1 << 31}}
	tests := []struct {
		name string
		wr   verbs.SendWR
		want provider.Status
	}{
		{"RDMA write with immediate", verbs.SendWR{Opcode: verbs.WRRDMAWriteWithImm}, provider.OpcodeNotSupported},
		{"send with immediate", verbs.SendWR{Opcode: verbs.WRSendWithImm}, provider.OpcodeNotSupported},
		{"compare and swap", verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp}, provider.OpcodeNotSupported},
		{"fetch and add", verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd}, provider.OpcodeNotSupported},
		{"local invalidate", verbs.SendWR{Opcode: verbs.WRLocalInv}, provider.OpcodeNotSupported},
		{"bind MW", verbs.SendWR{Opcode: verbs.WRBindMW}, provider.OpcodeNotSupported},
		{"TSO", verbs.SendWR{Opcode: wrTSO}, provider.OpcodeNotSupported},
		{"DRIVER1", verbs.SendWR{Opcode: wrDriver1}, provider.OpcodeNotSupported},
		{"flush", verbs.SendWR{Opcode: verbs.WRFlush}, provider.OpcodeNotSupported},
		{"atomic write", verbs.SendWR{Opcode: verbs.WRAtomicWrite}, provider.OpcodeNotSupported},
		{"undefined 12", verbs.SendWR{Opcode: 12}, provider.BadOpcode},
		{"undefined 13", verbs.SendWR{Opcode: 13}, provider.BadOpcode},
		{"undefined 16", verbs.SendWR{Opcode: 16}, provider.BadOpcode},
		{"undefined huge", verbs.SendWR{Opcode: 0xffffffff}, provider.BadOpcode},
		{"inline send with invalidate", verbs.SendWR{Opcode: verbs.WRSendWithInv, Flags: verbs.SendInline}, provider.OpcodeNotSupported},
		{"too many SGEs", verbs.SendWR{Opcode: verbs.WRSend, SGL: three}, provider.TooManySGE},
		{"too many SGEs for a write", verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGL: three}, provider.TooManySGE},
		{"read into two SGEs", verbs.SendWR{Opcode: verbs.WRRDMARead, SGL: two}, provider.TooManySGE},
		{"length over 2^32-1", verbs.SendWR{Opcode: verbs.WRSend, SGL: huge}, provider.TooLong},
		{"two SGEs are fine", verbs.SendWR{Opcode: verbs.WRSend, SGL: two}, provider.OK},
	}
	for _, tc := range tests {
		if _, st := validateSend(&l, &tc.wr); st != tc.want {
			t.Errorf("%s: %v (%d), want %v (%d)", tc.name, st.Err(), st, tc.want.Err(), tc.want)
		}
	}
}

// Receive RQEs: id, SGEs, and the flags word exactly VALID with num_sge; the word is left for publishWQE.
func TestRecvRQEEncoding(t *testing.T) {
	for _, n := range []int{0, 1, 2, 6} {
		var sgl []verbs.SGE
		for i := 0; i < n; i++ {
			sgl = append(sgl, verbs.SGE{Addr: uint64(0x1000 * (i + 1)), Length: uint32(10 + i), LKey: uint32(100 + i)})
		}
		var rqe abi.SiwRqe
		wr := verbs.RecvWR{WRID: uint64(n) + 40, SGL: sgl}
		w := encodeRecv(unsafe.Pointer(&rqe), &wr)
		if rqe.Flags != 0 || rqe.NumSge != 0 || rqe.Opcode != 0 {
			t.Fatalf("%d SGEs: encodeRecv stored the flags word", n)
		}
		if w != (wqeWord{flags: abi.SIW_WQE_VALID, numSGE: uint8(n)}) {
			t.Errorf("%d SGEs: word %+v", n, w)
		}
		if rqe.Id != uint64(n)+40 {
			t.Errorf("%d SGEs: id %d", n, rqe.Id)
		}
		for i, s := range sgl {
			if rqe.Sge[i] != (abi.SiwSge{Laddr: s.Addr, Length: s.Length, Lkey: s.LKey}) {
				t.Errorf("%d SGEs: sge[%d] = %+v, want %+v", n, i, rqe.Sge[i], s)
			}
		}
	}
}
