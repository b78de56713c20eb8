package siw

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// kernelCQE is a completion as the kernel's siw writes it into a user CQ.
func kernelCQE(id uint64, opcode uint8, status uint16, bytes uint32) abi.SiwCqe {
	return abi.SiwCqe{Id: id, Opcode: opcode, Status: status, Bytes: bytes, BaseQp: 0x1100000022} // qp_id
}

// Every opcode and status siw writes, and what is outside its tables, decoded into verbs.WC.
func TestDecodeCQE(t *testing.T) {
	ok := func(op verbs.WCOpcode) verbs.WC {
		return verbs.WC{WRID: 5, Opcode: op, ByteLen: 77, QPNum: 0x22}
	}
	failed := func(st verbs.WCStatus, op verbs.WCOpcode, vendor uint32) verbs.WC {
		return verbs.WC{WRID: 5, Status: st, Opcode: op, VendorErr: vendor, ByteLen: 77, QPNum: 0x22}
	}
	tests := []struct {
		name   string
		opcode uint8
		status uint16
		flags  uint8
		imm    uint64
		want   verbs.WC
	}{
		{"write", abi.SIW_OP_WRITE, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCRDMAWrite)},
		{"read", abi.SIW_OP_READ, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCRDMARead)},
		{"read with local invalidate", abi.SIW_OP_READ_LOCAL_INV, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCRDMARead)},
		{"send", abi.SIW_OP_SEND, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCSend)},
		{"send with imm", abi.SIW_OP_SEND_WITH_IMM, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCSend)},
		{"send with invalidate", abi.SIW_OP_SEND_REMOTE_INV, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCSend)},
		{"fetch and add", abi.SIW_OP_FETCH_AND_ADD, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCFetchAdd)},
		{"compare and swap", abi.SIW_OP_COMP_AND_SWAP, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCCompSwap)},
		{"receive", abi.SIW_OP_RECEIVE, abi.SIW_WC_SUCCESS, 0, 0, ok(verbs.WCRecv)},
		{"receive that invalidated an STag", abi.SIW_OP_RECEIVE, abi.SIW_WC_SUCCESS, abi.SIW_WQE_REM_INVAL, 0xffffffff_0a0b0c0d,
			verbs.WC{WRID: 5, Opcode: verbs.WCRecv, ByteLen: 77, QPNum: 0x22, Flags: verbs.WCWithInv, Imm: 0x0a0b0c0d}},
		{"imm_data is not immediate data", abi.SIW_OP_RECEIVE, abi.SIW_WC_SUCCESS, 0, 0x1234, ok(verbs.WCRecv)},
		{"other flags ignored", abi.SIW_OP_SEND, abi.SIW_WC_SUCCESS, abi.SIW_WQE_SIGNALLED | abi.SIW_WQE_SOLICITED | abi.SIW_WQE_INLINE, 0, ok(verbs.WCSend)},
		{"local length error", abi.SIW_OP_RECEIVE, abi.SIW_WC_LOC_LEN_ERR, 0, 0, failed(verbs.WCLocLenErr, verbs.WCRecv, 0)},
		{"local protection error", abi.SIW_OP_SEND, abi.SIW_WC_LOC_PROT_ERR, 0, 0, failed(verbs.WCLocProtErr, verbs.WCSend, 0)},
		{"local QP operation error", abi.SIW_OP_SEND, abi.SIW_WC_LOC_QP_OP_ERR, 0, 0, failed(verbs.WCLocQPOpErr, verbs.WCSend, 0)},
		{"flushed", abi.SIW_OP_RECEIVE, abi.SIW_WC_WR_FLUSH_ERR, 0, 0, failed(verbs.WCWRFlushErr, verbs.WCRecv, 0)},
		{"bad response", abi.SIW_OP_READ, abi.SIW_WC_BAD_RESP_ERR, 0, 0, failed(verbs.WCBadRespErr, verbs.WCRDMARead, 0)},
		{"local access error", abi.SIW_OP_WRITE, abi.SIW_WC_LOC_ACCESS_ERR, 0, 0, failed(verbs.WCLocAccessErr, verbs.WCRDMAWrite, 0)},
		{"remote access error", abi.SIW_OP_WRITE, abi.SIW_WC_REM_ACCESS_ERR, 0, 0, failed(verbs.WCRemAccessErr, verbs.WCRDMAWrite, 0)},
		{"remote invalid request", abi.SIW_OP_SEND, abi.SIW_WC_REM_INV_REQ_ERR, 0, 0, failed(verbs.WCRemInvReqErr, verbs.WCSend, 0)},
		{"general error", abi.SIW_OP_SEND, abi.SIW_WC_GENERAL_ERR, 0, 0, failed(verbs.WCGeneralErr, verbs.WCSend, 0)},
		// Outside rdma-core's tables (which it indexes unchecked): a failed completion carrying the raw values.
		{"status out of range", abi.SIW_OP_SEND, abi.SIW_NUM_WC_STATUS, 0, 0, failed(verbs.WCGeneralErr, 0, abi.SIW_OP_SEND<<16|abi.SIW_NUM_WC_STATUS)},
		{"read response opcode", abi.SIW_OP_READ_RESPONSE, abi.SIW_WC_SUCCESS, 0, 0, failed(verbs.WCGeneralErr, 0, abi.SIW_OP_READ_RESPONSE<<16)},
		{"REG_MR opcode", abi.SIW_OP_REG_MR, abi.SIW_WC_WR_FLUSH_ERR, 0, 0, failed(verbs.WCGeneralErr, 0, abi.SIW_OP_REG_MR<<16|abi.SIW_WC_WR_FLUSH_ERR)},
		{"garbage", 0xff, 0xffff, 0, 0, failed(verbs.WCGeneralErr, 0, 0xff_ffff)},
	}
	for _, tc := range tests {
		e := kernelCQE(5, tc.opcode, tc.status, 77)
		e.Flags = abi.SIW_WQE_VALID | tc.flags
		e.ImmData = tc.imm
		wc := verbs.WC{WRID: 99, SrcQP: 1, PKeyIndex: 2, SLID: 3, SL: 4, DLIDPathBits: 5, PortNum: 6, Imm: 7} // stale
		decodeCQE(&e, &wc)
		if wc != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, wc, tc.want)
		}
	}
}

