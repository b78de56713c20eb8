// Package rdmaerr holds the sentinels every goverbs package re-exports by value (uverbs.ErrNotSupported,
// umad.ErrClosed, netlinkrdma.ErrNotSupported, ...), so that one errors.Is test serves the whole module:
// ErrNotSupported (a feature is missing), ErrClosed (an object was used after Close) and ErrNoDevice (no such
// RDMA device or port).
package rdmaerr

import (
	"errors"
	"net"
	"os"
	"syscall"
)

type notSupported struct{ msg string }

func (e notSupported) Error() string {
	if e.msg == "" {
		return "operation not supported"
	}
	return e.msg
}

// Is makes every not-supported error match ErrNotSupported, errors.ErrUnsupported and EOPNOTSUPP (the errno
// the C libraries set for the same refusal, so code ported from C that tests errno works unchanged).
func (notSupported) Is(target error) bool {
	return target == ErrNotSupported || target == errors.ErrUnsupported || target == syscall.EOPNOTSUPP
}

// ErrNotSupported is the feature-is-missing sentinel: the device, driver, kernel or goverbs lacks it. Errors
// that carry the kernel's EOPNOTSUPP or EPROTONOSUPPORT match it through their Is methods; it matches
// EOPNOTSUPP itself, the errno libibverbs and librdmacm set where goverbs refuses with it.
var ErrNotSupported error = notSupported{}

// NotSupported returns a sentinel of its own (for a package that names one kind of missing feature, such as
// umad.ErrABI) that also matches ErrNotSupported and errors.ErrUnsupported.
func NotSupported(msg string) error { return &notSupported{msg: msg} }

type closed struct{}

func (closed) Error() string { return "object is closed" }

// Is makes ErrClosed match net.ErrClosed, the standard library's use-after-close value, so that code written
// for net.Conn (errors.Is(err, net.ErrClosed)) reads goverbs' closed objects the same way, and os.ErrClosed,
// which objects that are files underneath (netlink sockets, umad ports) used to report.
func (closed) Is(target error) bool { return target == net.ErrClosed || target == os.ErrClosed }

// ErrClosed is the use-after-close sentinel of every goverbs object (verbs objects, rdma_cm ids and channels,
// umad ports, netlink connections; rsocket reports net.ErrClosed itself, as net.Conn does). errors.Is(err,
// net.ErrClosed) holds for it too.
var ErrClosed error = closed{}

// ErrNoDevice is the no-such-device sentinel: the named RDMA device, or the port or interface asked for on it,
// does not exist.
var ErrNoDevice = errors.New("no such RDMA device")
