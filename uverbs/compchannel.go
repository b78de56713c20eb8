package uverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// ErrWoken is what CompChannel.GetEvent returns when CompChannel.Wake ended its wait before an event came.
var ErrWoken = errors.New("woken")

// CompChannel is a completion event channel (ibv_comp_channel): CQs attached to it report completion events
// on it after they are armed.
//
// There is one way to wait, GetEvent, with the controls of an os.File and of cilium's ringbuf.Reader: a
// context for the call, SetDeadline for the calls (a deadline costs no allocation per wait; a context that
// can end costs one), Wake to end the current or next wait from another goroutine (ErrWoken), and Close,
// which ends every wait (ErrClosed). Where the waiting goroutine sleeps is chosen when the channel is made
// (CompChannelOptions.Wait) and changes none of that.
type CompChannel struct {
	ctx    *Context
	fd     int
	kernel bool // WaitEpoll or WaitRead: epoll on fd and wfd (epfd); otherwise Go's runtime poller on f

	f    *os.File // the fd registered with Go's poller (WaitPoller)
	wfd  int      // the eventfd that wakes a kernel waiter (-1 otherwise)
	epfd int      // epoll set of fd and wfd for a kernel waiter (-1 otherwise; WaitRead: until its first epoll wait)

	rmu sync.Mutex // one waiter at a time; it owns buf, evs and pts
	buf [8]byte
	evs [2]unix.EpollEvent
	pts unix.Timespec

	// deadline is SetDeadline's time in Unix nanoseconds (0: none). wakes counts Wakes not yet reported.
	// waiting is set while a kernel waiter is inside epoll_pwait2, so that SetDeadline needs no system call
	// when nobody waits (rsocket sets the deadline of every wait just before it). dlMu orders the poller's
	// read deadline between SetDeadline, Wake and a waiter restoring it.
	deadline atomic.Int64
	wakes    atomic.Uint32
	waiting  atomic.Bool
	dlMu     sync.Mutex

	// last are the CQs of the latest events: most channels serve one or two CQs (a send and a receive CQ),
	// so an event usually names one of them and deliver skips the device's handle table. User handles are
	// never reused, so a match is that CQ; CQ.Close clears its slot. lastNext (guarded by rmu) is the slot
	// the next miss replaces.
	last     [2]atomic.Pointer[CQ]
	lastNext uint8

	// A WaitRead wait with no deadline and a context that cannot end sleeps in one read(2) (waitRead), as
	// libibverbs' ibv_get_cq_event does; only an event ends that read, so Wake, SetDeadline and Close make one
	// with kick while blocked says a waiter may be in it. kick is nil where the device cannot (see kicker):
	// every wait then sleeps in epoll_pwait2. kickCQ is the kicker's CQ (nil until made), whose events the
	// waiter reads, counts in kickEvents and skips. fdBlocking is the fd's mode: blocking for
	// waitRead, non-blocking for the epoll wait (rmu guards both counters).
	kick       func() error
	kicker     *kicker
	kickCQ     atomic.Pointer[CQ]
	blocked    atomic.Bool
	kickEvents int
	fdBlocking bool

	life
	cqs int // CQs using the channel; guarded by mu
}

// WaitMode is where a completion channel's GetEvent sleeps (CompChannelOptions.Wait). Contexts, deadlines,
// Wake and Close end a wait the same way in every mode; the modes differ in cost (docs/perf.md measures them)
// and in what a wake-up takes.
type WaitMode uint8

