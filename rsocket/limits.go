package rsocket

import (
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// maxBufferSize is the largest SendBuffer and RecvBuffer: librdmacm keeps both sizes in 32-bit fields
// (sbuf_size, rbuf_size), so a C peer could not describe a larger buffer, and neither can the protocol.
const maxBufferSize = 1<<32 - 2

// LimitError is an Options value a connection cannot be set up with, found before anything was allocated,
// pinned or sent: the option, the value asked for, and the limit it exceeds. It unwraps to Err: unix.EINVAL
// for the protocol's or the device's limits; for memory, a *uverbs.MemlockError (RLIMIT_MEMLOCK) or a
// *uverbs.MemoryError (the system's or the memory cgroup's available memory), both unix.ENOMEM.
type LimitError struct {
	Option string // "SendBuffer", "RecvBuffer", "SQSize+RQSize", or "buffers" for their sum
	Value  uint64 // what was asked for (bytes, or entries)
	Limit  uint64 // the limit it exceeds
	What   string // the limit's name: "the device's max_mr_size (rxe0)", "RLIMIT_MEMLOCK", ...
	Err    error
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("rsocket: %s of %d exceeds %s (%d): %v", e.Option, e.Value, e.What, e.Limit, e.Err)
}

func (e *LimitError) Unwrap() error { return e.Err }

// sizes is what one connection allocates, after clamping and checking Options against the device.
type sizes struct {
	sq, rq     uint16
	sbuf, rbuf int // send ring (without the control slots) and receive buffer, bytes
	tl         int // target SGL array and iomap table, bytes
	inline     int
	iomap      int
	msgSend    bool // message-send mode (iWARP): see setMsgSend
}

// pinned is the number of bytes the connection registers: the send ring with its control slots (and message
// word), the receive buffer (and receive slots) and the target SGL array, each rounded up to whole pages as AllocBuffer maps them.
func (s sizes) pinned() uint64 {
	pg := uint64(unix.Getpagesize())
	up := func(n int) uint64 { return (uint64(n) + pg - 1) / pg * pg }
	return up(s.sbufTotal()) + up(s.rbufTotal()) + up(s.tl)
}

// plan turns Options into the sizes of a connection on a device with attr, as librdmacm does, and checks
// them before anything is allocated. Queue depths are clamped (librdmacm's rs_set_qp_size: to
// [RS_QP_MIN_SIZE, min(RS_QP_MAX_SIZE, max_qp_wr)]; goverbs also keeps their sum, the CQ's size, within
// max_cqe). Buffer sizes are checked: over the protocol's 32-bit sizes or the device's max_mr_size is a
// *LimitError (EINVAL). attr nil skips the device's limits.
func plan(o *Options, dev string, attr *uverbs.DeviceAttr) (sizes, error) {
	s := sizes{sq: o.sqSize(), rq: o.rqSize(), inline: o.inlineSize(), iomap: o.iomapSize()}
	s.tl = sglSize*sgeLen + s.iomap*iomapLen
	sb, rb := o.SendBuffer, o.RecvBuffer
	if uint64(max(sb, 0)) > maxBufferSize {
		return s, &LimitError{Option: "SendBuffer", Value: uint64(sb), Limit: maxBufferSize,
			What: "the rsockets protocol's 32-bit buffer size", Err: unix.EINVAL}
	}
	if uint64(max(rb, 0)) > maxBufferSize {
		return s, &LimitError{Option: "RecvBuffer", Value: uint64(rb), Limit: maxBufferSize,
			What: "the rsockets protocol's 32-bit buffer size", Err: unix.EINVAL}
	}
	s.sbuf, s.rbuf = o.sendBuffer(), o.recvBuffer()
	if attr == nil {
		return s, nil
	}
	if q := attr.MaxQPWR; q > 0 {
		qmax := uint16(min(q, qpMaxSize))
		if qmax < qpMinSize {
			return s, &LimitError{Option: "SQSize", Value: qpMinSize, Limit: uint64(q),
				What: "the device's max_qp_wr (" + dev + ")", Err: unix.EINVAL}
		}
		s.sq, s.rq = min(s.sq, qmax), min(s.rq, qmax)
	}
	if c := attr.MaxCQE; c > 0 && uint32(s.sq)+uint32(s.rq) > c {
		if c < 2*qpMinSize {
			return s, &LimitError{Option: "SQSize+RQSize", Value: 2 * qpMinSize, Limit: uint64(c),
				What: "the device's max_cqe (" + dev + ")", Err: unix.EINVAL}
		}
		// One CQ serves both queues: shrink the deeper one to what is left.
		if s.sq >= s.rq {
			s.rq = uint16(min(uint32(s.rq), c/2))
			s.sq = uint16(c - uint32(s.rq))
		} else {
			s.sq = uint16(min(uint32(s.sq), c/2))
			s.rq = uint16(c - uint32(s.sq))
		}
	}
	if m := attr.MaxMRSize; m > 0 {
		for _, b := range []struct {
			opt string
			n   int
		}{{"SendBuffer", s.sbuf + ctrlSlots*sgeLen}, {"RecvBuffer", s.rbuf}} {
			if uint64(b.n) > m {
				return s, &LimitError{Option: b.opt, Value: uint64(b.n), Limit: m,
					What: "the device's max_mr_size (" + dev + ")", Err: unix.EINVAL}
			}
		}
	}
	return s, nil
}

// checkMemory refuses, before anything is allocated, buffers the process could not pin: RLIMIT_MEMLOCK, the
// system's available memory, the memory cgroup (uverbs.CheckPin).
func (s sizes) checkMemory(dev string) error {
	n := s.pinned()
	if err := uverbs.CheckPin(dev, n); err != nil {
		le := &LimitError{Option: "buffers", Value: n, What: "the memory this process can pin", Err: err}
		switch e := err.(type) {
		case *uverbs.MemlockError:
			le.Limit, le.What = e.Limit, "RLIMIT_MEMLOCK"
		case *uverbs.MemoryError:
			le.Limit, le.What = e.Available, e.Limit
		}
		return le
	}
	return nil
}

// setMsgSend makes s message-send mode's (librdmacm's RS_OPT_MSG_SEND, which rs_create_ep chooses on an iWARP
// device): inline data of at least the message word (as librdmacm since rdma-core 51 (commit fc82b150b); 44 refused a smaller
// inline size with ENOTSUP), a 4-byte receive slot per receive after the receive buffer, registered with it,
// and the message word's place after the control slots.
func (s *sizes) setMsgSend(dev string, attr *uverbs.DeviceAttr) error {
	s.msgSend = true
	s.inline = max(s.inline, msgWordLen)
	if attr != nil && attr.MaxMRSize > 0 && uint64(s.rbufTotal()) > attr.MaxMRSize {
		return &LimitError{Option: "RecvBuffer", Value: uint64(s.rbufTotal()), Limit: attr.MaxMRSize,
			What: "the device's max_mr_size (" + dev + ")", Err: unix.EINVAL}
	}
	return nil
}

// sbufTotal is the send buffer's registered size: the ring, the control slots and, in message-send mode, the
// message word.
func (s sizes) sbufTotal() int {
	n := s.sbuf + ctrlSlots*sgeLen
	if s.msgSend {
		n += msgWordLen
	}
	return n
}

// rbufTotal is the receive buffer's registered size: the buffer and, in message-send mode, the receive slots.
func (s sizes) rbufTotal() int {
	if s.msgSend {
		return s.rbuf + int(s.rq)*msgWordLen
	}
	return s.rbuf
}
