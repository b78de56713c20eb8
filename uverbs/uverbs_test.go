package uverbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

func TestParseGUID(t *testing.T) {
	g, err := ParseGUID("0002:c903:00a1:b2c3\n")
	if err != nil || g != 0x0002c90300a1b2c3 {
		t.Fatalf("got %#x, %v", uint64(g), err)
	}
	if g.String() != "0002:c903:00a1:b2c3" {
		t.Fatalf("String: %s", g)
	}
	for _, bad := range []string{"", "0002:c903:00a1", "0002:c903:00a1:b2c3:0000", "000g:c903:00a1:b2c3", "2:c903:00a1:b2c3"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}

func FuzzParseGUID(f *testing.F) {
	f.Add("0002:c903:00a1:b2c3")
	f.Add("ffff:ffff:ffff:ffff")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGUID(s)
		if err != nil {
			return
		}
		// Whatever parses formats back to a canonical form that parses to the same value.
		if g2, err := ParseGUID(g.String()); err != nil || g2 != g {
			t.Fatalf("%q -> %v -> %v, %v", s, g, g2, err)
		}
	})
}

func TestMTU(t *testing.T) {
	for m, n := range map[MTU]int{MTU256: 256, MTU512: 512, MTU1024: 1024, MTU2048: 2048, MTU4096: 4096, 0: 0, 6: 0} {
		if m.Bytes() != n {
			t.Errorf("%d.Bytes() = %d, want %d", m, m.Bytes(), n)
		}
		if n != 0 && MTUFromBytes(n) != m {
			t.Errorf("MTUFromBytes(%d) = %d", n, MTUFromBytes(n))
		}
	}
	if MTUFromBytes(1500) != 0 {
		t.Error("1500 is not an IB MTU")
	}
}

func TestAccessValidate(t *testing.T) {
	for _, c := range []struct {
		a  Access
		ok bool
	}{
		{AccessLocalWrite, true},
		{AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic, true},
		{AccessRemoteRead, true},
		{AccessRemoteWrite, false},
		{AccessRemoteAtomic, false},
		{1 << 15, false},
		{AccessLocalWrite | AccessRelaxedOrdering, true},
	} {
		err := c.a.Validate()
		if (err == nil) != c.ok {
			t.Errorf("access %#x: err %v, want ok=%v", uint32(c.a), err, c.ok)
		}
		if err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("access %#x: %v is not EINVAL", uint32(c.a), err)
		}
	}
}

func TestErrorIs(t *testing.T) {
	for errno, ns := range map[unix.Errno]bool{unix.EOPNOTSUPP: true, unix.EPROTONOSUPPORT: true, unix.EINVAL: false} {
		err := wrap("create XRCD", "rxe0", errno)
		if errors.Is(err, ErrNotSupported) != ns {
			t.Errorf("%v: Is(ErrNotSupported) = %v", errno, !ns)
		}
		if !errors.Is(err, errno) {
			t.Errorf("%v does not unwrap to its errno", err)
		}
	}
	if got := wrap("create CQ", "rxe0", unix.EINVAL).Error(); got != "create CQ on rxe0: invalid argument" {
		t.Errorf("message %q", got)
	}
}

func TestGIDString(t *testing.T) {
	g := GID{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xbc, 0x32, 0xa1, 0xff, 0xfe, 0x1c, 0x2c, 0x54}
	if g.String() != "fe80:0000:0000:0000:bc32:a1ff:fe1c:2c54" {
		t.Errorf("GID %s", g)
	}
	if g.IsZero() || !(GID{}).IsZero() {
		t.Error("IsZero")
	}
}

