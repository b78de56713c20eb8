package netlinkrdma

import (
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/abi"
)

func TestDecodeHugeDev(t *testing.T) {
	for _, tc := range []struct {
		v            uint64
		major, minor uint32
	}{
		{231<<8 | 192, 231, 192},                // uverbs0 on a typical system
		{231<<8 | 0x34 | 0x12<<20, 231, 0x1234}, // minor above 255
		{0, 0, 0},
	} {
		ma, mi := decodeHugeDev(tc.v)
		if ma != tc.major || mi != tc.minor {
			t.Errorf("decodeHugeDev(%#x) = %d:%d, want %d:%d", tc.v, ma, mi, tc.major, tc.minor)
		}
	}
}

func TestDecodeChardev(t *testing.T) {
	base := func(e *attrEncoder) {
		e.Uint64(abi.RDMA_NLDEV_ATTR_CHARDEV, 231<<8|192)
		e.Uint64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 2)
		e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0")
	}
	want := Chardev{Name: "uverbs0", Dev: 231<<8 | 192, Major: 231, Minor: 192, ABI: 2}
	for name, tc := range map[string]struct {
		extra func(e *attrEncoder)
		id    DriverID
	}{
		"absent driver id": {func(e *attrEncoder) {}, DriverUnknown},
		"u32 driver id":    {func(e *attrEncoder) { e.Uint32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 14) }, DriverRXE},
		"u64 driver id":    {func(e *attrEncoder) { e.Uint64(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 1) }, DriverMLX5},
	} {
		got, err := decodeChardev(encode(func(e *attrEncoder) { base(e); tc.extra(e) }))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := want
		w.DriverID = tc.id
		if !reflect.DeepEqual(w, got) {
			t.Errorf("%s:\n- want: %+v\n-  got: %+v", name, w, got)
		}
	}
	if _, err := decodeChardev(encode(func(e *attrEncoder) { e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "x") })); err == nil {
		t.Error("chardev without dev_t decoded")
	}
}

func TestChardevRequest(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) {
		return [][]byte{encode(func(e *attrEncoder) {
			e.Uint64(abi.RDMA_NLDEV_ATTR_CHARDEV, 231<<8|193)
			e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs1")
			e.Uint32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 14)
		})}, nil
	})
	cd, err := c.Chardev(2, "uverbs")
	if err != nil {
		t.Fatal(err)
	}
	if cd.Name != "uverbs1" || cd.Minor != 193 || cd.DriverID != DriverRXE || cd.DriverID.String() != "rxe" {
		t.Errorf("Chardev: %+v", cd)
	}
	attrs, _ := decodeAll(fk.reqs[0].attrs)
	if fk.reqs[0].msgType != 0x140f || !reflect.DeepEqual(attrs, []string{"1=02000000", "69=75766572627300"}) {
		t.Errorf("request %#x %v", fk.reqs[0].msgType, attrs)
	}
}

func FuzzDecodeChardev(f *testing.F) {
	f.Add(encode(func(e *attrEncoder) {
		e.Uint64(abi.RDMA_NLDEV_ATTR_CHARDEV, 231<<8|192)
		e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0")
		e.Uint32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 14)
	}))
	f.Fuzz(func(t *testing.T, b []byte) {
		cd, err := decodeChardev(b)
		if err == nil {
			if ma, mi := decodeHugeDev(cd.Dev); ma != cd.Major || mi != cd.Minor {
				t.Fatal("major/minor disagree with dev")
			}
		}
	})
}