const (
	// WaitPoller parks the goroutine on Go's runtime poller (a failed read, the runtime's parking and epoll
	// wait, a second read). No thread sleeps; for programs with many channels or many idle waits.
	WaitPoller WaitMode = iota
	// WaitEpoll sleeps in the kernel: one epoll_pwait2(2) on a set holding the channel and an eventfd of the
	// channel's own, then one read of the event. The waiting goroutine's thread is blocked meanwhile (Go's
	// scheduler knows, as for any blocking system call); Wake, Close, a context that ends and a changed
	// deadline write the eventfd. For one goroutine per channel that waits on every event and is often woken
	// by others (rsocket: readers and writers share the waiter).
	WaitEpoll
	// WaitRead is WaitEpoll, except that a wait with no deadline and a context that cannot end
	// (context.Background) is one blocking read(2) of the channel, as libibverbs' ibv_get_cq_event: a system
	// call fewer per wait. Only an event ends that read, so Wake, SetDeadline and Close, while a read sleeps,
	// make one: the first such wake-up creates a PD, a CQ of 8 entries on the channel and an RC QP whose
	// flushed receive is the event (each later one replaces the QP; all are kept until Close and counted by
	// the RDMA cgroup; a wake-up that cannot make them fails with their error and the waiter sleeps on). For
	// programs that wait on every event and rarely wake a sleeping waiter (rdma-core's tools). Proven on rxe;
	// on devices whose provider does not vouch for the flush it is WaitEpoll.
	WaitRead
)

var waitModeNames = [...]string{"poller", "epoll", "read"}

// String names the mode ("poller", "epoll", "read").
func (m WaitMode) String() string { return enumstr.Name(waitModeNames[:], uint64(m), "WaitMode") }

// CompChannelOptions are the options of a completion channel; nil means the defaults.
type CompChannelOptions struct {
	// Wait is where GetEvent sleeps: Go's runtime poller (the default), or the kernel.
	Wait WaitMode
}

// CreateCompChannel creates a completion channel (ibv_create_comp_channel). opts may be nil.
func (c *Context) CreateCompChannel(opts *CompChannelOptions) (*CompChannel, error) {
	var o CompChannelOptions
	if opts != nil {
		o = *opts
	}
	in := new(abi.IbUverbsCreateCompChannel)
	out := new(abi.IbUverbsCreateCompChannelResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		return nil, wrap("create completion channel", c.dev.Name, err)
	}
	if o.Wait > WaitRead {
		return nil, wrap("create completion channel", c.dev.Name, fmt.Errorf("wait mode %v: %w", o.Wait, unix.EINVAL))
	}
	ch := &CompChannel{ctx: c, fd: int(out.Fd), kernel: o.Wait != WaitPoller, wfd: -1, epfd: -1}
	fail := func(err error) (*CompChannel, error) {
		if ch.f != nil {
			ch.f.Close()
		} else {
			unix.Close(ch.fd)
		}
		if ch.wfd >= 0 {
			unix.Close(ch.wfd)
		}
		if ch.epfd >= 0 {
			unix.Close(ch.epfd)
		}
		return nil, wrap("create completion channel", c.dev.Name, err)
	}
	unix.CloseOnExec(ch.fd)
	// Non-blocking in both modes: the poller needs it, and after a wake-up another reader may have taken the
	// event (a read must then fail, not sleep).
	if err := unix.SetNonblock(ch.fd, true); err != nil {
		return fail(err)
	}
	if ch.kernel {
		wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return fail(fmt.Errorf("eventfd: %w", err))
		}
		ch.wfd = wfd
		if f, ok := c.prov.(provider.InitRecvFlusher); ok && o.Wait == WaitRead && f.FlushesInitRecv() {
			ch.kicker = &kicker{ch: ch}
			ch.kick = ch.kicker.kick
		} else if err := ch.initEpoll(); err != nil {
			// A WaitRead channel makes its epoll set at its first epoll wait (waitKernel): while the channel's
			// fd is in an epoll set, every event also runs epoll's wake-up callback in the kernel, which the
			// tools' read(2) waits would pay for on every event.
			return fail(err)
		}
	} else {
		ch.f = os.NewFile(uintptr(ch.fd), "uverbs-comp-channel")
	}
	if err := c.addObject(); err != nil {
		return fail(err)
	}
	return ch, nil
}

// FD is the channel's file descriptor.
func (ch *CompChannel) FD() int { return ch.fd }

