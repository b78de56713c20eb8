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

// Every package's not-supported value is the one sentinel, and each matches errors.ErrUnsupported and
// EOPNOTSUPP (the errno the C libraries give for the same refusal), wrapped or not.
func TestOneNotSupportedSentinel(t *testing.T) {
	matchAll(t, map[string]error{
		"rdmaerr.ErrNotSupported":     rdmaerr.ErrNotSupported,
		"uverbs.ErrNotSupported":      uverbs.ErrNotSupported,
		"netlinkrdma.ErrNotSupported": netlinkrdma.ErrNotSupported,
		"mlx5.ErrNotSupported":        mlx5.ErrNotSupported,
		"wrapped":                     fmt.Errorf("create QP: TSO: %w", uverbs.ErrNotSupported),
		"rdmaerr.NotSupported":        rdmaerr.NotSupported("no ABI"),
	}, errors.ErrUnsupported, rdmaerr.ErrNotSupported, unix.EOPNOTSUPP)
	if errors.Is(uverbs.ErrNotSupported, unix.EINVAL) || errors.Is(uverbs.ErrNotSupported, unix.EPROTONOSUPPORT) {
		t.Error("ErrNotSupported matches an errno other than EOPNOTSUPP")
	}
	// Kernel answers wrapped by each package's error type match all three.
	for _, errno := range []unix.Errno{unix.EOPNOTSUPP, unix.EPROTONOSUPPORT} {
		matchAll(t, map[string]error{
			"uverbs.Error":      &uverbs.Error{Op: "create QP", Device: "rxe0", Err: fmt.Errorf("x: %w", errno)},
			"netlinkrdma.Error": &netlinkrdma.OpError{Op: "get", Object: "rxe0", Err: errno},
		}, errors.ErrUnsupported, rdmaerr.ErrNotSupported, errno)
	}
}

// matchAll checks that each of errs (by name) matches every one of targets.
func matchAll(t *testing.T, errs map[string]error, targets ...error) {
	t.Helper()
	for name, err := range errs {
		for _, target := range targets {
			if !errors.Is(err, target) {
				t.Errorf("%s: %v does not match %v", name, err, target)
			}
		}
	}
}

// Every package's use-after-close value is the one sentinel, and it matches net.ErrClosed (and os.ErrClosed),
// so that code written for net.Conn reads it; rsocket reports net.ErrClosed itself, as net.Conn does.
func TestOneClosedSentinel(t *testing.T) {
	matchAll(t, map[string]error{
		"rdmaerr":     rdmaerr.ErrClosed,
		"uverbs":      uverbs.ErrClosed,
		"rdmacm":      rdmacm.ErrClosed,
		"umad":        umad.ErrClosed,
		"netlinkrdma": netlinkrdma.ErrClosed,
		"umad.Error":  &umad.Error{Op: "recv", Device: "umad0", Kind: umad.ErrClosed},
		"uverbs.Error": &uverbs.Error{Op: "post send", Device: "rxe0",
			Err: fmt.Errorf("queue destroyed: %w", uverbs.ErrClosed)},
	}, net.ErrClosed, os.ErrClosed, rdmaerr.ErrClosed)
	if errors.Is(net.ErrClosed, rdmaerr.ErrClosed) || errors.Is(rdmaerr.ErrClosed, rdmaerr.ErrNoDevice) {
		t.Error("ErrClosed matches too much")
	}
}

// One no-such-device value; umad's ABI mismatch is a not-supported error.
func TestOneNoDeviceSentinel(t *testing.T) {
	if uverbs.ErrNoDevice != rdmaerr.ErrNoDevice || umad.ErrNoDevice != rdmaerr.ErrNoDevice {
		t.Error("uverbs.ErrNoDevice, umad.ErrNoDevice and rdmaerr.ErrNoDevice differ")
	}
	matchAll(t, map[string]error{"umad ABI mismatch": &umad.Error{Op: "open", Device: "rxe0:1", Kind: umad.ErrABI}},
		umad.ErrABI, uverbs.ErrNotSupported, errors.ErrUnsupported)
	if errors.Is(rdmaerr.ErrNotSupported, umad.ErrABI) {
		t.Error("every not-supported error matches umad.ErrABI")
	}
	if umad.ErrNotSupported != uverbs.ErrNotSupported {
		t.Error("umad.ErrNotSupported is not the module's value")
	}
}
