package siw

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// errArmDestroyed is Arm on a CQ whose ring is gone (preallocated: arming is on the event data path).
var errArmDestroyed = fmt.Errorf("siw: arm CQ: CQ destroyed: %w", unix.EINVAL)

// opError is a control-path error of the provider; the verbs core adds the verb and the device.
func opError(op, reason string, err error) error {
	return fmt.Errorf("siw: %s: %s: %w", op, reason, err)
}

// errnoOf is the errno inside err (EIO if it carries none).
func errnoOf(err error) unix.Errno {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return unix.EIO
}
