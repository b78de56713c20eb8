package uverbs

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/internal/rdmaerr"
	"golang.org/x/sys/unix"
)

// ErrNotSupported is matched (errors.Is) by every error for a feature the device, driver, kernel or goverbs
// lacks: the kernel's EOPNOTSUPP, and EPROTONOSUPPORT, which the uverbs ioctl framework reserves for "this
// object, method or mandatory attribute is unknown". It is goverbs' one not-supported value (the same as
// netlinkrdma.ErrNotSupported and the others), and errors.Is(err, errors.ErrUnsupported) holds for it too.
var ErrNotSupported = rdmaerr.ErrNotSupported

// ErrClosed is matched by the error of every verb, data path included, on an object after its Close. It is
// goverbs' one use-after-close value (rdmacm.ErrClosed, umad.ErrClosed and netlinkrdma.ErrClosed are the same),
// and errors.Is(err, net.ErrClosed) holds for it too.
var ErrClosed = rdmaerr.ErrClosed

// Error is the error of a verb: which verb, on which device, and the cause (usually a unix.Errno, which
// errors.Is and errors.As reach through Unwrap).
type Error struct {
	Op     string // e.g. "create CQ", "modify QP 0x11 INIT->RTR", "post send"
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

// Is reports ErrNotSupported and errors.ErrUnsupported for the kernel's not-supported errnos.
func (e *Error) Is(target error) bool {
	if target == ErrNotSupported || target == errors.ErrUnsupported {
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

// The data-path verbs, for their errors.
type dataPathOp uint8

const (
	opPostSend dataPathOp = iota
	opPostRecv
	opPostSRQRecv
	opPollCQ
	opPostWQRecv
	numDataPathOps
)

var dataPathOpNames = [numDataPathOps]string{"post send", "post receive", "post SRQ receive", "poll CQ", "post WQ receive"}

// reason is the cause of a data-path error: what was wrong, and the errno (or ErrClosed) it unwraps to.
type reason struct {
	text string
	err  error
}

func (r *reason) Error() string { return r.text + ": " + r.err.Error() }
func (r *reason) Unwrap() error { return r.err }

// dataPathErrors are one context's data-path errors, made when the context opens so that a failed post or
// poll allocates nothing: every verb × every provider.Status, each an *Error naming the verb and the device.
type dataPathErrors [numDataPathOps][provider.NumStatus]*Error

func newDataPathErrors(dev string) *dataPathErrors {
	t := new(dataPathErrors)
	for op := range t {
		for st := range t[op] {
			info := provider.Statuses[st]
			var cause error = info.Errno
			if provider.Status(st) == provider.Destroyed {
				cause = ErrClosed
			}
			t[op][st] = &Error{Op: dataPathOpNames[op], Device: dev, Err: &reason{text: info.Reason, err: cause}}
		}
	}
	return t
}

// get is the error for st (not OK). A failed doorbell system call carries the kernel's errno: that rare error is
// made when it happens. The data-path verbs test st == provider.OK themselves before calling it, so that their
// success path reads neither the context nor its table.
func (t *dataPathErrors) get(op dataPathOp, st provider.Status) error {
	if st.Code() == provider.Doorbell {
		e := t[op][provider.Doorbell]
		return &Error{Op: e.Op, Device: e.Device, Err: &reason{text: provider.Statuses[provider.Doorbell].Reason, err: st.Errno()}}
	}
	if int(st) >= provider.NumStatus {
		st = provider.BadOpcode
	}
	return t[op][st]
}
