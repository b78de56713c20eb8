package rdmacm

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/rdmaerr"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Error is the error of one rdma_cm operation. It names the command (or the
// library operation) and the id, and unwraps to the cause, usually a
// unix.Errno from the kernel: errors.Is(err, unix.ECONNREFUSED) works.
type Error struct {
	Op    string // "connect", "resolve addr", "get event", ...
	ID    uint32 // the kernel's id number, when the operation concerns one
	HasID bool
	Err   error
}

func (e *Error) Error() string {
	if e.HasID {
		return fmt.Sprintf("rdma_cm %s (id %d): %v", e.Op, e.ID, e.Err)
	}
	return fmt.Sprintf("rdma_cm %s: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the operation failed because a deadline passed or
// the CM timed out (a context's deadline, ETIMEDOUT): net.Error's meaning,
// so a *net.OpError around it answers Timeout() as net.Dial's do.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// ErrPrivateDataTooLong is returned (wrapped in *Error, before any system
// call) when private data exceeds what the CM message can carry.
var ErrPrivateDataTooLong = errors.New("private data too long")

// ErrClosed is returned when an id or channel is used after it was
// destroyed or closed: uverbs.ErrClosed, the one use-after-close value of the module.
var ErrClosed = uverbs.ErrClosed

// ErrNotSupported is goverbs' one not-supported sentinel (uverbs.ErrNotSupported): what package rdmacm
// refuses by design or for want of a kernel interface. It matches errors.ErrUnsupported and unix.EOPNOTSUPP.
var ErrNotSupported = rdmaerr.ErrNotSupported

// ErrState is returned (wrapped, together with unix.EINVAL) when a call is
// not allowed in the id's current state, e.g. Accept on an id that did not
// come from a CONNECT_REQUEST. The kernel answers most such calls with
// EINVAL; the library checks the common cases itself first.
var ErrState = errors.New("invalid state for this call")

type stateError struct{ msg string }

func (s stateError) Error() string        { return s.msg }
func (s stateError) Is(target error) bool { return target == ErrState || target == unix.EINVAL }

func errState(format string, args ...any) error { return stateError{fmt.Sprintf(format, args...)} }

func opErr(op string, id uint32, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, ID: id, HasID: true, Err: err}
}

// frame is one command as written to the rdma_cm fd: the 8-byte header and
// the command struct right after it (every command struct is 8-byte aligned
// at most, so it starts at offset 8 with no padding).
type frame[T any] struct {
	hdr abi.RdmaUcmCmdHdr
	req T
}

// ucmWrite is the one place that writes a command to the rdma_cm fd. resp,
// when not nil, is the response buffer whose address the caller has stored in
// req's Response field (as uint64): it is pinned for the duration of the
// write so that the kernel's copy_to_user lands in memory that cannot move,
// and the kernel keeps no reference after the call returns.
//
// All commands except GET_EVENT complete (or fail) without blocking on a
// non-blocking fd; GET_EVENT goes through Channel.GetEvent instead.
func ucmWrite[T any](fd int, cmd uint32, req *T, resp unsafe.Pointer, outLen uintptr) error {
	f := frame[T]{req: *req}
	f.hdr.Cmd = cmd
	f.hdr.In = uint16(unsafe.Sizeof(f.req))
	f.hdr.Out = uint16(outLen)
	var p runtime.Pinner
	if resp != nil {
		p.Pin(resp)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&f)), unsafe.Sizeof(f))
	n, err := unix.Write(fd, b)
	p.Unpin()
	runtime.KeepAlive(resp)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("short write %d of %d: %w", n, len(b), unix.ENODATA)
	}
	return nil
}

// ptr is the address of a pinned response buffer as the kernel wants it.
func ptr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }
