package provider

import "golang.org/x/sys/unix"

// Status is the outcome of a data-path call (post send, post receive, poll): a small value the provider
// returns without allocating, which the core turns into its preallocated error for that verb and device. The
// same condition is the same Status, and so the same errno, on every provider; the table is Statuses. The low
// byte is the code; a Doorbell status carries the system call's errno above it (DoorbellFailed).
type Status uint32

// Data-path outcomes.
const (
	OK                 Status = iota
	NotReady                  // the QP's state does not allow this post (send before RTS, receive in RESET)
	QueueFull                 // no free slot: some requests may have been posted (n tells how many)
	TooManySGE                // more SGEs than the queue's max SGE
	TooLong                   // the SGE lengths add up to more than 2^32-1 bytes
	InlineTooLong             // inline data longer than the QP's max_inline_data
	BadAtomic                 // an atomic needs an 8-byte aligned remote address and at least 8 bytes
	BadBindMW                 // BIND_MW needs an RC or UC QP, no SGEs and no immediate data
	BadOpcode                 // an opcode the verbs do not define, or not valid on this QP type
	OpcodeNotSupported        // a defined opcode this provider or device does not implement
	NoAH                      // a UD send without an address handle
	BadAH                     // an address handle this provider cannot use
	NoRecvQueue               // the QP has no receive queue of its own (it receives from an SRQ)
	Destroyed                 // the queue was destroyed (a post racing with Close)
	UnknownCQE                // the device wrote a completion for a queue the provider does not know
	Doorbell                  // the doorbell system call failed; the errno is in the status (DoorbellFailed)
	BadFlush                  // RDMA FLUSH needs an RC QP, no SGEs, a placement type and level RANGE or MR
	BadAtomicWrite            // ATOMIC WRITE needs an RC QP, no SGEs and an 8-byte aligned remote address
	numStatus
)

// DoorbellFailed is the Doorbell status carrying the failed system call's errno.
func DoorbellFailed(errno unix.Errno) Status { return Doorbell | Status(errno)<<8 }

// Code is the status without the errno a Doorbell status carries.
func (s Status) Code() Status { return s & 0xff }

// Errno is the errno of the row, or the one a Doorbell status carries.
func (s Status) Errno() unix.Errno {
	if s.Code() == Doorbell {
		return unix.Errno(s >> 8)
	}
	if c := s.Code(); c < numStatus {
		return Statuses[c].Errno
	}
	return unix.EINVAL
}

// StatusInfo is one row of the data-path error table.
type StatusInfo struct {
	Reason string     // what was wrong, in words
	Errno  unix.Errno // the errno rdma-core's providers return in the same situation (0 for OK)
}

// Statuses is the data-path error table, indexed by Status. Package uverbs documents it for users.
var Statuses = [numStatus]StatusInfo{
	OK:                 {"", 0},
	NotReady:           {"QP state does not allow posting", unix.EINVAL},
	QueueFull:          {"queue full", unix.ENOMEM},
	TooManySGE:         {"more SGEs than the queue's max_sge", unix.EINVAL},
	TooLong:            {"SGE lengths add up to more than 2^32-1 bytes", unix.EINVAL},
	InlineTooLong:      {"inline data longer than max_inline_data", unix.EINVAL},
	BadAtomic:          {"atomic needs an 8-byte aligned remote address and at least 8 bytes", unix.EINVAL},
	BadBindMW:          {"BIND_MW needs an RC or UC QP, no SGEs and no immediate data", unix.EINVAL},
	BadOpcode:          {"opcode not valid on this QP", unix.EINVAL},
	OpcodeNotSupported: {"opcode not supported by the provider", unix.EOPNOTSUPP},
	NoAH:               {"UD send without an address handle", unix.EINVAL},
	BadAH:              {"address handle not usable by this provider", unix.EINVAL},
	NoRecvQueue:        {"QP has no receive queue (it receives from an SRQ)", unix.EINVAL},
	Destroyed:          {"queue destroyed", unix.EINVAL},
	UnknownCQE:         {"completion for a queue the provider does not know", unix.EIO},
	Doorbell:           {"doorbell failed", 0},
	BadFlush:           {"RDMA FLUSH needs an RC QP, no SGEs, placement GLOBAL and/or PERSISTENT and level RANGE or MR", unix.EINVAL},
	BadAtomicWrite:     {"ATOMIC WRITE needs an RC QP, no SGEs and an 8-byte aligned remote address", unix.EINVAL},
}

// NumStatus is the number of Status values.
const NumStatus = int(numStatus)

// Err is nil for OK and otherwise the status's errno as an error (for provider tests; the core builds richer
// errors). It does not allocate.
func (s Status) Err() error {
	if s == OK {
		return nil
	}
	return s.Errno()
}
