package netlinkrdma

import (
	"errors"
	"net"
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/vishvananda/netlink/nl"
)

// attachEventMsg is a NETDEV_ATTACH event as Linux 7.3 sends it.
func attachEventMsg(e *attrEncoder) {
	e.Uint8(abi.RDMA_NLDEV_ATTR_EVENT_TYPE, abi.RDMA_NETDEV_ATTACH_EVENT)
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 3)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe1")
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	e.Uint32(abi.RDMA_NLDEV_ATTR_NDEV_INDEX, 4)
	e.String(abi.RDMA_NLDEV_ATTR_NDEV_NAME, "veth1")
}

func TestDecodeEvent(t *testing.T) {
	got, err := decodeEvent(encode(attachEventMsg))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Type: EventNetdevAttach, DevIndex: 3, DevName: "rxe1", Port: 1, NetdevIndex: 4, NetdevName: "veth1",
		Present: got.Present}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("event:\n- want: %+v\n-  got: %+v", want, got)
	}
	for _, a := range []uint16{abi.RDMA_NLDEV_ATTR_EVENT_TYPE, abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_NDEV_NAME} {
		if !got.Present.Has(a) {
			t.Errorf("attribute %d not recorded as present", a)
		}
	}
	_, err = decodeEvent(encode(func(e *attrEncoder) { e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 3) }))
	if !errors.Is(err, ErrNoEventType) {
		t.Errorf("event without a type: want ErrNoEventType, got %v", err)
	}
	_, err = decodeEvent(encode(func(e *attrEncoder) { e.Uint32(abi.RDMA_NLDEV_ATTR_EVENT_TYPE, 1) }))
	if err == nil {
		t.Error("a 4-byte event type (u8 on the wire) was accepted")
	}
}

func TestEventTypeString(t *testing.T) {
	for typ, want := range map[EventType]string{
		EventRegister: "REGISTER", EventUnregister: "UNREGISTER", EventNetdevAttach: "NETDEV_ATTACH",
		EventNetdevDetach: "NETDEV_DETACH", EventRename: "RENAME", EventNetdevRename: "NETDEV_RENAME", 6: "UNKNOWN 0x06",
		0xab: "UNKNOWN 0xab",
	} {
		if got := typ.String(); got != want {
			t.Errorf("EventType(%d): %q, want %q", typ, got, want)
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(encode(attachEventMsg))
	f.Add([]byte{5, 0, 0x66, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEvent(b)
		if err == nil && !e.Present.Has(abi.RDMA_NLDEV_ATTR_EVENT_TYPE) {
			t.Fatal("decoded an event without a type")
		}
	})
}

// A request on a closed Conn fails with ErrClosed before it touches the descriptor, which may by then belong
// to another file.
func TestConnClosed(t *testing.T) {
	c := &Conn{t: &nlTransport{sh: &nl.SocketHandle{}}}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Devices()
	if !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Devices on a closed Conn: %v, want ErrClosed", err)
	}
}
