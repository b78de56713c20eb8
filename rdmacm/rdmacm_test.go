package rdmacm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// The framing of one command: header {cmd, in, out} then the whole struct.
func TestFraming(t *testing.T) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	resp := new(abi.RdmaUcmCreateIdResp)
	req := abi.RdmaUcmCreateId{Uid: 7, Response: ptr(unsafe.Pointer(resp)), Ps: abi.RDMA_PS_TCP, QpType: 2}
	if err := ucmWrite(p[1], abi.RDMA_USER_CM_CMD_CREATE_ID, &req, unsafe.Pointer(resp), 4); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, err := unix.Read(p[0], b)
	if err != nil {
		t.Fatal(err)
	}
	b = b[:n]
	if n != 8+24 {
		t.Fatalf("wrote %d bytes, want 32", n)
	}
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != 0 || le.Uint16(b[4:]) != 24 || le.Uint16(b[6:]) != 4 {
		t.Errorf("header % x", b[:8])
	}
	if le.Uint64(b[8:]) != 7 || le.Uint64(b[16:]) != uint64(uintptr(unsafe.Pointer(resp))) ||
		le.Uint16(b[24:]) != 0x106 || b[26] != 2 {
		t.Errorf("body % x", b[8:])
	}
}

func TestSockaddrRoundTrip(t *testing.T) {
	for _, s := range []string{"10.233.0.1:7174", "[fe80::1]:0", "[::ffff:10.0.0.1]:1", "0.0.0.0:7471"} {
		ap := netip.MustParseAddrPort(s)
		var ss abi.KernelSockaddrStorage
		n, err := putSockaddr(&ss, ap)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]uint16{true: 16, false: 28}[ap.Addr().Is4()]; n != want {
			t.Errorf("%s: size %d, want %d", s, n, want)
		}
		if got := sockaddr(&ss); got != ap {
			t.Errorf("%s: round trip %s", s, got)
		}
	}
	var ss abi.KernelSockaddrStorage
	if _, err := putSockaddr(&ss, netip.AddrPort{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("zero address: %v", err)
	}
}

func eventBytes(r *abi.RdmaUcmEventResp) []byte {
	return bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(r)), abi.SizeofRdmaUcmEventResp))
}

func TestDecodeEvent(t *testing.T) {
	var r abi.RdmaUcmEventResp
	r.Uid, r.Id, r.Event, r.Status = 5, 9, uint32(EventRejected), 28
	c := r.Conn()
	copy(c.PrivateData[:], "go away")
	c.PrivateDataLen = 148
	c.RnrRetryCount = 7
	e, err := decodeEvent(eventBytes(&r), func(uint64) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if e.uid != 5 || e.id != 9 || e.typ != EventRejected || e.status != 28 || len(e.conn.PrivateData) != 148 ||
		!bytes.HasPrefix(e.conn.PrivateData, []byte("go away")) || e.conn.RNRRetryCount != 7 {
		t.Errorf("decoded %+v", e)
	}

	r = abi.RdmaUcmEventResp{Uid: 6, Event: uint32(EventEstablished)}
	u := r.Ud()
	u.QpNum, u.Qkey = 0x11, 0x01234567
	u.AhAttr.IsGlobal, u.AhAttr.Grh.SgidIndex, u.AhAttr.PortNum = 1, 1, 1
	u.AhAttr.Grh.Dgid[15] = 1
	e, err = decodeEvent(eventBytes(&r), func(uid uint64) bool { return uid == 6 })
	if err != nil {
		t.Fatal(err)
	}
	if e.ud.QPNum != 0x11 || e.ud.QKey != 0x01234567 || !e.ud.AHAttr.IsGlobal || e.ud.AHAttr.GRH.SGIDIndex != 1 ||
		e.ud.AHAttr.GRH.DGID[15] != 1 || e.ud.PrivateData != nil {
		t.Errorf("decoded %+v", e)
	}
	if _, err := decodeEvent(make([]byte, 100), func(uint64) bool { return false }); err == nil {
		t.Error("short event decoded")
	}
}

func FuzzDecodeEvent(f *testing.F) {
	var r abi.RdmaUcmEventResp
	r.Event = uint32(EventConnectRequest)
	r.Conn().PrivateDataLen = 56
	f.Add(eventBytes(&r), false)
	f.Add(eventBytes(&r), true)
	f.Add([]byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, b []byte, ud bool) {
		e, err := decodeEvent(b, func(uint64) bool { return ud })
		if err != nil {
			if len(b) >= abi.SizeofRdmaUcmEventResp-12 {
				t.Fatalf("%d bytes rejected: %v", len(b), err)
			}
			return
		}
		if len(e.conn.PrivateData) > 255 || len(e.ud.PrivateData) > 255 {
			t.Fatal("private data longer than the field")
		}
		_ = e.typ.String()
	})
}

