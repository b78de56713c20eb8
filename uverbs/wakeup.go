package uverbs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrWoken is what CompChannel.WaitEvent returns when its Wakeup was woken before an event came.
var ErrWoken = errors.New("woken")

// A Wakeup ends a CompChannel.WaitEvent from another goroutine: a deadline that changed, a Close, anything
// the waiter must look at. It is an eventfd, so a Wake that comes before the wait starts is not lost: that
// wait returns ErrWoken at once. The zero value is not usable; make one with NewWakeup.
type Wakeup struct {
	mu     sync.RWMutex // Close against Wake and WaitEvent
	fd     int
	closed bool
}

// NewWakeup makes a Wakeup (an eventfd, close-on-exec and non-blocking).
func NewWakeup() (*Wakeup, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("uverbs: wakeup eventfd: %w", err)
	}
	return &Wakeup{fd: fd}, nil
}

// Wake makes the current or next WaitEvent using w return ErrWoken. It does not block; after Close it fails
// with ErrClosed.
func (w *Wakeup) Wake() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	one := uint64(1) // the eventfd adds it to its counter
	for {
		_, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(w.fd), uintptr(unsafe.Pointer(&one)), 8)
		switch e {
		case unix.EINTR:
			continue
		case 0, unix.EAGAIN: // EAGAIN: the counter is at its maximum, so it is already woken
			return nil
		}
		return e
	}
}

// clear consumes pending wake-ups. w.mu is held for reading.
func (w *Wakeup) clear() {
	var n uint64
	for {
		// Non-blocking: EAGAIN when there was nothing to consume.
		_, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(w.fd), uintptr(unsafe.Pointer(&n)), 8)
		if e != unix.EINTR {
			return
		}
	}
}

// Close releases the eventfd. No WaitEvent may be using w.
func (w *Wakeup) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return unix.Close(w.fd)
}

// WaitEvent waits in the kernel for the next completion event, as a blocking ibv_get_cq_event does, until the
// deadline passes (an error matching os.ErrDeadlineExceeded; the zero time means none) or w is woken
// (ErrWoken). It is the cheaper way to wait for a caller that owns its deadlines: one ppoll(2) on the channel
// and the Wakeup's eventfd, then one read of the event, where GetEvent on Go's poller costs a failed read, the
// runtime's parking and epoll wait and a second read (docs/perf.md measures both). The goroutine's thread is
// blocked while it waits (Go's scheduler knows, as for any blocking system call). Close does not end a
// WaitEvent: wake w first. A channel set to wait in the kernel (SetWaitInKernel) is refused with EINVAL, and so
// is one already registered with Go's poller by a GetEvent that waited there (its events would also wake the
// runtime's network poller for nothing).
func (ch *CompChannel) WaitEvent(deadline time.Time, w *Wakeup) (*CQ, error) {
	ch.rmu.Lock()
	defer ch.rmu.Unlock()
	if err := ch.checkOpen(); err != nil {
		return nil, wrap("wait for CQ event", ch.ctx.dev.Name, err)
	}
	if ch.inKernel.Load() || ch.pf.Load() != nil {
		return nil, wrap("wait for CQ event", ch.ctx.dev.Name, fmt.Errorf("the channel waits in read(2) or on Go's poller: %w", unix.EINVAL))
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return nil, wrap("wait for CQ event", ch.ctx.dev.Name, fmt.Errorf("wakeup: %w", ErrClosed))
	}
	ch.pfds = [2]unix.PollFd{{Fd: int32(ch.fd), Events: unix.POLLIN}, {Fd: int32(w.fd), Events: unix.POLLIN}}
	for {
		var ts *unix.Timespec
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, wrap("wait for CQ event", ch.ctx.dev.Name, os.ErrDeadlineExceeded)
			}
			ch.pts = unix.NsecToTimespec(int64(left))
			ts = &ch.pts
		}
		ready, _, pe := syscall.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&ch.pfds[0])), uintptr(len(ch.pfds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
		switch {
		case pe == unix.EINTR:
			continue
		case pe != 0:
			return nil, wrap("wait for CQ event", ch.ctx.dev.Name, pe)
		case ready == 0:
			continue // the deadline: checked at the top
		}
		if ch.pfds[1].Revents != 0 {
			w.clear()
			return nil, wrap("wait for CQ event", ch.ctx.dev.Name, ErrWoken)
		}
		if ch.pfds[0].Revents&unix.POLLIN == 0 {
			return nil, wrap("wait for CQ event", ch.ctx.dev.Name, fmt.Errorf("poll events %#x: %w", ch.pfds[0].Revents, unix.EIO))
		}
		// The channel is non-blocking (the poller's mode): another reader may have taken the event. So the
		// read never sleeps and is a raw system call, without the scheduler's work around a blocking one.
		r, _, e := syscall.RawSyscall6(unix.SYS_READ, uintptr(ch.fd), uintptr(unsafe.Pointer(&ch.buf[0])), uintptr(len(ch.buf)), 0, 0, 0)
		switch n := int(r); {
		case e == unix.EAGAIN || e == unix.EINTR:
			continue
		case e != 0:
			return nil, wrap("wait for CQ event", ch.ctx.dev.Name, e)
		case n != len(ch.buf):
			return nil, wrap("wait for CQ event", ch.ctx.dev.Name, fmt.Errorf("short event record: %d of %d bytes: %w", n, len(ch.buf), io.ErrUnexpectedEOF))
		}
		return ch.deliver()
	}
}
