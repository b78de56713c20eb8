package netlinkrdma

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

// EventType is the kind of an RDMA device event (enum
// rdma_nl_notify_event_type).
type EventType uint8

// Event types, as RDMA_NLDEV_ATTR_EVENT_TYPE encodes them.
const (
	EventRegister     EventType = abi.RDMA_REGISTER_EVENT      // a device appeared
	EventUnregister   EventType = abi.RDMA_UNREGISTER_EVENT    // a device went away
	EventNetdevAttach EventType = abi.RDMA_NETDEV_ATTACH_EVENT // a port was bound to a netdev
	EventNetdevDetach EventType = abi.RDMA_NETDEV_DETACH_EVENT // a port lost its netdev
	EventRename       EventType = abi.RDMA_RENAME_EVENT        // a device was renamed (Linux 7.x)
	EventNetdevRename EventType = abi.RDMA_NETDEV_RENAME_EVENT // a port's netdev was renamed (Linux 7.x)
)

// String returns the kernel's name of t without the RDMA_ prefix and
// _EVENT suffix ("REGISTER", "NETDEV_ATTACH"), or "UNKNOWN 0xNN".
func (t EventType) String() string {
	switch t {
	case EventRegister:
		return "REGISTER"
	case EventUnregister:
		return "UNREGISTER"
	case EventNetdevAttach:
		return "NETDEV_ATTACH"
	case EventNetdevDetach:
		return "NETDEV_DETACH"
	case EventRename:
		return "RENAME"
	case EventNetdevRename:
		return "NETDEV_RENAME"
	}
	return fmt.Sprintf("UNKNOWN 0x%02x", uint8(t))
}

// Event is one RDMA device event, as the kernel multicasts it to
// RDMA_NL_GROUP_NOTIFY (Linux 6.12+). Which fields are set depends on the
// type: registration events name the device, netdev events also the port
// and the netdev; Present records what the kernel sent.
type Event struct {
	Type        EventType // RDMA_NLDEV_ATTR_EVENT_TYPE
	DevIndex    uint32    // RDMA_NLDEV_ATTR_DEV_INDEX
	DevName     string    // RDMA_NLDEV_ATTR_DEV_NAME
	Port        uint32    // RDMA_NLDEV_ATTR_PORT_INDEX
	NetdevIndex uint32    // RDMA_NLDEV_ATTR_NDEV_INDEX
	NetdevName  string    // RDMA_NLDEV_ATTR_NDEV_NAME
	Present     AttrSet
}

// ErrNoEventType is returned (wrapped) for a monitor message without an
// event type, which iproute2's rdma monitor treats as fatal too.
var ErrNoEventType = errors.New("netlinkrdma: monitor message lacks RDMA_NLDEV_ATTR_EVENT_TYPE")

func decodeEvent(b []byte) (Event, error) {
	var e Event
	err := walk(b, &e.Present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_EVENT_TYPE:
			e.Type = EventType(ad.Uint8())
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			e.DevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			e.DevName = ad.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			e.Port = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_NDEV_INDEX:
			e.NetdevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_NDEV_NAME:
			e.NetdevName = ad.String()
		}
	})
	if err != nil {
		return Event{}, err
	}
	if !e.Present.Has(abi.RDMA_NLDEV_ATTR_EVENT_TYPE) {
		return Event{}, ErrNoEventType
	}
	return e, nil
}

// Monitor receives RDMA device events. Kernels that send them say so in
// System().Monitor; on older kernels a Monitor opens but never reports.
// A Monitor is for one goroutine at a time; Close may be called from any.
type Monitor struct {
	f       *os.File
	rc      syscall.RawConn
	buf     []byte
	pending []syscall.NetlinkMessage
	closed  atomic.Bool
}

// monitorGroups is the bind(2) group mask of RDMA_NL_GROUP_NOTIFY.
const monitorGroups = 1 << (abi.RDMA_NL_GROUP_NOTIFY - 1)

// NewMonitor subscribes to RDMA device events in the calling thread's
// network namespace. Without RDMA netlink (ib_core not loaded) the error
// matches ErrNotSupported.
//
// Equivalent to: rdma monitor
func NewMonitor() (*Monitor, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, Protocol)
	if err != nil {
		return nil, opErr("open", "NETLINK_RDMA socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: monitorGroups}); err != nil {
		unix.Close(fd)
		return nil, opErr("join", "RDMA_NL_GROUP_NOTIFY", err)
	}
	f := os.NewFile(uintptr(fd), "rdma-monitor")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, opErr("open", "NETLINK_RDMA socket", err)
	}
	return &Monitor{f: f, rc: rc, buf: make([]byte, 1<<16)}, nil
}

// Close stops the subscription; a Next blocked in another goroutine, and
// every later Next, returns an error that matches ErrClosed.
func (m *Monitor) Close() error {
	m.closed.Store(true)
	return m.f.Close()
}

// Next returns the next event, waiting for it until ctx is done (then it
// returns ctx.Err()). If the kernel dropped events because the socket's
// buffer was full the error matches unix.ENOBUFS; the Monitor stays usable.
func (m *Monitor) Next(ctx context.Context) (Event, error) {
	want := abi.RdmaNlGetType(abi.RDMA_NL_NLDEV, abi.RDMA_NLDEV_CMD_MONITOR)
	for {
		for len(m.pending) > 0 {
			msg := m.pending[0]
			m.pending = m.pending[1:]
			if msg.Header.Type != want {
				continue
			}
			e, err := decodeEvent(msg.Data)
			if err != nil {
				return Event{}, opErr("decode", "monitor event", err)
			}
			return e, nil
		}
		if err := m.receive(ctx); err != nil {
			return Event{}, err
		}
	}
}

// receive reads one datagram into pending.
func (m *Monitor) receive(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { m.f.SetReadDeadline(time.Unix(1, 0)) })
	var n int
	var rerr error
	err := m.rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), m.buf, 0)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	if !stop() {
		m.f.SetReadDeadline(time.Time{})
	}
	if err == nil {
		err = rerr
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
			return ctx.Err()
		}
		if m.closed.Load() {
			err = ErrClosed // RawConn reports internal/poll's "use of closed file"
		}
		return opErr("receive", "monitor event", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(m.buf[:n])
	if err != nil {
		return opErr("decode", "monitor event", err)
	}
	m.pending = msgs
	return nil
}
