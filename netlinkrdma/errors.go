package netlinkrdma

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/internal/rdmaerr"

	"golang.org/x/sys/unix"
)

// ErrNotSupported is matched (errors.Is) by errors for requests that the
// running kernel or the device's driver does not implement: the kernel
// answered EOPNOTSUPP or EPROTONOSUPPORT, or a reply lacked the attribute
// that carries the answer. errors.Is with the underlying unix.Errno works too. It is goverbs' one not-supported
// value (uverbs.ErrNotSupported is the same), and errors.Is(err, errors.ErrUnsupported) holds for it too.
var ErrNotSupported = rdmaerr.ErrNotSupported

// ErrClosed is matched by the error of a request on a closed Conn and of Next on a closed Monitor. It is
// goverbs' one use-after-close value (uverbs.ErrClosed is the same), and errors.Is(err, net.ErrClosed) and
// errors.Is(err, os.ErrClosed) hold for it too.
var ErrClosed = rdmaerr.ErrClosed

// OpError is the error returned for a failed request. It names the operation
// and the object, and unwraps to the kernel's errno (or a decode error).
//
// Typical kernel answers: EPERM (the operation needs CAP_NET_ADMIN), ENODEV
// (no such netdev), EEXIST (the netdev already has an rxe device), EINVAL
// (unknown device index or link type, bad argument), EOPNOTSUPP (the driver or
// kernel lacks the feature), EBUSY (netns mode change with other namespaces
// alive).
type OpError struct {
	Op     string // "get device", "add link", ...
	Object string // "rxe0", "rxe0/1", "" when the request names none
	Err    error
}

func (e *OpError) Error() string {
	if e.Object == "" {
		return "netlinkrdma: " + e.Op + ": " + e.Err.Error()
	}
	return "netlinkrdma: " + e.Op + " " + e.Object + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// Is reports ErrNotSupported for the kernel's "not supported" errnos.
func (e *OpError) Is(target error) bool {
	if target != ErrNotSupported && target != errors.ErrUnsupported {
		return false
	}
	return errors.Is(e.Err, unix.EOPNOTSUPP) || errors.Is(e.Err, unix.EPROTONOSUPPORT) ||
		errors.Is(e.Err, errMissingAttr)
}

// errMissingAttr marks a reply that lacked an attribute the caller needs.
var errMissingAttr = errors.New("reply lacks a required attribute")

func missingAttr(name string) error {
	return fmt.Errorf("%w %s", errMissingAttr, name)
}

func opErr(op, object string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Object: object, Err: err}
}
