package rdmacm

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// WriteCMEvent queues an event of the application's own for the id on its channel (rdma_write_cm_event): a
// later GetEvent returns it with ID set to this id, Status status and Arg arg, in order with the kernel's
// events of the channel. Like librdmacm it takes only EventUser (EINVAL otherwise, before any system call).
//
// The kernel command (WRITE_CM_EVENT) is newer than Linux 6.12: kernels without it answer EINVAL for the
// unknown command number, which WriteCMEvent returns as an error that matches ErrNotSupported (and
// unix.EINVAL).
func (id *ID) WriteCMEvent(event EventType, status int32, arg uint64) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "write cm event"
	if err := id.check(op); err != nil {
		return err
	}
	if event != EventUser {
		return opErr(op, id.kid, fmt.Errorf("event %d: only RDMA_CM_EVENT_USER can be written: %w", event, unix.EINVAL))
	}
	return opErr(op, id.kid, id.writeEventLocked(abi.RDMA_CM_EVENT_USER, status, arg))
}

// writeEventLocked issues WRITE_CM_EVENT (USER, or INTERNAL for the library's own events).
func (id *ID) writeEventLocked(event uint32, status int32, arg uint64) error {
	req := abi.RdmaUcmWriteCmEvent{Id: id.kid, Event: event, Status: uint32(status)}
	*req.Arg() = arg
	return id.ch.newerCommand(abi.RDMA_USER_CM_CMD_WRITE_CM_EVENT, "WRITE_CM_EVENT",
		exec(id.ch, abi.RDMA_USER_CM_CMD_WRITE_CM_EVENT, &req, nil, 0))
}

// noID is an id number no rdma_cm file has: the kernel allocates them from 0 up.
const noID = ^uint32(0)

// newerCommand returns err, the answer to cmd (a command newer than the 6.1 uAPI), as an error that also
// matches ErrNotSupported when the kernel does not have the command. ucma answers EINVAL both for a command
// number past its table and for a state or argument a command refuses; a second write of the command for
// an id that does not exist tells them apart: a kernel that has the command looks the id up (ENOENT).
func (ch *Channel) newerCommand(cmd uint32, name string, err error) error {
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	var probe error
	switch cmd {
	case abi.RDMA_USER_CM_CMD_WRITE_CM_EVENT:
		req := abi.RdmaUcmWriteCmEvent{Id: noID, Event: abi.RDMA_CM_EVENT_USER}
		probe = exec(ch, cmd, &req, nil, 0)
	case abi.RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE:
		req := abi.RdmaUcmResolveIbService{Id: noID}
		probe = exec(ch, cmd, &req, nil, 0)
	}
	if !errors.Is(probe, unix.EINVAL) {
		return err
	}
	return fmt.Errorf("the kernel has no %s (command %d; Linux 6.12 and older): %w (%w)", name, cmd, ErrNotSupported, err)
}
