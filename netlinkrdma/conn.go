package netlinkrdma

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

// Protocol is the netlink protocol number of RDMA netlink (NETLINK_RDMA).
const Protocol = unix.NETLINK_RDMA

// transport sends one RDMA netlink request and feeds every reply payload
// (the bytes after struct nlmsghdr; RDMA netlink has no family header) to fn.
// The real transport is vishvananda/netlink's nl socket; tests use a fake.
type transport interface {
	execute(msgType uint16, flags uint16, attrs []byte, fn func(payload []byte) error) error
	close() error
}

// Conn is a connection to the kernel's RDMA netlink device interface
// (client RDMA_NL_NLDEV). A Conn is safe for concurrent use: requests are
// serialised on its one socket. The socket lives in the network namespace
// it was dialled in, and the kernel shows only the RDMA devices of that
// namespace (all of them when the rdma subsystem is in shared mode).
type Conn struct {
	t transport
}

// Dial opens an RDMA netlink socket in the calling thread's network namespace.
// Without RDMA support in the kernel (ib_core not loaded) the error matches
// ErrNotSupported and unix.EPROTONOSUPPORT.
func Dial() (*Conn, error) {
	return DialNetNS(netns.None())
}

// DialNetNS opens an RDMA netlink socket in the network namespace ns (a
// handle from github.com/vishvananda/netns); a closed handle (netns.None())
// means the current one.
func DialNetNS(ns netns.NsHandle) (*Conn, error) {
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), Protocol)
	if err != nil {
		// EPROTONOSUPPORT here means ib_core is not loaded; OpError maps it
		// to ErrNotSupported.
		return nil, opErr("open", "NETLINK_RDMA socket", err)
	}
	// Ask for the kernel's error messages (extended ACK), as iproute2 does.
	if err := s.SetExtAck(true); err != nil {
		s.Close()
		return nil, opErr("enable extended ACK on", "NETLINK_RDMA socket", err)
	}
	return &Conn{t: &nlTransport{sh: &nl.SocketHandle{Socket: s}}}, nil
}

// Close closes the socket. It is safe to call more than once.
func (c *Conn) Close() error {
	if c == nil || c.t == nil {
		return nil
	}
	return c.t.close()
}

// nlTransport runs requests over a shared nl.SocketHandle; nl serialises
// requests on it, checks sequence numbers and turns NLMSG_ERROR into errnos.
type nlTransport struct {
	once   sync.Once
	closed atomic.Bool
	sh     *nl.SocketHandle
}

func (t *nlTransport) execute(msgType, flags uint16, attrs []byte, fn func([]byte) error) error {
	if t.closed.Load() {
		return ErrClosed // the descriptor may already belong to another file
	}
	req := nl.NewNetlinkRequest(int(msgType), int(flags))
	req.Sockets = map[int]*nl.SocketHandle{Protocol: t.sh}
	if len(attrs) > 0 {
		req.AddRawData(attrs)
	}
	var cbErr error
	err := req.ExecuteIter(Protocol, 0, func(msg []byte) bool {
		if cbErr == nil {
			cbErr = fn(msg)
		}
		return cbErr == nil
	})
	if err != nil {
		return withKernelMessage(err)
	}
	return cbErr
}

// KernelError is a kernel errno with the message of its extended ACK
// (NLMSGERR_ATTR_MSG), e.g. EINVAL "Unknown attribute type" from a kernel
// older than the request. It is found inside an OpError with errors.As;
// errors.Is(err, unix.EINVAL) sees through it.
type KernelError struct {
	Errno   unix.Errno
	Message string
}

func (e *KernelError) Error() string { return e.Errno.Error() + ": " + e.Message }
func (e *KernelError) Unwrap() error { return e.Errno }

// withKernelMessage turns nl's annotation of an errno with the extended
// ACK message (fmt.Errorf("%w: %s", errno, msg)) into a *KernelError.
func withKernelMessage(err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) || err == error(errno) {
		return err
	}
	if msg, ok := strings.CutPrefix(err.Error(), errno.Error()+": "); ok && msg != "" {
		return &KernelError{errno, msg}
	}
	return err
}

// KernelMessage returns the message the kernel attached to the failure
// err (netlink extended ACK, e.g. "Unknown attribute type" from a kernel
// older than the request), or "" if it sent none.
func KernelMessage(err error) string {
	var ke *KernelError
	if errors.As(err, &ke) {
		return ke.Message
	}
	return ""
}

func (t *nlTransport) close() error {
	t.closed.Store(true)
	t.once.Do(t.sh.Close)
	return nil
}

// msgType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op).
func msgType(op uint16) uint16 {
	return uint16(abi.RDMA_NL_NLDEV)<<10 | op
}

// doit sends a non-dump request and decodes its single reply with fn (nil:
// the request has no reply beyond the acknowledgement, which is then asked
// for).
func (c *Conn) doit(op uint16, attrs []byte, fn func([]byte) error) error {
	flags := uint16(0)
	if fn == nil {
		flags = unix.NLM_F_ACK
		fn = func([]byte) error { return nil }
	}
	return c.t.execute(msgType(op), flags, attrs, fn)
}

// dumpRetries bounds how often a dump that the kernel marked as interrupted
// (NLM_F_DUMP_INTR: the object list changed mid-dump) is restarted.
const dumpRetries = 4

// dump sends a dump request, calling reset before each attempt and fn for
// every reply message.
func (c *Conn) dump(op uint16, attrs []byte, reset func(), fn func([]byte) error) error {
	var err error
	for i := 0; i < dumpRetries; i++ {
		reset()
		err = c.t.execute(msgType(op), unix.NLM_F_DUMP, attrs, fn)
		if !errors.Is(err, nl.ErrDumpInterrupted) {
			return err
		}
	}
	return err
}

// get sends a doit request and decodes its reply with decode.
func get[T any](c *Conn, op uint16, attrs []byte, decode func([]byte) (T, error)) (T, error) {
	var v T
	err := c.doit(op, attrs, func(b []byte) error {
		var err error
		v, err = decode(b)
		return err
	})
	return v, err
}

// list sends a dump request and decodes each reply message into one T.
func list[T any](c *Conn, op uint16, attrs []byte, decode func([]byte) (T, error)) ([]T, error) {
	var out []T
	err := c.dump(op, attrs, func() { out = out[:0] }, func(b []byte) error {
		v, err := decode(b)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	return out, err
}

// listTables sends a dump request whose reply messages each carry a table,
// and decodes the tables into one list.
func listTables[T any](c *Conn, op uint16, attrs []byte, decode func([]byte) ([]T, error)) ([]T, error) {
	var out []T
	err := c.dump(op, attrs, func() { out = out[:0] }, func(b []byte) error {
		vs, err := decode(b)
		out = append(out, vs...)
		return err
	})
	return out, err
}