func TestEventTypeString(t *testing.T) {
	if s := EventTimewaitExit.String(); s != "RDMA_CM_EVENT_TIMEWAIT_EXIT" {
		t.Error(s)
	}
	// rdma-core 60 and later name the ADDRINFO events, not RDMA_CM_EVENT_USER.
	if s := EventAddrInfoError.String(); s != "RDMA_CM_EVENT_ADDRINFO_ERROR" {
		t.Error(s)
	}
	if s := EventUser.String(); s != "UNKNOWN EVENT" {
		t.Error(s)
	}
}

// Oversize private data fails before any system call: no device needed.
func TestDialPrivateDataTooLong(t *testing.T) {
	_, err := Dial(t.Context(), netip.MustParseAddrPort("10.233.0.1:7174"),
		&Options{PrivateData: make([]byte, MaxConnectPrivateData+1)})
	if !errors.Is(err, ErrPrivateDataTooLong) || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("got %v", err)
	}
	_, err = Dial(t.Context(), netip.MustParseAddrPort("10.233.0.1:7174"),
		&Options{PortSpace: PortSpaceUDP, PrivateData: make([]byte, MaxUDConnectPrivateData)})
	if errors.Is(err, ErrPrivateDataTooLong) {
		t.Fatalf("180 bytes of UD private data refused: %v", err)
	}
}

func TestEventErrorErrno(t *testing.T) {
	for _, tc := range []struct {
		ev   Event
		want error
	}{
		{Event{Type: EventRejected, Status: 8}, unix.ECONNREFUSED},
		{Event{Type: EventUnreachable, Status: -110}, unix.ETIMEDOUT},
		{Event{Type: EventUnreachable, Status: 1}, unix.EHOSTUNREACH},
		{Event{Type: EventAddrError, Status: -19}, unix.ENODEV},
		{Event{Type: EventRouteError, Status: -110}, unix.ETIMEDOUT},
	} {
		err := opErr("connect", 3, &EventError{Event: &tc.ev})
		if !errors.Is(err, tc.want) {
			t.Errorf("%v: %v does not match %v", tc.ev.Type, err, tc.want)
		}
	}
}

// The sysfs fallback of the device lookup (used when RDMA netlink does not
// answer GET_CHARDEV "rdma_cm"), and the ABI version check.
func TestDevicePathSysfs(t *testing.T) {
	if p, err := devicePath(); err == nil && !strings.HasPrefix(p, devDir) {
		t.Fatalf("path %q", p)
	}
	sysfs := t.TempDir()
	if _, err := sysfsDevicePath(sysfs, "/dev/test"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("no rdma_cm: %v, want ENODEV", err)
	}
	dir := filepath.Join(sysfs, "class/misc/rdma_cm")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "abi_version"), []byte("3\n"), 0o644)
	if _, err := sysfsDevicePath(sysfs, "/dev/test"); !errors.Is(err, unix.EPROTONOSUPPORT) {
		t.Errorf("ABI 3: %v, want EPROTONOSUPPORT", err)
	}
	os.WriteFile(filepath.Join(dir, "abi_version"), []byte("4\n"), 0o644)
	if p, err := sysfsDevicePath(sysfs, "/dev/test"); err != nil || p != "/dev/test/rdma_cm" {
		t.Errorf("ABI 4: %q %v", p, err)
	}
}

// ParseAddr (rdma_getaddrinfo's address part for the tools): numeric forms with and without a port, a named
// port, and a port that is no number or service.
func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.233.0.1":       "10.233.0.1:7471",
		"10.233.0.1:19000": "10.233.0.1:19000",
		"[fe80::1]:7":      "[fe80::1]:7",
		"::ffff:10.0.0.1":  "[::ffff:10.0.0.1]:7471",
		"127.0.0.1:ssh":    "127.0.0.1:22",
	} {
		got, err := ParseAddr(in, 7471)
		if err != nil || got.String() != want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseAddr("127.0.0.1:no-such-service-here", 1); err == nil {
		t.Error("a port that is neither a number nor a service parsed")
	}
}