// GetEvent waits for the next completion event (ibv_get_cq_event) and returns the CQ it is for. The wait
// ends with an error when ctx ends (ctx's error), the deadline passes (one matching os.ErrDeadlineExceeded),
// Wake is called (ErrWoken) or the channel is closed (ErrClosed). Every event must be acknowledged with
// cq.AckEvents before the CQ can be closed. Calls on one channel wait one after another.
func (ch *CompChannel) GetEvent(ctx context.Context) (*CQ, error) {
	ch.rmu.Lock()
	err := ch.wait(ctx)
	var cq *CQ
	if err == nil {
		cq, err = ch.deliver()
	} else {
		err = wrap("get CQ event", ch.ctx.dev.Name, err)
	}
	ch.rmu.Unlock() // no defer: this is the path of every event
	return cq, err
}

// wait reads one event record into ch.buf. WaitRead's one read(2), the tools' per-event wait, is chosen here,
// not in waitKernel, so that it costs no call of that larger function (docs/perf.md counts this path's
// instructions). ch.rmu is held.
func (ch *CompChannel) wait(ctx context.Context) error {
	if ch.kick != nil && ch.deadline.Load() == 0 && ctx.Done() == nil {
		if done, err := ch.waitRead(); done {
			return err
		}
		return ch.waitKernel(ctx)
	}
	if ch.kernel {
		return ch.waitKernel(ctx)
	}
	return ch.waitPoller(ctx)
}

// SetDeadline sets the time after which GetEvent — a waiting one included — fails with an error matching
// os.ErrDeadlineExceeded, as os.File's SetReadDeadline does; the zero time means none, and a time in the
// past ends a waiting GetEvent at once. It stays until the next SetDeadline.
func (ch *CompChannel) SetDeadline(t time.Time) error {
	if err := ch.enter(); err != nil { // inside, Close cannot close the eventfd under ring
		return wrap("set completion channel deadline", ch.ctx.dev.Name, err)
	}
	defer ch.exit()
	var d int64
	if !t.IsZero() {
		if d = t.UnixNano(); d <= 0 {
			d = 1 // before 1970: long past, and not "none"
		}
	}
	if ch.kernel {
		ch.deadline.Store(d)
		if ch.waiting.Load() { // the waiter read the old deadline: make it look again
			ch.ring()
		}
		// A waiter in read(2) has no deadline to look at: it moves to the epoll wait.
		return wrap("set completion channel deadline", ch.ctx.dev.Name, ch.kickBlocked())
	}
	ch.dlMu.Lock()
	ch.deadline.Store(d)
	var err error
	if ch.wakes.Load() == 0 { // a pending Wake keeps its past deadline until the waiter takes it
		err = ch.f.SetReadDeadline(t)
	}
	ch.dlMu.Unlock()
	if errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	}
	return wrap("set completion channel deadline", ch.ctx.dev.Name, err)
}

// Wake makes the GetEvent waiting now return ErrWoken, or the next one if none waits (a Wake is never lost,
// and Wakes before a wait count as one). It does not block. It is how another goroutine makes the waiter
// look at something else: a deadline of its own that changed, a connection that closes, a message to send.
func (ch *CompChannel) Wake() error {
	if err := ch.enter(); err != nil {
		return wrap("wake completion channel", ch.ctx.dev.Name, err)
	}
	defer ch.exit()
	ch.wakes.Add(1)
	if ch.kernel {
		ch.ring()
		return wrap("wake completion channel", ch.ctx.dev.Name, ch.kickBlocked())
	}
	ch.dlMu.Lock()
	err := ch.f.SetReadDeadline(time.Unix(1, 0))
	ch.dlMu.Unlock()
	if errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	}
	return wrap("wake completion channel", ch.ctx.dev.Name, err)
}

// ring wakes a kernel waiter. The eventfd only rings: what the waiter must look at is in the
// channel's state (closed, wakes, deadline, its context), read after it clears the eventfd, so no cause is lost.
func (ch *CompChannel) ring() {
	one := uint64(1)
	for {
		_, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(ch.wfd), uintptr(unsafe.Pointer(&one)), 8)
		if e != unix.EINTR { // EAGAIN: the counter is at its maximum, so it already rings
			return
		}
	}
}

