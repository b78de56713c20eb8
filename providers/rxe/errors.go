package rxe

import (
	"golang.org/x/sys/unix"
)

// Error is an error of the rxe provider: the operation, what went wrong, and the cause, usually the unix.Errno
// rdma-core returns in the same situation, so errors.Is(err, unix.EINVAL) works.
//
// The data-path errors are preallocated values (posting into a full queue must not allocate); compare them with
// errors.Is against the errno, not by identity.
type Error struct {
	Op     string // "post send", "post recv", "arm CQ", "create CQ", ...
	Reason string // what was wrong, e.g. "send queue full"
	Err    error  // the cause
}

func (e *Error) Error() string {
	s := "rxe: " + e.Op
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

const (
	opPostSend = "post send"
	opPostRecv = "post recv"
	opPostSRQ  = "post SRQ recv"
)

// Preallocated data-path errors.
var (
	errSendNotReady   = &Error{Op: opPostSend, Reason: "QP is not in RTS, SQD, SQE or ERR", Err: unix.EINVAL}
	errSendFull       = &Error{Op: opPostSend, Reason: "send queue full", Err: unix.ENOMEM}
	errSendTooManySGE = &Error{Op: opPostSend, Reason: "more SGEs than max_send_sge", Err: unix.EINVAL}
	errSendLength     = &Error{Op: opPostSend, Reason: "SGE lengths add up to more than 2^32-1 bytes", Err: unix.EINVAL}
	errSendInline     = &Error{Op: opPostSend, Reason: "inline data longer than max_inline_data", Err: unix.EINVAL}
	errSendAtomic     = &Error{Op: opPostSend, Reason: "atomic needs an 8-byte aligned remote address and at least 8 bytes", Err: unix.EINVAL}
	errSendBindMW     = &Error{Op: opPostSend, Reason: "BIND_MW needs an RC or UC QP, no SGEs and no immediate data", Err: unix.EINVAL}
	errSendOpcode     = &Error{Op: opPostSend, Reason: "opcode not supported by rxe", Err: unix.EINVAL}
	errSendNoAH       = &Error{Op: opPostSend, Reason: "UD send without an address handle", Err: unix.EINVAL}
	errSendAHNum      = &Error{Op: opPostSend, Reason: "address handle has no kernel AH number", Err: unix.EINVAL}
	errSendDestroyed  = &Error{Op: opPostSend, Reason: "QP destroyed", Err: unix.EINVAL}
	errRecvReset      = &Error{Op: opPostRecv, Reason: "QP is in RESET", Err: unix.EINVAL}
	errRecvSRQ        = &Error{Op: opPostRecv, Reason: "QP receives from an SRQ", Err: unix.EINVAL}
	errRecvFull       = &Error{Op: opPostRecv, Reason: "receive queue full", Err: unix.ENOMEM}
	errRecvTooManySGE = &Error{Op: opPostRecv, Reason: "more SGEs than max_recv_sge", Err: unix.EINVAL}
	errRecvLength     = &Error{Op: opPostRecv, Reason: "SGE lengths add up to more than 2^32-1 bytes", Err: unix.EINVAL}
	errRecvDestroyed  = &Error{Op: opPostRecv, Reason: "QP destroyed", Err: unix.EINVAL}
	errSRQFull        = &Error{Op: opPostSRQ, Reason: "shared receive queue full", Err: unix.ENOMEM}
	errSRQTooManySGE  = &Error{Op: opPostSRQ, Reason: "more SGEs than the SRQ's max_sge", Err: unix.EINVAL}
	errSRQLength      = &Error{Op: opPostSRQ, Reason: "SGE lengths add up to more than 2^32-1 bytes", Err: unix.EINVAL}
	errSRQDestroyed   = &Error{Op: opPostSRQ, Reason: "SRQ destroyed or unmapped", Err: unix.EINVAL}
	errArmDestroyed   = &Error{Op: "arm CQ", Reason: "CQ destroyed", Err: unix.EINVAL}
)

// recvErrors are the errors one receive ring reports (a QP's RQ or an SRQ).
type recvErrors struct {
	full, tooManySGE, length, destroyed *Error
}

var (
	qpRecvErrors  = recvErrors{full: errRecvFull, tooManySGE: errRecvTooManySGE, length: errRecvLength, destroyed: errRecvDestroyed}
	srqRecvErrors = recvErrors{full: errSRQFull, tooManySGE: errSRQTooManySGE, length: errSRQLength, destroyed: errSRQDestroyed}
)
