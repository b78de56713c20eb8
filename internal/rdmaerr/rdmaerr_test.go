package rdmaerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/goverbs/goverbs/internal/rdmaerr"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/providers/mlx5"
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
