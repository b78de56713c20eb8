package cgroup

import (
	"errors"

	"github.com/goverbs/goverbs/cgroup/limit"
)

// ErrLimitReached is matched (errors.Is) by every [*LimitError]: an RDMA
// resource could not be charged because a cgroup limit was reached. It is
// [limit.ErrReached].
var ErrLimitReached = limit.ErrReached

// LimitError is the error of a verbs call that the RDMA cgroup controller
// refused: the kernel answered EAGAIN because charging Resource on Device
// would exceed rdma.max in the caller's cgroup or in one of its ancestors.
// It is [limit.Error], defined in that leaf package so that the verbs core
// builds it without importing this one.
//
// errors.Is(err, ErrLimitReached) and errors.Is(err, unix.EAGAIN) both hold.
type LimitError = limit.Error

// ChargeError turns the error of a uverbs command that charges res on device
// into a [*LimitError] when it is EAGAIN, the errno the RDMA controller gives
// when a charge would exceed a limit (rdmacg_try_charge). Other errors, and
// nil, are returned unchanged. It is [limit.Charge], whose documentation
// lists which command charges which resource.
//
// Drivers may return EAGAIN for their own reasons after the charge succeeded;
// the kernel gives no way to tell them apart, so a caller that must be sure
// can compare rdma.current with rdma.max of its cgroup ([Self]).
func ChargeError(err error, device string, res Resource) error {
	return limit.Charge(err, device, res)
}

// ErrNoController means no mounted cgroup hierarchy carries the RDMA
// controller (not built into the kernel, not mounted, or on cgroup v2 not
// listed in the root's cgroup.controllers).
var ErrNoController = errors.New("rdma cgroup controller not available")

// ErrNotEnabled means a cgroup v2 cgroup has no rdma.max or rdma.current
// because the controller is not enabled in its parent's
// cgroup.subtree_control, or the cgroup is the root cgroup, which never has
// those files. It comes wrapped together with the ENOENT of the open.
var ErrNotEnabled = errors.New("rdma controller not enabled for this cgroup")

// Error is the error of a filesystem operation on a cgroup. Err is the cause:
// an *os.PathError carrying the kernel's errno (so errors.Is(err, unix.ENODEV)
// works for a write naming an unknown device), a [*ParseError], or a sentinel
// of this package.
type Error struct {
	Op     string // what was done: "read rdma.max", "set limit", "add process", ...
	Cgroup string // the cgroup's path in its hierarchy, "/" for the root
	Device string // the RDMA device concerned, if any
	Err    error
}

func (e *Error) Error() string {
	s := "cgroup: " + e.Op + " " + e.Cgroup
	if e.Device != "" {
		s += " for " + e.Device
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
