package rdmaerr_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/goverbs/goverbs/internal/rdmaerr"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/providers/mlx5"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/umad"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Every package's not-supported value is the one sentinel, and each matches errors.ErrUnsupported.
func TestOneNotSupportedSentinel(t *testing.T) {
	for name, err := range map[string]error{
		"rdmaerr":     rdmaerr.ErrNotSupported,
		"uverbs":      uverbs.ErrNotSupported,
		"netlinkrdma": netlinkrdma.ErrNotSupported,
		"mlx5":        mlx5.ErrNotSupported,
	} {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s.ErrNotSupported does not match errors.ErrUnsupported", name)
		}
		if !errors.Is(err, rdmaerr.ErrNotSupported) {
			t.Errorf("%s.ErrNotSupported is not goverbs' sentinel", name)
		}
	}
	// Kernel answers wrapped by each package's error type match all three.
	for _, errno := range []unix.Errno{unix.EOPNOTSUPP, unix.EPROTONOSUPPORT} {
		for name, err := range map[string]error{
			"uverbs":      &uverbs.Error{Op: "create QP", Device: "rxe0", Err: fmt.Errorf("x: %w", errno)},
			"netlinkrdma": &netlinkrdma.OpError{Op: "get", Object: "rxe0", Err: errno},
		} {
			if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, rdmaerr.ErrNotSupported) || !errors.Is(err, errno) {
				t.Errorf("%s error with %v: not matched", name, errno)
			}
		}
	}
}

// Every package's use-after-close value is the one sentinel, and it matches net.ErrClosed (and os.ErrClosed),
// so that code written for net.Conn reads it; rsocket reports net.ErrClosed itself, as net.Conn does.
func TestOneClosedSentinel(t *testing.T) {
	for name, err := range map[string]error{
		"rdmaerr":     rdmaerr.ErrClosed,
		"uverbs":      uverbs.ErrClosed,
		"rdmacm":      rdmacm.ErrClosed,
		"umad":        umad.ErrClosed,
		"netlinkrdma": netlinkrdma.ErrClosed,
		"umad.Error":  &umad.Error{Op: "recv", Device: "umad0", Kind: umad.ErrClosed},
		"uverbs.Error": &uverbs.Error{Op: "post send", Device: "rxe0",
			Err: fmt.Errorf("queue destroyed: %w", uverbs.ErrClosed)},
	} {
		if !errors.Is(err, net.ErrClosed) || !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s: %v does not match net.ErrClosed and os.ErrClosed", name, err)
		}
		if !errors.Is(err, rdmaerr.ErrClosed) {
			t.Errorf("%s: %v is not goverbs' closed sentinel", name, err)
		}
	}
	if errors.Is(net.ErrClosed, rdmaerr.ErrClosed) || errors.Is(rdmaerr.ErrClosed, rdmaerr.ErrNoDevice) {
		t.Error("ErrClosed matches too much")
	}
}

// One no-such-device value; umad's ABI mismatch is a not-supported error.
func TestOneNoDeviceSentinel(t *testing.T) {
	if uverbs.ErrNoDevice != rdmaerr.ErrNoDevice || umad.ErrNoDevice != rdmaerr.ErrNoDevice {
		t.Error("uverbs.ErrNoDevice, umad.ErrNoDevice and rdmaerr.ErrNoDevice differ")
	}
	abiErr := &umad.Error{Op: "open", Device: "rxe0:1", Kind: umad.ErrABI}
	if !errors.Is(abiErr, umad.ErrABI) || !errors.Is(abiErr, uverbs.ErrNotSupported) || !errors.Is(abiErr, errors.ErrUnsupported) {
		t.Errorf("%v: want umad.ErrABI, ErrNotSupported and errors.ErrUnsupported", abiErr)
	}
	if errors.Is(rdmaerr.ErrNotSupported, umad.ErrABI) {
		t.Error("every not-supported error matches umad.ErrABI")
	}
	if umad.ErrNotSupported != uverbs.ErrNotSupported {
		t.Error("umad.ErrNotSupported is not the module's value")
	}
}
