package verbs

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

func TestWCLayoutIsTheKernels(t *testing.T) {
	var wc WC
	var k abi.IbUverbsWc
	if unsafe.Sizeof(wc) != unsafe.Sizeof(k) || unsafe.Sizeof(wc) != 48 {
		t.Fatalf("WC is %d bytes, struct ib_uverbs_wc %d", unsafe.Sizeof(wc), unsafe.Sizeof(k))
	}
	offs := []struct {
		name    string
		got, kw uintptr
	}{
		{"wr_id", unsafe.Offsetof(wc.WRID), unsafe.Offsetof(k.WrId)},
		{"status", unsafe.Offsetof(wc.Status), unsafe.Offsetof(k.Status)},
		{"opcode", unsafe.Offsetof(wc.Opcode), unsafe.Offsetof(k.Opcode)},
		{"vendor_err", unsafe.Offsetof(wc.VendorErr), unsafe.Offsetof(k.VendorErr)},
		{"byte_len", unsafe.Offsetof(wc.ByteLen), unsafe.Offsetof(k.ByteLen)},
		{"ex", unsafe.Offsetof(wc.Imm), unsafe.Offsetof(k.Ex)},
		{"qp_num", unsafe.Offsetof(wc.QPNum), unsafe.Offsetof(k.QpNum)},
		{"src_qp", unsafe.Offsetof(wc.SrcQP), unsafe.Offsetof(k.SrcQp)},
		{"wc_flags", unsafe.Offsetof(wc.Flags), unsafe.Offsetof(k.WcFlags)},
		{"pkey_index", unsafe.Offsetof(wc.PKeyIndex), unsafe.Offsetof(k.PkeyIndex)},
		{"slid", unsafe.Offsetof(wc.SLID), unsafe.Offsetof(k.Slid)},
		{"sl", unsafe.Offsetof(wc.SL), unsafe.Offsetof(k.Sl)},
		{"dlid_path_bits", unsafe.Offsetof(wc.DLIDPathBits), unsafe.Offsetof(k.DlidPathBits)},
		{"port_num", unsafe.Offsetof(wc.PortNum), unsafe.Offsetof(k.PortNum)},
	}
	for _, o := range offs {
		if o.got != o.kw {
			t.Errorf("%s at %d, kernel %d", o.name, o.got, o.kw)
		}
	}
}

func TestEveryEnumValueHasAName(t *testing.T) {
	for s := WCSuccess; s <= WCTMRndvIncomplete; s++ {
		if n := s.String(); n == "" || strings.Contains(n, "(") {
			t.Errorf("WCStatus %d: %q", uint32(s), n)
		}
	}
	for o := WRRDMAWrite; o <= WRSendWithInv; o++ {
		if n := o.String(); strings.Contains(n, "(") {
			t.Errorf("WROpcode %d: %q", uint32(o), n)
		}
	}
	for _, o := range []WCOpcode{WCSend, WCRDMAWrite, WCRDMARead, WCCompSwap, WCFetchAdd, WCBindMW, WCLocalInv, WCRecv, WCRecvRDMAWithImm} {
		if n := o.String(); strings.Contains(n, "(") {
			t.Errorf("WCOpcode %d: %q", uint32(o), n)
		}
	}
	for s := QPStateReset; s <= QPStateErr; s++ {
		if n := s.String(); strings.Contains(n, "(") {
			t.Errorf("QPState %d: %q", s, n)
		}
	}
	for _, q := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD, QPTypeRawPacket, QPTypeXRCSend, QPTypeXRCRecv} {
		if n := q.String(); strings.Contains(n, "(") {
			t.Errorf("QPType %d: %q", q, n)
		}
	}
	if got := (SendFlags(1<<7) | SendFence).String(); got != "FENCE|0x80" {
		t.Errorf("unnamed flag bits: %q", got)
	}
	if got := SendFlags(0).String(); got != "0" {
		t.Errorf("no flags: %q", got)
	}
}

func TestWCErrDoesNotAllocate(t *testing.T) {
	wc := WC{Status: WCRemAccessErr}
	var err error
	if n := testing.AllocsPerRun(100, func() { err = wc.Err() }); n != 0 {
		t.Fatalf("WC.Err allocates %v times", n)
	}
	var st WCStatus
	if !errors.As(err, &st) || st != WCRemAccessErr {
		t.Fatalf("errors.As: %v", st)
	}
}

// The port states' names (ibv_port_state_str's job, with the kernel's names: "ACTIVE" where libibverbs prints
// "PORT_ACTIVE", which the tools print themselves).
func TestPortStateNames(t *testing.T) {
	for s, want := range map[PortState]string{PortNOP: "NOP", PortDown: "DOWN", PortInit: "INIT", PortArmed: "ARMED",
		PortActive: "ACTIVE", PortActiveDefer: "ACTIVE_DEFER", 9: "PortState(9)"} {
		if got := s.String(); got != want {
			t.Errorf("PortState(%d) = %q, want %q", s, got, want)
		}
	}
}