// clearRing consumes the eventfd's count (non-blocking: EAGAIN when there was none).
func (ch *CompChannel) clearRing() {
	var n uint64
	for {
		_, _, e := syscall.RawSyscall(unix.SYS_READ, uintptr(ch.wfd), uintptr(unsafe.Pointer(&n)), 8)
		if e != unix.EINTR {
			return
		}
	}
}

// kickBlocked ends a read(2) a waiter sleeps in (waitRead), if one may: the waiter raises blocked before it
// looks at the state a kick is for, and the kicker looks at blocked after changing that state.
func (ch *CompChannel) kickBlocked() error {
	if ch.kick == nil || !ch.blocked.Load() {
		return nil
	}
	if err := ch.kick(); err != nil {
		return fmt.Errorf("end the waiter's read: %w", err)
	}
	return nil
}

// waitRead reads one event record into ch.buf in one blocking read(2), for a wait with no deadline and a
// context that cannot end. done is false when a deadline was set meanwhile: the caller waits in epoll_pwait2.
// ch.rmu is held.
func (ch *CompChannel) waitRead() (done bool, err error) {
	for {
		ch.blocked.Store(true)
		switch {
		case ch.checkOpen() != nil: // before the fd is touched: Close may have closed it
			ch.blocked.Store(false)
			return true, ErrClosed
		case ch.woken():
			ch.blocked.Store(false)
			return true, ErrWoken
		case ch.deadline.Load() != 0:
			ch.blocked.Store(false)
			return false, nil
		}
		if !ch.fdBlocking {
			if err := unix.SetNonblock(ch.fd, false); err != nil {
				ch.blocked.Store(false)
				return true, err
			}
			ch.fdBlocking = true
		}
		// syscall.Syscall, not RawSyscall: the thread sleeps here, and the scheduler must know.
		r, _, e := syscall.Syscall(unix.SYS_READ, uintptr(ch.fd), uintptr(unsafe.Pointer(&ch.buf[0])), uintptr(len(ch.buf)))
		ch.blocked.Store(false)
		switch k := int(r); {
		case e == unix.EINTR:
			continue
		case e != 0:
			return true, e
		case k != len(ch.buf):
			return true, fmt.Errorf("short event record: %d of %d bytes: %w", k, len(ch.buf), io.ErrUnexpectedEOF)
		}
		if ch.kickCQ.Load() == nil || !ch.kicked() { // no kicker CQ yet: the common case, tested inline
			return true, nil
		}
	}
}

// kicked reports whether the event record in ch.buf is the kicker's, and counts it. ch.rmu is held.
func (ch *CompChannel) kicked() bool {
	cq := ch.kickCQ.Load()
	if cq == nil || binary.NativeEndian.Uint64(ch.buf[:]) != cq.uhandle {
		return false
	}
	if cq.prov != nil { // nil in the host tests' channels
		cq.prov.EventReceived()
	}
	ch.kickEvents++
	return true
}

// woken reports and consumes the pending Wakes.
func (ch *CompChannel) woken() bool { return ch.wakes.Load() != 0 && ch.wakes.Swap(0) != 0 }

// noEpollPwait2 is set once epoll_pwait2 has failed with ENOSYS (kernels before 5.11).
var noEpollPwait2 atomic.Bool

// initEpoll makes the epoll set a kernel waiter sleeps on: the channel (data 0) and the eventfd (1),
// level-triggered, registered once, so a wait costs one wake-up callback where ppoll(2) on the two would add,
// poll and remove both every time.
func (ch *CompChannel) initEpoll() error {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	for i, fd := range []int{ch.fd, ch.wfd} {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}); err != nil {
			unix.Close(epfd)
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	ch.epfd = epfd
	return nil
}

