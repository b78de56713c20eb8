package uverbs

import (
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestODPCapStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{ODPSupport.String(), "ODP_SUPPORT"},
		{(ODPSupport | ODPSupportImplicit).String(), "ODP_SUPPORT|ODP_SUPPORT_IMPLICIT"},
		{ODPGeneralCap(0).String(), "0"},
		{ODPGeneralCap(1 << 5).String(), "0x20"},
		{(ODPSend | ODPRecv | ODPWrite | ODPRead | ODPAtomic | ODPSRQRecv).String(),
			"SUPPORT_SEND|SUPPORT_RECV|SUPPORT_WRITE|SUPPORT_READ|SUPPORT_ATOMIC|SUPPORT_SRQ"},
		{(ODPFlush | ODPAtomicWrite).String(), "SUPPORT_FLUSH|SUPPORT_ATOMIC_WRITE"},
		{(ODPSend | 1<<9).String(), "SUPPORT_SEND|0x200"},
		{AdvicePrefetch.String(), "PREFETCH"},
		{AdvicePrefetchWrite.String(), "PREFETCH_WRITE"},
		{AdvicePrefetchNoFault.String(), "PREFETCH_NO_FAULT"},
		{AdviseMRAdvice(7).String(), "AdviseMRAdvice(7)"},
		{AdviseMRFlush.String(), "FLUSH"},
		{AdviseMRFlags(0).String(), "0"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	// The values are the kernel uAPI's (enum ib_uverbs_odp_*_cap_bits, 6.16 headers).
	if ODPSRQRecv != 0x20 || ODPFlush != 0x40 || ODPAtomicWrite != 0x80 || ODPSupportImplicit != 2 {
		t.Error("ODP capability values differ from the uAPI")
	}
}

func TestDeviceAttrODP(t *testing.T) {
	a := &DeviceAttr{ODPGeneralCaps: ODPSupport, ODPRCCaps: ODPSend | ODPFlush, ODPUCCaps: ODPRecv, ODPUDCaps: ODPSend,
		XRCODPCaps: ODPSRQRecv}
	want := ODPCaps{General: ODPSupport, RC: ODPSend | ODPFlush, UC: ODPRecv, UD: ODPSend, XRC: ODPSRQRecv}
	if got := a.ODP(); got != want {
		t.Errorf("ODP() = %+v, want %+v", got, want)
	}
}

// fakeCapsContext is a context whose capabilities are already known, so the checks made before any system
// call can run without a device.
func fakeCapsContext(caps DeviceCap, odp ODPGeneralCap) *Context {
	c := &Context{dev: Device{Name: "fake0"}, fd: -1}
	c.capsOnce.Do(func() { c.caps, c.odp = caps, odp })
	return c
}

// A device without ODP_SUPPORT gets the typed not-supported error before the kernel is asked (6.1 would answer
// EINVAL, 6.2+ EOPNOTSUPP).
func TestRegMROnDemandWithoutODP(t *testing.T) {
	pd := &PD{ctx: fakeCapsContext(0, 0)}
	buf := make([]byte, 4096)
	_, err := pd.RegMR(buf, AccessLocalWrite|AccessOnDemand)
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("RegMR(ON_DEMAND) without ODP: %v, want ErrNotSupported", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Device != "fake0" || e.Op != "reg MR" {
		t.Errorf("error %#v does not name the verb and device", err)
	}
	mr := &MR{pd: pd}
	if err := mr.Rereg(ReregAccess, nil, nil, AccessLocalWrite|AccessOnDemand); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Rereg to ON_DEMAND without ODP: %v, want ErrNotSupported", err)
	}
}

// Bad AdviseMR arguments are refused with EINVAL before any system call (the fake context has no fd).
func TestAdviseMRRejects(t *testing.T) {
	pd := &PD{ctx: fakeCapsContext(0, ODPSupport)}
	sge := []SGE{{Addr: 0x1000, Length: 4096, LKey: 1}}
	for name, err := range map[string]error{
		"no SGEs":        pd.AdviseMR(AdvicePrefetch, 0, nil),
		"too many SGEs":  pd.AdviseMR(AdvicePrefetch, 0, make([]SGE, maxAdviseSGEs+1)),
		"unknown advice": pd.AdviseMR(AdviseMRAdvice(3), 0, sge),
		"unknown flag":   pd.AdviseMR(AdvicePrefetch, AdviseMRFlags(2), sge),
	} {
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	if maxAdviseSGEs != 4095 {
		t.Errorf("maxAdviseSGEs = %d", maxAdviseSGEs)
	}
	if unsafe.Sizeof(SGE{}) != 16 || unsafe.Offsetof(SGE{}.LKey) != 12 {
		t.Error("SGE is not laid out as struct ib_uverbs_sge")
	}
}
