package uverbs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrNotSupported is returned (wrapped) for every feature the device or kernel lacks: the kernel's
// EOPNOTSUPP, and EPROTONOSUPPORT, which the uverbs ioctl framework reserves for "this object, method or
// mandatory attribute is unknown". errors.Is(err, ErrNotSupported) holds for both, and errors.Is with the errno
// itself still works.
var ErrNotSupported = errors.New("operation not supported by the device or kernel")

// ErrClosed is returned when an object is used after Close.
var ErrClosed = errors.New("object is closed")

// Error is the error of a verb: which verb, on which device, and the cause (usually a unix.Errno).
type Error struct {
	Op     string // e.g. "create CQ", "modify QP 0x11 INIT->RTR"
	Device string // e.g. "rxe0"
	Err    error
}

func (e *Error) Error() string {
	if e.Device == "" {
		return e.Op + ": " + e.Err.Error()
	}
	return e.Op + " on " + e.Device + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports ErrNotSupported for the kernel's not-supported errnos.
func (e *Error) Is(target error) bool {
	if target == ErrNotSupported {
		var errno unix.Errno
		if errors.As(e.Err, &errno) {
			return errno == unix.EOPNOTSUPP || errno == unix.EPROTONOSUPPORT
		}
	}
	return false
}

func wrap(op, dev string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Device: dev, Err: err}
}

func wrapf(dev string, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Op: fmt.Sprintf(format, args...), Device: dev, Err: err}
}