// waitKernel reads one event record into ch.buf, sleeping in epoll_pwait2(2) on the channel and its eventfd.
// ch.rmu is held.
func (ch *CompChannel) waitKernel(ctx context.Context) error {
	if ch.checkOpen() != nil { // Close may have closed the fds already (the fd's mode is changed below)
		return ErrClosed
	}
	if ch.epfd < 0 { // a WaitRead channel's first epoll wait; Close closes it under rmu, as here
		if err := ch.initEpoll(); err != nil {
			return err
		}
	}
	if ch.fdBlocking {
		if err := unix.SetNonblock(ch.fd, true); err != nil {
			return err
		}
		ch.fdBlocking = false
	}
	if ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { ch.ring(); close(fired) })
		defer func() {
			if !stop() {
				<-fired // its ring is harmless to a later wait: it looks at the state and waits again
			}
		}()
	}
	for {
		if ch.checkOpen() != nil {
			return ErrClosed
		}
		if ch.woken() {
			return ErrWoken
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ch.waiting.Store(true)
		var ts *unix.Timespec
		if d := ch.deadline.Load(); d != 0 {
			left := d - time.Now().UnixNano()
			if left <= 0 {
				ch.waiting.Store(false)
				return os.ErrDeadlineExceeded
			}
			ch.pts = unix.NsecToTimespec(left)
			ts = &ch.pts
		}
		// package syscall's Syscall6 directly: x/sys/unix reaches it through an assembly jump and an ABI
		// wrapper (see internal/ioctl), and this is the wait of every event. epoll_pwait2 (Linux 5.11) takes
		// the timeout as a timespec; before it, epoll_pwait takes whole milliseconds (rounded up here, so a
		// deadline is never reported early).
		var n uintptr
		var e syscall.Errno
		if !noEpollPwait2.Load() {
			n, _, e = syscall.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(ch.epfd), uintptr(unsafe.Pointer(&ch.evs[0])), 2, uintptr(unsafe.Pointer(ts)), 0, 0)
			if e == unix.ENOSYS {
				noEpollPwait2.Store(true)
			}
		}
		if noEpollPwait2.Load() {
			ms := -1
			if ts != nil {
				ms = int((ts.Nano() + int64(time.Millisecond) - 1) / int64(time.Millisecond))
			}
			n, _, e = syscall.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(ch.epfd), uintptr(unsafe.Pointer(&ch.evs[0])), 2, uintptr(ms), 0, 0)
		}
		ch.waiting.Store(false)
		switch {
		case e == unix.EINTR || n == 0: // a signal, or the timeout: the deadline is checked at the top
			continue
		case e != 0:
			return e
		}
		event := false
		for i := range ch.evs[:n] {
			if ch.evs[i].Fd == 1 {
				ch.clearRing() // then look at the state again, at the top
			} else {
				event = true
			}
		}
		if !event {
			continue
		}
		// The fd is non-blocking, so this read never sleeps: a raw system call, without the scheduler's work
		// around a blocking one.
		r, _, e := syscall.RawSyscall(unix.SYS_READ, uintptr(ch.fd), uintptr(unsafe.Pointer(&ch.buf[0])), uintptr(len(ch.buf)))
		switch k := int(r); {
		case e == unix.EAGAIN || e == unix.EINTR:
			continue
		case e != 0:
			return e
		case k != len(ch.buf):
			return fmt.Errorf("short event record: %d of %d bytes: %w", k, len(ch.buf), io.ErrUnexpectedEOF)
		}
		if ch.kicked() {
			continue
		}
		return nil
	}
}

// waitPoller reads one event record into ch.buf on Go's runtime poller. A Wake, Close and a context that
// ends interrupt the read as os.File's deadlines do (a past read deadline; Close closes the file under the
// read, which Go's poller makes safe). ch.rmu is held.
func (ch *CompChannel) waitPoller(ctx context.Context) error {
	if ctx.Done() != nil { // a context that can never end (context.Background) needs no watcher, and no allocation
		if err := ctx.Err(); err != nil {
			return err
		}
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			ch.dlMu.Lock()
			ch.f.SetReadDeadline(time.Unix(1, 0))
			ch.dlMu.Unlock()
			close(fired)
		})
		defer func() {
			if !stop() {
				// It may have fired just after the read returned an event: its past deadline must not outlive
				// this call, or the next read would fail at once (TestLabCloseRace met this once).
				<-fired
				ch.restoreDeadline()
			}
		}()
	}
	for {
		if ch.checkOpen() != nil {
			return ErrClosed
		}
		if ch.woken() {
			ch.restoreDeadline()
			return ErrWoken
		}
		n, err := ch.f.Read(ch.buf[:])
		switch {
		case err == nil && n != len(ch.buf):
			return fmt.Errorf("short event record: %d of %d bytes: %w", n, len(ch.buf), io.ErrUnexpectedEOF)
		case err == nil:
			return nil
		case errors.Is(err, os.ErrClosed):
			return ErrClosed
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return err
		}
		// A read deadline passed: the caller's, or a past one that interrupts the read (Wake, the context).
		if err := ctx.Err(); err != nil {
			return err
		}
		if ch.woken() {
			ch.restoreDeadline()
			return ErrWoken
		}
		if d := ch.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			return os.ErrDeadlineExceeded
		}
		ch.restoreDeadline() // a stale interruption (a Wake already reported): wait again
	}
}

