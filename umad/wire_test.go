package umad

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The golden vectors are written by hand from the layouts in
// include/uapi/rdma/ib_user_mad.h (x86-64, little-endian host fields) and
// IB spec 13.4.3 / 16.1.3; the lab test checks the same encoders against
// the kernel and rxe.

func TestHdrMarshalGolden(t *testing.T) {
	h := Hdr{AgentID: 3, Status: 0, TimeoutMS: 1000, Retries: 3, Length: 0,
		Addr: Addr{QPN: 1, QKey: QP1QKey, LID: 0x1234, SL: 5, PathBits: 1, GRH: true, GIDIndex: 2,
			HopLimit: 255, TrafficClass: 0x10, FlowLabel: 0xabcde, PKeyIndex: 7}}
	for i := range h.GID {
		h.GID[i] = byte(0xf0 + i)
	}
	want := unhex(t, `
		03000000 00000000 e8030000 03000000 00000000
		00000001 80010000 1234 05 01 01 02 ff 10
		f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff
		000abcde 0700 000000000000`)
	got := h.Marshal()
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal:\n got %x\nwant %x", got, want)
	}
	back, err := ParseHdr(got)
	if err != nil || back != h {
		t.Fatalf("ParseHdr round trip: %+v, %v", back, err)
	}
}

func TestNewPMAGetGolden(t *testing.T) {
	m := NewPMAGet(0x0102030405060708, AttrPortCounters, 1)
	want := make([]byte, MADSize)
	copy(want, unhex(t, `01 04 01 01 0000 0000 0102030405060708 0012 0000 00000000`))
	want[65] = 1
	if !bytes.Equal(m, want) {
		t.Fatalf("NewPMAGet:\n got %x\nwant %x", m, want)
	}
	cpi := NewPMAGet(9, AttrClassPortInfo, 1)
	if cpi[65] != 0 || cpi[17] != 1 {
		t.Fatalf("ClassPortInfo GET carries a port select or wrong attr: %x", cpi[:70])
	}
}

func TestPortCountersGolden(t *testing.T) {
	c := PortCounters{PortSelect: 1, CounterSelect: 0xffff, SymbolErrorCounter: 0x0102, LinkErrorRecoveryCounter: 3,
		LinkDownedCounter: 4, PortRcvErrors: 0x0506, PortRcvRemotePhysicalErrors: 0x0708, PortRcvSwitchRelayErrors: 0x090a,
		PortXmitDiscards: 0x0b0c, PortXmitConstraintErrors: 0x0d, PortRcvConstraintErrors: 0x0e, CounterSelect2: 0x0f,
		LocalLinkIntegrityErrors: 0xa, ExcessiveBufferOverrunErrors: 0xb, QP1Dropped: 0x1112, VL15Dropped: 0x1314,
		PortXmitData: 0x15161718, PortRcvData: 0x191a1b1c, PortXmitPkts: 0x1d1e1f20, PortRcvPkts: 0x21222324, PortXmitWait: 0x25262728}
	checkAttrGolden(t, c, c.Put, ParsePortCounters, `00 01 ffff 0102 03 04 0506 0708 090a 0b0c 0d 0e 0f ab 1112 1314
		15161718 191a1b1c 1d1e1f20 21222324 25262728`)
}

func TestPortCountersExtendedGolden(t *testing.T) {
	c := PortCountersExtended{PortSelect: 1, CounterSelect: 0xff00, CounterSelect2: 0x01020304,
		PortXmitData: 0x1112131415161718, PortRcvData: 2, PortXmitPkts: 3, PortRcvPkts: 4,
		PortUnicastXmitPkts: 5, PortUnicastRcvPkts: 6, PortMulticastXmitPkts: 7, PortMulticastRcvPkts: 0x8000000000000008}
	checkAttrGolden(t, c, c.Put, ParsePortCountersExtended, `00 01 ff00 01020304 1112131415161718 0000000000000002
		0000000000000003 0000000000000004 0000000000000005 0000000000000006 0000000000000007 8000000000000008`)
}

// checkAttrGolden puts v into a MAD, checks its attribute area against the
// golden bytes want (hex, as long as the attribute) and parses v back.
func checkAttrGolden[T comparable](t *testing.T, v T, put func([]byte), parse func([]byte) (T, error), want string) {
	t.Helper()
	m := make([]byte, MADSize)
	put(m)
	w := unhex(t, want)
	if got := m[PMADataOffset : PMADataOffset+len(w)]; !bytes.Equal(got, w) {
		t.Fatalf("%T.Put:\n got %x\nwant %x", v, got, w)
	}
	back, err := parse(m)
	if err != nil || back != v {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestClassPortInfo(t *testing.T) {
	m := make([]byte, MADSize)
	copy(m[PMADataOffset:], unhex(t, `01 01 0200 00000045`))
	c, err := ParsePMAClassPortInfo(m)
	if err != nil {
		t.Fatal(err)
	}
	if c.CapMask != 0x200 || c.CapMask2 != 2 || c.RespTime != 5 || c.BaseVersion != 1 {
		t.Fatalf("%+v", c)
	}
}

func TestShortInputs(t *testing.T) {
	if _, err := ParseHdr(make([]byte, 63)); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParseHdr: %v", err)
	}
	if _, err := ParseMADHdr(make([]byte, 23)); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParseMADHdr: %v", err)
	}
	if _, err := ParsePortCounters(make([]byte, 100)); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParsePortCounters: %v", err)
	}
	if _, err := ParsePortCountersExtended(make([]byte, 100)); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParsePortCountersExtended: %v", err)
	}
	if _, err := ParsePMAClassPortInfo(make([]byte, 10)); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParsePMAClassPortInfo: %v", err)
	}
}

