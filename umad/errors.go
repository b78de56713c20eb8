package umad

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/internal/rdmaerr"
	"golang.org/x/sys/unix"
)

// Sentinels that errors of this package match with errors.Is.
var (
	// ErrNoDevice: no umad device for the requested RDMA device and port,
	// or the umad class is missing (ib_umad not loaded). It is goverbs'
	// one no-such-device value (uverbs.ErrNoDevice is the same).
	ErrNoDevice = rdmaerr.ErrNoDevice
	// ErrNotSupported is goverbs' one not-supported value
	// (uverbs.ErrNotSupported is the same); ErrABI matches it.
	ErrNotSupported = rdmaerr.ErrNotSupported
	// ErrABI: the kernel's user MAD ABI version is not the one this
	// package speaks (5). It matches ErrNotSupported and
	// errors.ErrUnsupported.
	ErrABI = rdmaerr.NotSupported("unsupported kernel user MAD ABI version")
	// ErrTimeout: no reply arrived in time, either because the context's
	// deadline passed or because the kernel reported the request timed
	// out after its retries. It also matches unix.ETIMEDOUT.
	ErrTimeout = errors.New("umad: timed out")
	// ErrClosed: the port was closed. It is goverbs' one use-after-close
	// value (uverbs.ErrClosed is the same), and errors.Is(err,
	// net.ErrClosed) holds for it too.
	ErrClosed = rdmaerr.ErrClosed
	// ErrMADStatus: the reply carries a non-zero MAD status (*StatusError
	// has the value).
	ErrMADStatus = errors.New("umad: MAD status")
	// ErrMalformed: bytes from the kernel or a peer do not decode.
	ErrMalformed = errors.New("umad: malformed data")
)

// Error is a failed operation on a umad device.
type Error struct {
	Op     string // "open", "register", "send", "recv", ...
	Device string // "umad0", or "rxe0:1" when no umad device was found
	Kind   error  // one of the sentinels, or nil
	Err    error  // the underlying error (a unix.Errno for system calls), or nil
}

func (e *Error) Error() string {
	s := "umad " + e.Op
	if e.Device != "" {
		s += " " + e.Device
	}
	switch {
	case e.Err != nil:
		return s + ": " + e.Err.Error()
	case e.Kind != nil:
		return s + ": " + e.Kind.Error()
	}
	return s + ": failed"
}

// Unwrap returns the sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Is makes ErrTimeout match unix.ETIMEDOUT in both directions.
func (e *Error) Is(target error) bool {
	if e.Kind == ErrTimeout && target == unix.ETIMEDOUT {
		return true
	}
	if target == ErrTimeout && errors.Is(e.Err, unix.ETIMEDOUT) {
		return true
	}
	return false
}

// StatusError is a MAD reply with a non-zero status field.
type StatusError struct {
	Status uint16 // the MAD header's status, host order
}

// Error names the status as libibumad's umad_common_mad_status_str does: "MAD status 0x000c (Method not
// supported)".
func (e *StatusError) Error() string {
	return fmt.Sprintf("MAD status 0x%04x (%s)", e.Status, Status(e.Status))
}

// Is matches ErrMADStatus.
func (e *StatusError) Is(target error) bool { return target == ErrMADStatus }