// Poll through many wrap-arounds: oldest first, each entry handed back (flags 0) once read, none returned
// twice, none while the kernel has not set VALID.
func TestPollWrapAround(t *testing.T) {
	k := newFakeKernel(t)
	c := k.newCQ(8)
	wc := make([]verbs.WC, 5)
	if n, st := c.Poll(wc); n != 0 || st != provider.OK {
		t.Fatalf("Poll on an empty CQ = %d, %v", n, st.Err())
	}
	var produced, polled uint64
	for round := 0; round < 300; round++ {
		for i := 0; i <= round%9; i++ {
			if !c.produce(kernelCQE(produced, abi.SIW_OP_RECEIVE, 0, uint32(produced))) {
				if produced-polled != 8 {
					t.Fatalf("round %d: CQ full with %d outstanding, want 8", round, produced-polled)
				}
				break
			}
			produced++
		}
		for polled < produced {
			n := pollN(c.Poll(wc))
			if n == 0 || n > len(wc) {
				t.Fatalf("round %d: Poll = %d with %d outstanding", round, n, produced-polled)
			}
			for _, w := range wc[:n] {
				if w.WRID != polled || w.ByteLen != uint32(polled) || w.Opcode != verbs.WCRecv || w.QPNum != 0x22 {
					t.Fatalf("round %d: completion %+v, want wr_id %d", round, w, polled)
				}
				polled++
			}
		}
		for i := uint32(0); i < 8; i++ {
			if fw := atomic.LoadUint32(flagsWord(c.k.slot(i))); unpackCQE(fw).flags != 0 {
				t.Fatalf("round %d: entry %d still flagged %#x after it was polled", round, i, fw)
			}
		}
	}
	// Poll with no room consumes nothing.
	c.produce(kernelCQE(1, abi.SIW_OP_SEND, 0, 0))
	if n := pollN(c.Poll(nil)); n != 0 || unpackCQE(*flagsWord(c.k.slot(c.get))).flags == 0 {
		t.Fatalf("Poll(nil) = %d, or it consumed the entry", n)
	}
	c.Destroyed()
	if n, st := c.Poll(wc); n != 0 || st != provider.Destroyed {
		t.Fatalf("Poll after Destroyed = %d, %v", n, st.Err())
	}
}

// Poll stops at the first entry the kernel has not flagged VALID, even if later ones are.
func TestPollStopsAtInvalid(t *testing.T) {
	k := newFakeKernel(t)
	c := k.newCQ(4)
	c.produce(kernelCQE(1, abi.SIW_OP_SEND, 0, 0))
	// Entry 2 written out of order: not VALID at 1, VALID at 2.
	e := (*abi.SiwCqe)(c.k.slot(2))
	e.Id = 3
	atomic.StoreUint32(flagsWord(unsafe.Pointer(e)), cqeWord{flags: abi.SIW_WQE_VALID}.pack())
	wc := make([]verbs.WC, 4)
	if n := pollN(c.Poll(wc)); n != 1 || wc[0].WRID != 1 {
		t.Fatalf("Poll = %d (%+v), want only completion 1", n, wc[0])
	}
}

