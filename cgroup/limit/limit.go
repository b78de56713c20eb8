// Package limit is the error of a verbs call that the RDMA cgroup controller
// refused, and the resources it charges. It is a leaf (errors, fmt and the
// errno constants only) so that the verbs core can build the error without
// importing package cgroup; package cgroup re-exports everything here under
// its historical names (cgroup.LimitError, cgroup.ErrLimitReached,
// cgroup.ChargeError, cgroup.Resource, cgroup.HCAHandle, cgroup.HCAObject),
// which are the same types and values.
package limit

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Resource names one resource the RDMA controller accounts, spelled as in
// rdma.max and rdma.current.
type Resource string

// The resources of the Linux RDMA controller, in the order the kernel prints
// them.
const (
	// HCAHandle counts verbs contexts (one per GET_CONTEXT).
	HCAHandle Resource = "hca_handle"
	// HCAObject counts IDR-type uverbs objects (PD, CQ, QP, MR, SRQ, AH, MW, ...).
	HCAObject Resource = "hca_object"
)

// Known reports whether r is [HCAHandle] or [HCAObject].
func (r Resource) Known() bool {
	return r == HCAHandle || r == HCAObject
}

// ErrReached is matched (errors.Is) by every [*Error]: an RDMA resource could
// not be charged because a cgroup limit was reached.
var ErrReached = errors.New("rdma cgroup limit reached")

// Error is the error of a verbs call that the RDMA cgroup controller
// refused: the kernel answered EAGAIN because charging Resource on Device
// would exceed rdma.max in the caller's cgroup or in one of its ancestors.
//
// errors.Is(err, ErrReached) and errors.Is(err, unix.EAGAIN) both hold.
type Error struct {
	Device   string   // RDMA device name, e.g. "rxe0"
	Resource Resource // HCAHandle for a context, HCAObject for any other object
	Err      error    // the kernel's error, normally unix.EAGAIN
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: %s on %s: %v", ErrReached, e.Resource, e.Device, e.Err)
}

// Unwrap returns the kernel's error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is [ErrReached].
func (e *Error) Is(target error) bool { return target == ErrReached }

// Charge turns the error of a uverbs command that charges res on device into
// an [*Error] when it is EAGAIN, the errno the RDMA controller gives when a
// charge would exceed a limit (rdmacg_try_charge). Other errors, and nil, are
// returned unchanged.
//
// Which resource a command charges: GET_CONTEXT (opening a verbs context)
// charges [HCAHandle]; every command that creates an IDR-type object charges
// [HCAObject]: alloc PD, reg MR (and DM/dma-buf MR), alloc MW, create AH, CQ,
// QP, SRQ, XRC SRQ, WQ, RWQ indirection table, flow, flow action, counters,
// alloc DM, open XRCD, open QP, and mlx5 DEVX/UMEM/VAR/UAR/packet-pacing
// allocations. Creating a completion channel or an async event file charges
// nothing, so EAGAIN from those is not a limit.
//
// Drivers may return EAGAIN for their own reasons after the charge succeeded;
// the kernel gives no way to tell them apart, so a caller that must be sure
// can compare rdma.current with rdma.max of its cgroup (cgroup.Self).
func Charge(err error, device string, res Resource) error {
	if err == nil || !errors.Is(err, unix.EAGAIN) {
		return err
	}
	return &Error{Device: device, Resource: res, Err: err}
}
