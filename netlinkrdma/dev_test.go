package netlinkrdma

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

func TestGUIDString(t *testing.T) {
	for _, tc := range []struct {
		g    GUID
		want string
	}{
		{0, "0000:0000:0000:0000"},
		{0x0002c90300a1b2c3, "0002:c903:00a1:b2c3"},
		{0x5054_00ff_fe12_3456, "5054:00ff:fe12:3456"},
		{^GUID(0), "ffff:ffff:ffff:ffff"},
	} {
		if got := tc.g.String(); got != tc.want {
			t.Errorf("GUID(%#x).String():\n- want: %s\n-  got: %s", uint64(tc.g), tc.want, got)
		}
	}
}

func rxeDeviceAttrs(e *attrEncoder) {
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 3)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	e.Uint64(abi.RDMA_NLDEV_ATTR_CAP_FLAGS, 1<<21|1<<12|1)
	e.Uint64(abi.RDMA_NLDEV_ATTR_NODE_GUID, 0x505400fffe123456)
	e.Uint64(abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0x505400fffe123456)
	e.Uint8(abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1)
	e.Uint8(abi.RDMA_NLDEV_ATTR_DEV_DIM, 0)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce")
}

func TestDecodeDevice(t *testing.T) {
	off := false
	want := Device{
		Index: 3, Name: "rxe0", NumPorts: 1, NodeType: NodeTypeCA,
		NodeGUID: 0x505400fffe123456, SysImageGUID: 0x505400fffe123456,
		Caps: 1<<21 | 1<<12 | 1, Protocol: "roce", AdaptiveModeration: &off,
	}
	got, err := decodeDevice(encode(func(e *attrEncoder) {
		e.Uint32(0, 0) // a pad attribute (RDMA_NLDEV_ATTR_PAD) is skipped
		rxeDeviceAttrs(e)
		e.Uint32(999, 7) // unknown attributes from newer kernels are ignored
	}))
	if err != nil {
		t.Fatal(err)
	}
	got.Present = AttrSet{}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("decodeDevice:\n- want: %+v\n-  got: %+v", want, got)
	}
	if names := got.Caps.Names(); !reflect.DeepEqual(names, []string{"RESIZE_MAX_WR", "RC_RNR_NAK_GEN", "MEM_MGT_EXTENSIONS"}) {
		t.Errorf("caps names: %v", names)
	}
}

func TestDecodeDeviceErrors(t *testing.T) {
	for name, b := range map[string][]byte{
		"no name":         encode(func(e *attrEncoder) { e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1) }),
		"short index":     encode(func(e *attrEncoder) { e.Uint8(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1) }),
		"truncated attr":  {8, 0, 1, 0, 1},
		"bad attr length": {2, 0, 1, 0},
		"trailing bytes":  append(encode(rxeDeviceAttrs), 1, 2),
	} {
		if _, err := decodeDevice(b); err == nil {
			t.Errorf("%s: decodeDevice succeeded", name)
		}
	}
}

func TestDevices(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) {
		return [][]byte{
			encode(rxeDeviceAttrs),
			encode(func(e *attrEncoder) {
				e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 4)
				e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, "siw0")
			}),
		}, nil
	})
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0].Name != "rxe0" || devs[1].Index != 4 {
		t.Fatalf("Devices: %+v", devs)
	}
	if want, got := (request{msgType: 0x1401, flags: unix.NLM_F_DUMP}), fk.reqs[0]; !reflect.DeepEqual(want, got) {
		t.Fatalf("request:\n- want: %+v\n-  got: %+v", want, got)
	}

	d, err := c.Device("siw0")
	if err != nil || d.Index != 4 {
		t.Fatalf("Device(siw0) = %+v, %v", d, err)
	}
	if _, err := c.Device("nope0"); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("Device(nope0): want ENODEV, got %v", err)
	}
}

