package netlinkrdma

import (
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/abi"
)

func rxePortAttrs(e *attrEncoder) {
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 3)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	e.Uint8(abi.RDMA_NLDEV_ATTR_PORT_STATE, 4)
	e.Uint8(abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5)
	e.Uint32(abi.RDMA_NLDEV_ATTR_NDEV_INDEX, 7)
	e.String(abi.RDMA_NLDEV_ATTR_NDEV_NAME, "veth0")
}

func TestDecodePort(t *testing.T) {
	got, err := decodePort(encode(rxePortAttrs))
	if err != nil {
		t.Fatal(err)
	}
	got.Present = AttrSet{}
	want := Port{DevIndex: 3, DevName: "rxe0", Index: 1, State: PortStateActive, PhysState: PhysStateLinkUp,
		NetdevIndex: 7, NetdevName: "veth0"}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("RoCE port:\n- want: %+v\n-  got: %+v", want, got)
	}
	if got.State.String() != "ACTIVE" || got.PhysState.String() != "LINK_UP" {
		t.Errorf("state names %s %s", got.State, got.PhysState)
	}

	ib, err := decodePort(encode(func(e *attrEncoder) {
		e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 0)
		e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 2)
		e.Uint64(abi.RDMA_NLDEV_ATTR_CAP_FLAGS, 1<<16|1<<1)
		e.Uint64(abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX, 0xfe80000000000000)
		e.Uint32(abi.RDMA_NLDEV_ATTR_LID, 12)
		e.Uint32(abi.RDMA_NLDEV_ATTR_SM_LID, 1)
		e.Uint8(abi.RDMA_NLDEV_ATTR_LMC, 0)
	}))
	if err != nil {
		t.Fatal(err)
	}
	wantIB := &PortIB{Caps: 1<<16 | 1<<1, SubnetPrefix: 0xfe80000000000000, LID: 12, SMLID: 1}
	if !reflect.DeepEqual(wantIB, ib.IB) || ib.IB.SubnetPrefix.String() != "fe80:0000:0000:0000" {
		t.Fatalf("IB port: %+v", ib.IB)
	}
	if names := ib.IB.Caps.Names(); !reflect.DeepEqual(names, []string{"SM", "CM"}) {
		t.Errorf("port caps %v", names)
	}
	if _, err := decodePort(encode(func(e *attrEncoder) { e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 0) })); err == nil {
		t.Error("port without port index decoded")
	}
}

func TestPortsRequest(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) { return [][]byte{encode(rxePortAttrs)}, nil })
	ps, err := c.Ports(3)
	if err != nil || len(ps) != 1 || ps[0].NetdevName != "veth0" {
		t.Fatalf("Ports: %+v %v", ps, err)
	}
	p, err := c.Port(3, 1)
	if err != nil || p.Index != 1 {
		t.Fatalf("Port: %+v %v", p, err)
	}
	a0, _ := decodeAll(fk.reqs[0].attrs)
	a1, _ := decodeAll(fk.reqs[1].attrs)
	if fk.reqs[0].msgType != 0x1405 || fk.reqs[0].flags != 0x300 || !reflect.DeepEqual(a0, []string{"1=03000000"}) ||
		!reflect.DeepEqual(a1, []string{"1=03000000", "3=01000000"}) {
		t.Errorf("requests %+v", fk.reqs)
	}
}

func FuzzDecodePort(f *testing.F) {
	f.Add(encode(rxePortAttrs))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePort(b)
		if err == nil && !p.Present.Has(abi.RDMA_NLDEV_ATTR_PORT_INDEX) {
			t.Fatal("port without index")
		}
	})
}

func TestParseGUID(t *testing.T) {
	for _, g := range []GUID{0, 1, 0x0002c90300a1b2c3, 0xffffffffffffffff, 0x1234000000005678} {
		got, err := ParseGUID(g.String())
		if err != nil || got != g {
			t.Errorf("ParseGUID(%q) = %#x, %v", g.String(), uint64(got), err)
		}
	}
	if g, err := ParseGUID("2:c903:a1:B2C3"); err != nil || g != 0x0002c90300a1b2c3 {
		t.Errorf("short groups: %#x, %v", uint64(g), err)
	}
	for _, bad := range []string{"", ":::", "0002:c903:00a1", "0002:c903:00a1:b2c3:0000", "00002:c903:00a1:b2c3",
		"0002:c903:00a1:b2cg", "+002:c903:00a1:b2c3", "0002:c903::b2c3", "0002c90300a1b2c3"} {
		if g, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) = %#x, want an error", bad, uint64(g))
		}
	}
}