// The data path's WC is the kernel's struct ib_uverbs_wc, byte for byte.
func TestWCLayout(t *testing.T) {
	var w WC
	var k abi.IbUverbsWc
	if unsafe.Sizeof(w) != unsafe.Sizeof(k) {
		t.Fatalf("WC is %d bytes, ib_uverbs_wc %d", unsafe.Sizeof(w), unsafe.Sizeof(k))
	}
	pairs := []struct {
		name   string
		ours   uintptr
		kernel uintptr
	}{
		{"wr_id", unsafe.Offsetof(w.WRID), unsafe.Offsetof(k.WrId)},
		{"status", unsafe.Offsetof(w.Status), unsafe.Offsetof(k.Status)},
		{"opcode", unsafe.Offsetof(w.Opcode), unsafe.Offsetof(k.Opcode)},
		{"vendor_err", unsafe.Offsetof(w.VendorErr), unsafe.Offsetof(k.VendorErr)},
		{"byte_len", unsafe.Offsetof(w.ByteLen), unsafe.Offsetof(k.ByteLen)},
		{"qp_num", unsafe.Offsetof(w.QPNum), unsafe.Offsetof(k.QpNum)},
		{"src_qp", unsafe.Offsetof(w.SrcQP), unsafe.Offsetof(k.SrcQp)},
		{"wc_flags", unsafe.Offsetof(w.Flags), unsafe.Offsetof(k.WcFlags)},
		{"pkey_index", unsafe.Offsetof(w.PKeyIndex), unsafe.Offsetof(k.PkeyIndex)},
		{"slid", unsafe.Offsetof(w.SLID), unsafe.Offsetof(k.Slid)},
		{"sl", unsafe.Offsetof(w.SL), unsafe.Offsetof(k.Sl)},
		{"dlid_path_bits", unsafe.Offsetof(w.DLIDPathBits), unsafe.Offsetof(k.DlidPathBits)},
		{"port_num", unsafe.Offsetof(w.PortNum), unsafe.Offsetof(k.PortNum)},
	}
	for _, p := range pairs {
		if p.ours != p.kernel {
			t.Errorf("%s at %d, kernel %d", p.name, p.ours, p.kernel)
		}
	}
}

// Discovery through sysfs, on a fake tree (the fallback when RDMA netlink is unavailable).
func TestDevicesFromSysfs(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("class/infiniband_verbs/uverbs0/ibdev", "rxe0\n")
	write("class/infiniband_verbs/uverbs0/dev", "231:192\n")
	write("class/infiniband_verbs/uverbs0/abi_version", "2\n")
	write("class/infiniband_verbs/abi_version", "6\n")
	write("class/infiniband/rxe0/node_guid", "bc32:a1ff:fe1c:2c54\n")
	write("class/infiniband/rxe0/node_type", "1: CA\n")
	write("class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n")
	devs, err := devicesFromSysfs(root, "/dev/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 {
		t.Fatalf("%d devices", len(devs))
	}
	d := devs[0]
	if d.Name != "rxe0" || d.Chardev != "uverbs0" || d.Major != 231 || d.Minor != 192 || d.ABI != 2 ||
		d.NodeGUID != 0xbc32a1fffe1c2c54 || d.NodeType != 1 || d.NumPorts != 1 || d.DriverID != DriverRXE {
		t.Fatalf("device %+v", d)
	}
	checkAccess(&d)
	if d.Err == nil {
		t.Fatal("a missing /dev node must be reported on the device")
	}
}

// A /dev/infiniband node that is missing, not a character device, or not accessible is reported on its device;
// the other devices are listed and usable (issue #14, item 6).
func TestDevicesReportAccessPerDevice(t *testing.T) {
	root, dev := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"rxe0", "rxe1", "rxe2", "rxe3"} {
		write(fmt.Sprintf("class/infiniband_verbs/uverbs%d/ibdev", i), name+"\n")
	}
	// uverbs0: missing. uverbs1: a regular file. uverbs2: a character device (/dev/null) this process may not
	// open (the access check is faked: root passes every permission check). uverbs3: a good one.
	if err := os.WriteFile(filepath.Join(dev, "uverbs1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"uverbs2", "uverbs3"} {
		if err := os.Symlink("/dev/null", filepath.Join(dev, n)); err != nil {
			t.Fatal(err)
		}
	}
	devs, err := devicesFromSysfs(root, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 4 {
		t.Fatalf("%d devices, want all 4 listed", len(devs))
	}
	denied := func(path string, mode uint32) error {
		if strings.HasSuffix(path, "uverbs2") {
			return unix.EACCES
		}
		return nil
	}
	byName := map[string]error{}
	for i := range devs {
		checkAccessWith(&devs[i], denied)
		byName[devs[i].Name] = devs[i].Err
	}
	for name, want := range map[string]string{"rxe0": "no such file", "rxe1": "not a character device", "rxe2": "permission denied"} {
		if err := byName[name]; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "uverbs") {
			t.Errorf("%s: %v, want an error naming its node and %q", name, err, want)
		}
	}
	if !errors.Is(byName["rxe2"], unix.EACCES) || !errors.Is(byName["rxe0"], unix.ENOENT) {
		t.Errorf("errnos: rxe0 %v, rxe2 %v", byName["rxe0"], byName["rxe2"])
	}
	if byName["rxe3"] != nil {
		t.Errorf("rxe3: %v, want usable", byName["rxe3"])
	}
}