// Arm stores the notify flags rdma-core's siw_notify_cq stores, with no system call; creation disarms.
func TestArm(t *testing.T) {
	k := newFakeKernel(t)
	c := k.newCQ(4)
	if got := c.notify(); got != abi.SIW_NOTIFY_NOT {
		t.Fatalf("new CQ's notify flags %#x, want SIW_NOTIFY_NOT", got)
	}
	for _, tc := range []struct {
		solicited bool
		want      uint32
	}{
		{false, abi.SIW_NOTIFY_SOLICITED | abi.SIW_NOTIFY_NEXT_COMPLETION},
		{true, abi.SIW_NOTIFY_SOLICITED},
		{false, abi.SIW_NOTIFY_SOLICITED | abi.SIW_NOTIFY_NEXT_COMPLETION},
	} {
		if err := c.Arm(tc.solicited); err != nil {
			t.Fatal(err)
		}
		if got := c.notify(); got != tc.want {
			t.Errorf("Arm(%v): notify flags %#x, want %#x", tc.solicited, got, tc.want)
		}
		atomic.StoreUint32((*uint32)(c.k.end()), abi.SIW_NOTIFY_NOT) // the kernel raised the event and disarmed
		c.EventReceived()
	}
	// The notify word is after the entries: arming never touches a completion.
	for i := uint32(0); i < 4; i++ {
		if *flagsWord(c.k.slot(i)) != 0 {
			t.Fatalf("Arm wrote into entry %d", i)
		}
	}
	c.Destroyed()
	if err := c.Arm(false); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Arm after Destroyed = %v, want EINVAL", err)
	}
}

// FuzzDecodeCQE decodes arbitrary completion bytes (the kernel's, or anything else's with the mapping): it
// never panics, the status and opcode are always ones verbs defines, and a known opcode and status decode as
// rdma-core's tables say.
func FuzzDecodeCQE(f *testing.F) {
	f.Add(make([]byte, abi.SizeofSiwCqe))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0x21, 8, 4, 0, 10, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e abi.SiwCqe
		copy(unsafeBytes(unsafe.Pointer(&e), abi.SizeofSiwCqe), b)
		var wc verbs.WC
		decodeCQE(&e, &wc)
		if wc.Status > verbs.WCTMRndvIncomplete || (wc.Opcode > verbs.WCAtomicWrite && wc.Opcode != verbs.WCRecv) {
			t.Fatalf("decoded %+v from %+v: undefined status or opcode", wc, e)
		}
		if wc.WRID != e.Id || wc.ByteLen != e.Bytes || wc.QPNum != uint32(e.BaseQp) || wc.SrcQP != 0 {
			t.Fatalf("decoded %+v from %+v", wc, e)
		}
		known := int(e.Opcode) < len(cqeOpcodes) && int(e.Status) < len(cqeStatuses)
		switch {
		case known && (wc.Opcode != cqeOpcodes[e.Opcode] || wc.Status != cqeStatuses[e.Status] || wc.VendorErr != 0):
			t.Fatalf("decoded %+v from known opcode %d status %d", wc, e.Opcode, e.Status)
		case !known && (wc.Status != verbs.WCGeneralErr || wc.VendorErr != uint32(e.Opcode)<<16|uint32(e.Status)):
			t.Fatalf("decoded %+v from unknown opcode %d status %d", wc, e.Opcode, e.Status)
		}
		if (e.Flags&abi.SIW_WQE_REM_INVAL != 0) != (wc.Flags == verbs.WCWithInv) || wc.Flags&^verbs.WCWithInv != 0 {
			t.Fatalf("flags %#x decoded as %v", e.Flags, wc.Flags)
		}
	})
}

// FuzzPoll lets the "kernel" leave arbitrary bytes in every entry and start Poll anywhere: Poll returns the
// run of VALID entries from its position (at most what fits), hands exactly those back, and moves on by
// exactly that many.
func FuzzPoll(f *testing.F) {
	f.Add(uint8(0), uint8(4), []byte{})
	f.Add(uint8(3), uint8(8), []byte{1, 1, 1, 0, 1})
	f.Add(uint8(7), uint8(255), []byte{0xff})
	f.Fuzz(func(t *testing.T, start, room uint8, entries []byte) {
		k := newFakeKernel(t)
		c := k.newCQ(8)
		for i := uint32(0); i < 8; i++ {
			slot := unsafeBytes(c.k.slot(i), abi.SizeofSiwCqe)
			for j := range slot {
				if len(entries) > 0 {
					slot[j] = entries[(int(i)*len(slot)+j)%len(entries)]
				}
			}
		}
		c.get = uint32(start) % 8
		run := 0
		for run < 8 && unpackCQE(*flagsWord(c.k.slot((c.get + uint32(run)) % 8))).flags&abi.SIW_WQE_VALID != 0 {
			run++
		}
		from := c.get
		wc := make([]verbs.WC, int(room))
		n := pollN(c.Poll(wc))
		if n != min(run, len(wc)) {
			t.Fatalf("Poll = %d with a run of %d VALID entries and room for %d", n, run, len(wc))
		}
		for i := 0; i < 8; i++ {
			flags := unpackCQE(*flagsWord(c.k.slot((from + uint32(i)) % 8))).flags
			if i < n && flags != 0 {
				t.Fatalf("polled entry %d still flagged %#x", i, flags)
			}
		}
		if c.get != (from+uint32(n))%8 {
			t.Fatalf("position %d after %d completions from %d", c.get, n, from)
		}
	})
}