// restoreDeadline puts back the caller's read deadline after an interruption, unless a Wake is pending
// (its past deadline stays until the waiter takes it).
func (ch *CompChannel) restoreDeadline() {
	ch.dlMu.Lock()
	if ch.wakes.Load() == 0 {
		var t time.Time
		if d := ch.deadline.Load(); d != 0 {
			t = time.Unix(0, d)
		}
		ch.f.SetReadDeadline(t)
	}
	ch.dlMu.Unlock()
}

// deliver decodes the event record in ch.buf and counts it on its CQ. ch.rmu is held.
func (ch *CompChannel) deliver() (*CQ, error) {
	// struct ib_uverbs_comp_event_desc { __aligned_u64 cq_handle; } — the CQ's user handle.
	h := binary.NativeEndian.Uint64(ch.buf[:])
	cq := ch.last[0].Load()
	if cq == nil || cq.uhandle != h {
		if cq = ch.last[1].Load(); cq == nil || cq.uhandle != h {
			cq, _ = ch.ctx.handles.get(h).(*CQ)
			if cq == nil {
				return nil, wrap("get CQ event", ch.ctx.dev.Name, fmt.Errorf("event for unknown CQ handle %d", h))
			}
			ch.last[ch.lastNext&1].Store(cq)
			ch.lastNext++
		}
	}
	cq.prov.EventReceived()
	return cq, nil
}

// Close destroys the channel (ibv_destroy_comp_channel) and ends every GetEvent waiting on it with ErrClosed.
// It fails with EBUSY while CQs use it.
func (ch *CompChannel) Close() error {
	if ch == nil {
		return nil
	}
	var closeErr error
	err := ch.life.close(func() error {
		ch.mu.Lock()
		n := ch.cqs
		ch.mu.Unlock()
		if ch.kicker != nil {
			n -= ch.kicker.cqs()
		}
		if n > 0 {
			return wrap("destroy completion channel", ch.ctx.dev.Name, fmt.Errorf("%d CQs still use it: %w", n, unix.EBUSY))
		}
		if ch.kernel {
			// The waiter sees the channel closed once the eventfd rings, or the kicker's event ends its read; the
			// fds are closed after it has left (and the waiters queued behind it find the channel closed without
			// touching them). A waiter that cannot be woken keeps the channel open: Close fails, not hangs.
			ch.ring()
			if err := ch.kickBlocked(); err != nil {
				return wrap("destroy completion channel", ch.ctx.dev.Name, err)
			}
			ch.rmu.Lock()
			if ch.kicker != nil {
				closeErr = ch.kicker.close(ch.kickEvents)
			}
			ch.ctx.dropObject()
			if ch.epfd >= 0 {
				closeErr = errors.Join(closeErr, unix.Close(ch.epfd))
			}
			closeErr = errors.Join(closeErr, unix.Close(ch.fd), unix.Close(ch.wfd))
			ch.rmu.Unlock()
		} else {
			ch.ctx.dropObject()
			closeErr = ch.f.Close() // wakes a GetEvent waiting on the poller
		}
		return nil
	})
	if err != nil {
		return err
	}
	return wrap("destroy completion channel", ch.ctx.dev.Name, closeErr)
}