func TestDeviceByIndexError(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) { return nil, unix.EINVAL })
	_, err := c.DeviceByIndex(9)
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("want EINVAL, got %v", err)
	}
	if want := "netlinkrdma: get device index 9: invalid argument"; err.Error() != want {
		t.Errorf("error text:\n- want: %s\n-  got: %s", want, err)
	}
	attrs, _ := decodeAll(fk.reqs[0].attrs)
	if fk.reqs[0].flags != 0 || !reflect.DeepEqual(attrs, []string{"1=09000000"}) {
		t.Errorf("request %+v attrs %v", fk.reqs[0], attrs)
	}
}

func TestSetRequests(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) { return nil, nil })
	for _, tc := range []struct {
		name  string
		call  func() error
		typ   uint16
		attrs []string
	}{
		{"rename", func() error { return c.SetDeviceName(2, "foo") }, 0x1402, []string{"1=02000000", "2=666f6f00"}},
		{"netns", func() error { return c.SetDeviceNetNS(2, 7) }, 0x1402, []string{"1=02000000", "68=07000000"}},
		{"dim", func() error { return c.SetAdaptiveModeration(2, true) }, 0x1402, []string{"1=02000000", "84=01"}},
		{"link add", func() error { return c.LinkAdd("rxe1", "rxe", "veth0") }, 0x1403,
			[]string{"2=7278653100", "65=72786500", "51=766574683000"}},
		{"link del", func() error { return c.LinkDelIndex(5) }, 0x1404, []string{"1=05000000"}},
		{"sys netns", func() error { return c.SetNetNSMode(NetNSExclusive) }, 0x1407, []string{"66=00"}},
	} {
		fk.reqs = nil
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := fk.reqs[0]
		attrs, err := decodeAll(r.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if r.msgType != tc.typ || r.flags != unix.NLM_F_ACK || !reflect.DeepEqual(attrs, tc.attrs) {
			t.Errorf("%s: got type %#x flags %#x attrs %v; want type %#x attrs %v", tc.name, r.msgType, r.flags, attrs, tc.typ, tc.attrs)
		}
	}
}

func TestNotSupported(t *testing.T) {
	c, _ := newFakeConn(func(r request) ([][]byte, error) { return nil, unix.EOPNOTSUPP })
	err := c.SetDeviceNetNS(1, 3)
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("want ErrNotSupported and EOPNOTSUPP, got %v", err)
	}
	c, _ = newFakeConn(func(r request) ([][]byte, error) { return nil, unix.EPERM })
	if err := c.LinkAdd("a", "rxe", "b"); errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EPERM) {
		t.Fatalf("want EPERM only, got %v", err)
	}
}

func FuzzDecodeDevice(f *testing.F) {
	f.Add(encode(rxeDeviceAttrs))
	f.Add([]byte{4, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDevice(b)
		if err == nil && !d.Present.Has(abi.RDMA_NLDEV_ATTR_DEV_NAME) {
			t.Fatal("decoded a device without a name")
		}
	})
}

// TestKernelMessage pins the conversion of vishvananda/netlink's extended
// ACK annotation into a *KernelError.
func TestKernelMessage(t *testing.T) {
	err := withKernelMessage(fmt.Errorf("%w: %s", unix.EINVAL, "Unknown attribute type"))
	var ke *KernelError
	if !errors.As(err, &ke) || ke.Errno != unix.EINVAL || ke.Message != "Unknown attribute type" {
		t.Fatalf("got %#v", err)
	}
	wrapped := opErr("set qp counter mode of port", "0/1", err)
	if KernelMessage(wrapped) != "Unknown attribute type" || !errors.Is(wrapped, unix.EINVAL) {
		t.Errorf("through OpError: %q, Is EINVAL %v", KernelMessage(wrapped), errors.Is(wrapped, unix.EINVAL))
	}
	for _, plain := range []error{unix.EINVAL, fmt.Errorf("decode: %w", unix.EINVAL), errors.New("x")} {
		if got := withKernelMessage(plain); got != plain || KernelMessage(got) != "" {
			t.Errorf("%v became %#v", plain, got)
		}
	}
}