func TestErrorVocabulary(t *testing.T) {
	e := &Error{Op: "call", Device: "umad0", Kind: ErrTimeout, Err: unix.ETIMEDOUT}
	if !errors.Is(e, ErrTimeout) || !errors.Is(e, unix.ETIMEDOUT) {
		t.Errorf("timeout error does not match: %v", e)
	}
	e2 := &Error{Op: "recv", Device: "umad0", Kind: ErrTimeout}
	if !errors.Is(e2, unix.ETIMEDOUT) {
		t.Errorf("ErrTimeout kind should match ETIMEDOUT")
	}
	e3 := &Error{Op: "register", Device: "umad0", Err: unix.EPERM}
	if !errors.Is(e3, unix.EPERM) || errors.Is(e3, ErrTimeout) {
		t.Errorf("errno error: %v", e3)
	}
	e4 := &Error{Op: "call", Kind: ErrMADStatus, Err: &StatusError{Status: 0x0c}}
	var se *StatusError
	if !errors.Is(e4, ErrMADStatus) || !errors.As(e4, &se) || se.Status != 0x0c {
		t.Errorf("status error: %v", e4)
	}
	if got := e3.Error(); got != "umad register umad0: operation not permitted" {
		t.Errorf("text %q", got)
	}
}

func FuzzParseHdr(f *testing.F) {
	f.Add(make([]byte, HdrSize))
	f.Add((&Hdr{AgentID: 1, Addr: Addr{QPN: 1, GRH: true}}).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHdr(b)
		if err != nil {
			if len(b) >= HdrSize {
				t.Fatalf("error on %d bytes: %v", len(b), err)
			}
			return
		}
		// Re-encoding reproduces every defined byte (the GRH flag is
		// normalized to 0/1, reserved bytes to 0).
		re := h.Marshal()
		want := append([]byte(nil), b[:HdrSize]...)
		if want[32] != 0 {
			want[32] = 1
		}
		clear(want[58:64])
		if !bytes.Equal(re, want) {
			t.Fatalf("re-encode:\n got %x\nwant %x", re, want)
		}
	})
}

func FuzzParseMAD(f *testing.F) {
	f.Add(NewPMAGet(1, AttrPortCounters, 1))
	f.Add(make([]byte, 30))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := ParseMADHdr(b); err == nil {
			m := make([]byte, MADHdrSize)
			h.Put(m)
			want := append([]byte(nil), b[:MADHdrSize]...)
			want[18], want[19] = 0, 0
			if !bytes.Equal(m, want) {
				t.Fatalf("MAD header re-encode:\n got %x\nwant %x", m, want)
			}
		}
		if c, err := ParsePortCounters(b); err == nil {
			checkReencode(t, "PortCounters", b, 44, c.Put)
		}
		if c, err := ParsePortCountersExtended(b); err == nil {
			checkReencode(t, "PortCountersExtended", b, 72, c.Put)
		}
		if c, err := ParsePMAClassPortInfo(b); err == nil && c.RespTime > 31 {
			t.Fatalf("RespTime %d", c.RespTime)
		}
		_, _ = parsePacket(b)
	})
}

// checkReencode checks that put, given an attribute parsed from the MAD b,
// writes b's attribute area (n bytes) again, but for the reserved byte 0.
func checkReencode(t *testing.T, name string, b []byte, n int, put func([]byte)) {
	t.Helper()
	m := make([]byte, MADSize)
	put(m)
	want := append([]byte(nil), b[PMADataOffset:PMADataOffset+n]...)
	want[0] = 0
	if !bytes.Equal(m[PMADataOffset:PMADataOffset+n], want) {
		t.Fatalf("%s re-encode differs", name)
	}
}

// MADHdr.String, the header half of umad_dump: every field, in hex as umad_dump prints them.
func TestMADHdrString(t *testing.T) {
	h := MADHdr{MgmtClass: 0x04, ClassVersion: 1, Method: 0x81, Status: 0x1c, TID: 0x1122334455667788, AttrID: 0x12, AttrMod: 0xa}
	want := "class 0x04 v1 method 0x81 status 0x001c tid 0x1122334455667788 attr 0x0012 mod 0x0000000a"
	if got := h.String(); got != want {
		t.Errorf("MADHdr.String() = %q, want %q", got, want)
	}
}
