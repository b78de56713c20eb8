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
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// CompChannel is a completion event channel (ibv_comp_channel): CQs attached to it report completion events
// on it after they are armed. Waiting on it uses Go's runtime poller and a context, or, after
// SetWaitInKernel(true), a blocking read as libibverbs does.
type CompChannel struct {
	ctx *Context
	fd  int

	// pf is the fd wrapped for Go's runtime poller, made by the first GetEvent that waits there. A channel
	// that waits in the kernel from the start is never registered with the poller: a registered fd wakes
	// the runtime's netpoller on every event, for a read nobody waits for there.
	pf       atomic.Pointer[pollFile] // set once, under pfMu; read without it on every wait
	pfMu     sync.Mutex
	fdClosed bool // Close closed the fd; guarded by pfMu

	rmu      sync.Mutex
	buf      [8]byte
	inKernel atomic.Bool // SetWaitInKernel: GetEvent blocks in read(2)

	pfds [2]unix.PollFd // WaitEvent's, guarded by rmu
	pts  unix.Timespec

	// last are the CQs of the latest events: most channels serve one or two CQs (a send and a receive CQ),
	// so an event usually names one of them and deliver skips the device's handle table. User handles are
	// never reused, so a match is that CQ; CQ.Close clears its slot. lastNext (guarded by rmu) is the slot
	// the next miss replaces.
	last     [2]atomic.Pointer[CQ]
	lastNext uint8

	life
	cqs int // CQs using the channel; guarded by mu
}

// CreateCompChannel creates a completion channel (ibv_create_comp_channel).
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	in := new(abi.IbUverbsCreateCompChannel)
	out := new(abi.IbUverbsCreateCompChannelResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		return nil, wrap("create completion channel", c.dev.Name, err)
	}
	fd := int(out.Fd)
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil { // the poller's mode, until SetWaitInKernel
		unix.Close(fd)
		return nil, wrap("create completion channel", c.dev.Name, err)
	}
	if err := c.addObject(); err != nil {
		unix.Close(fd)
		return nil, wrap("create completion channel", c.dev.Name, err)
	}
	return &CompChannel{ctx: c, fd: fd}, nil
}

// pollFile returns the channel's fd registered with Go's poller, registering it on first use.
// After the first call it is one atomic load (a Close after it closes the file under the read, which then
// fails with os.ErrClosed).
func (ch *CompChannel) pollFile() (*pollFile, error) {
	if pf := ch.pf.Load(); pf != nil {
		return pf, nil
	}
	ch.pfMu.Lock()
	defer ch.pfMu.Unlock()
	if ch.fdClosed {
		return nil, ErrClosed
	}
	pf := ch.pf.Load()
	if pf == nil {
		pf = &pollFile{f: os.NewFile(uintptr(ch.fd), "uverbs-comp-channel")}
		ch.pf.Store(pf)
	}
	return pf, nil
}

// FD is the channel's file descriptor.
func (ch *CompChannel) FD() int { return ch.fd }

// GetEvent waits for the next completion event (ibv_get_cq_event) until ctx ends and returns the CQ it is for.
// Every event must be acknowledged with cq.AckEvents before the CQ can be closed.
func (ch *CompChannel) GetEvent(ctx context.Context) (*CQ, error) {
	ch.rmu.Lock()
	if ch.inKernel.Load() && ch.checkOpen() == nil && ctx.Done() == nil {
		// The per-event path of the tools (no defer: it is a measurable part of an event's cost).
		err := ch.readInKernel()
		var cq *CQ
		if err == nil {
			cq, err = ch.deliver()
		} else {
			err = wrap("get CQ event", ch.ctx.dev.Name, err)
		}
		ch.rmu.Unlock()
		return cq, err
	}
	defer ch.rmu.Unlock()
	if err := ch.checkOpen(); err != nil {
		return nil, wrap("get CQ event", ch.ctx.dev.Name, err)
	}
	if ch.inKernel.Load() {
		return nil, wrap("get CQ event", ch.ctx.dev.Name, fmt.Errorf("the channel waits in the kernel, which a context cannot interrupt: %w", unix.EINVAL))
	}
	// GetEvent waits, so it cannot hold the channel open: a Close while it waits closes the file under it,
	// which wakes the read with os.ErrClosed (Go's poller makes that safe); it is reported as ErrClosed.
	pf, err := ch.pollFile()
	if err != nil {
		return nil, wrap("get CQ event", ch.ctx.dev.Name, err)
	}
	if err := pf.read(ctx, ch.buf[:]); err != nil {
		if errors.Is(err, os.ErrClosed) {
			err = ErrClosed
		}
		return nil, wrap("get CQ event", ch.ctx.dev.Name, err)
	}
	return ch.deliver()
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

// SetDeadline sets the time after which GetEvent calls waiting on Go's poller — a waiting one included — fail
// with an error matching os.ErrDeadlineExceeded, as os.File's SetReadDeadline does; the zero time means none. A
// deadline costs no allocation per wait, where a context with a deadline does: it is for callers with their own
// deadlines on a per-message path (rsocket's Read and Write), and a deadline in the past wakes a waiting GetEvent
// at once. A GetEvent whose context ends clears the deadline. A channel set to wait in the kernel has no
// deadlines (EINVAL).
func (ch *CompChannel) SetDeadline(t time.Time) error {
	if ch.inKernel.Load() {
		return wrap("set completion channel deadline", ch.ctx.dev.Name, fmt.Errorf("the channel waits in the kernel: %w", unix.EINVAL))
	}
	pf, err := ch.pollFile()
	if err == nil {
		err = pf.f.SetReadDeadline(t)
	}
	if errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	}
	return wrap("set completion channel deadline", ch.ctx.dev.Name, err)
}

// SetWaitInKernel chooses how GetEvent waits. By default (false) it waits on Go's runtime poller: a context
// or Close ends the wait, and no thread is blocked. With true it blocks in read(2) on the channel as
// libibverbs' ibv_get_cq_event does: one system call per event, where the poller costs a failed read, an
// epoll wait, a second read and the runtime's parking when the event is not there yet (docs/perf.md measures
// the difference). Then nothing can interrupt a waiting GetEvent — neither a context (GetEvent refuses one that
// can end, with EINVAL) nor Close, which does not wake a read the kernel is blocked in — and the goroutine's
// thread is blocked while it waits: for programs that, like rdma-core's tools, wait until an event comes. Set
// it before the first GetEvent: a channel that has waited on the poller stays registered with it, and then
// every event also wakes the runtime's network poller.
func (ch *CompChannel) SetWaitInKernel(on bool) error {
	ch.rmu.Lock()
	defer ch.rmu.Unlock()
	if err := ch.checkOpen(); err != nil {
		return wrap("set completion channel wait", ch.ctx.dev.Name, err)
	}
	if err := unix.SetNonblock(ch.fd, !on); err != nil {
		return wrap("set completion channel wait", ch.ctx.dev.Name, err)
	}
	ch.inKernel.Store(on)
	return nil
}

// readInKernel reads one event record with a blocking read(2). ch.rmu is held.
func (ch *CompChannel) readInKernel() error {
	for {
		// package syscall's Syscall directly: x/sys/unix's read reaches it through an assembly jump and an ABI
		// wrapper (see internal/ioctl), and this is the wait of every event.
		r, _, e := syscall.Syscall(unix.SYS_READ, uintptr(ch.fd), uintptr(unsafe.Pointer(&ch.buf[0])), uintptr(len(ch.buf)))
		switch n := int(r); {
		case e == unix.EINTR:
			continue
		case e != 0:
			return e
		case n != len(ch.buf):
			return fmt.Errorf("short event record: %d of %d bytes: %w", n, len(ch.buf), io.ErrUnexpectedEOF)
		}
		return nil
	}
}

// Close destroys the channel (ibv_destroy_comp_channel). It fails with EBUSY while CQs use it.
func (ch *CompChannel) Close() error {
	if ch == nil {
		return nil
	}
	var closeErr error
	err := ch.life.close(func() error {
		ch.mu.Lock()
		n := ch.cqs
		ch.mu.Unlock()
		if n > 0 {
			return wrap("destroy completion channel", ch.ctx.dev.Name, fmt.Errorf("%d CQs still use it: %w", n, unix.EBUSY))
		}
		ch.ctx.dropObject()
		ch.pfMu.Lock()
		ch.fdClosed = true
		if pf := ch.pf.Load(); pf != nil {
			closeErr = pf.close() // wakes a GetEvent waiting on the poller; the fd is gone either way
		} else {
			closeErr = unix.Close(ch.fd)
		}
		ch.pfMu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	return wrap("destroy completion channel", ch.ctx.dev.Name, closeErr)
}

// CQ is a completion queue.
type CQ struct {
	ctx     *Context
	handle  uint32
	uhandle uint64
	cqe     int
	prov    provider.CQ
	channel *CompChannel

	// Close waits until the events acknowledged reach the number the kernel reports having delivered.
	// AckEvents adds without a lock and takes evMu only when Close has begun waiting (ackWaiter).
	evMu      sync.Mutex
	evCond    *sync.Cond
	eventsAck atomic.Uint32
	ackWaiter atomic.Bool
	life
}

// CQAttr are the options of CreateCQ.
type CQAttr struct {
	CQE        int          // minimum number of entries
	Channel    *CompChannel // completion channel, or nil
	CompVector int          // completion vector, < Context.NumCompVectors()
}

// CreateCQ creates a completion queue (ibv_create_cq) through the CQ_CREATE ioctl.
func (c *Context) CreateCQ(attr CQAttr) (*CQ, error) {
	if attr.CQE < 1 {
		return nil, wrap("create CQ", c.dev.Name, fmt.Errorf("cqe %d: %w", attr.CQE, unix.EINVAL))
	}
	if attr.Channel != nil {
		// A closed channel's fd number may already belong to another file: the channel stays open (its Close
		// waits) until the CQ is counted as its user.
		if err := attr.Channel.enter(); err != nil {
			return nil, wrap("create CQ", c.dev.Name, fmt.Errorf("completion channel: %w", err))
		}
		defer attr.Channel.exit()
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("create CQ", c.dev.Name, err)
	}
	cq := &CQ{ctx: c, channel: attr.Channel}
	cq.evCond = sync.NewCond(&cq.evMu)
	cq.uhandle = c.handles.add(cq)
	p := provider.CQParams{CQE: attr.CQE, CompVector: uint32(attr.CompVector), Handle: cq.uhandle}
	var made cqCreated
	prov, res, err := c.prov.CreateCQ(p, func(req provider.CQParams, uhwIn, uhwOut []byte) (provider.CQResult, error) {
		var err error
		made, err = c.cmdCreateCQ(&attr, req, uhwIn, uhwOut)
		return provider.CQResult{CQE: made.cqe, Handle: made.handle}, err
	})
	if err != nil {
		if made.created {
			c.cmdDestroyCQ(made.handle)
		}
		c.handles.del(cq.uhandle)
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "create CQ (cqe %d, vector %d)", attr.CQE, attr.CompVector)
	}
	cq.handle, cq.cqe, cq.prov = res.Handle, res.CQE, prov
	if attr.Channel != nil {
		attr.Channel.mu.Lock()
		attr.Channel.cqs++
		attr.Channel.mu.Unlock()
	}
	return cq, nil
}

// CQE is the number of entries the CQ holds.
func (cq *CQ) CQE() int { return cq.cqe }

// Handle is the kernel's handle.
func (cq *CQ) Handle() uint32 { return cq.handle }

// Poll fills wc with up to len(wc) completions and returns how many (ibv_poll_cq). It allocates nothing. The
// error is non-nil only when polling itself failed (ibv_poll_cq < 0): the CQ is closed (ErrClosed), or the
// device wrote a completion the provider cannot match to a queue (EIO); the n completions before it are valid.
// A failed work request is not a Poll error: it is a completion whose WC.Err is non-nil.
func (cq *CQ) Poll(wc []WC) (int, error) {
	if !cq.g.Enter() {
		return 0, cq.ctx.dpErrs.get(opPollCQ, provider.Destroyed)
	}
	n, st := cq.prov.Poll(wc)
	cq.g.Exit()
	return cq.ctx.dpErrs.result(opPollCQ, n, st)
}

// ReqNotify arms the CQ: the next completion (only solicited ones if solicitedOnly) raises an event on its
// completion channel (ibv_req_notify_cq).
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if err := cq.enter(); err != nil {
		return wrapf(cq.ctx.dev.Name, err, "arm CQ %#x", cq.handle)
	}
	err := cq.prov.Arm(solicitedOnly)
	cq.exit()
	if err != nil {
		return wrapf(cq.ctx.dev.Name, err, "arm CQ %#x", cq.handle)
	}
	return nil
}

// AckEvents acknowledges n completion events received for this CQ (ibv_ack_cq_events).
func (cq *CQ) AckEvents(n int) {
	cq.eventsAck.Add(uint32(n))
	if cq.ackWaiter.Load() { // Close stores ackWaiter before it reads the count: one of the two sees the other
		cq.evMu.Lock()
		cq.evCond.Broadcast()
		cq.evMu.Unlock()
	}
}

// Resize changes the CQ's size to at least cqe entries (ibv_resize_cq).
func (cq *CQ) Resize(cqe int) error {
	c := cq.ctx
	if err := cq.enter(); err != nil {
		return wrapf(c.dev.Name, err, "resize CQ %#x", cq.handle)
	}
	defer cq.exit()
	n, err := cq.prov.Resize(cqe, func(cqe int, uhwIn, uhwOut []byte) (int, error) {
		return c.cmdResizeCQ(cq.handle, cqe, uhwIn, uhwOut)
	})
	if err != nil {
		return wrapf(c.dev.Name, err, "resize CQ %#x to %d", cq.handle, cqe)
	}
	cq.cqe = n
	return nil
}

// Close destroys the CQ (ibv_destroy_cq). As in rdma-core, it waits until every completion event the kernel
// delivered for this CQ has been acknowledged with AckEvents. The kernel refuses (EBUSY) while QPs or SRQs use
// the CQ.
func (cq *CQ) Close() error {
	if cq == nil {
		return nil
	}
	return cq.life.close(func() error {
		c := cq.ctx
		resp, err := c.cmdDestroyCQ(cq.handle)
		if err != nil {
			return wrapf(c.dev.Name, err, "destroy CQ %#x", cq.handle)
		}
		cq.prov.Destroyed()
		cq.evMu.Lock()
		cq.ackWaiter.Store(true)
		for cq.eventsAck.Load() < resp.CompEventsReported {
			cq.evCond.Wait()
		}
		cq.evMu.Unlock()
		c.handles.del(cq.uhandle)
		if ch := cq.channel; ch != nil {
			ch.last[0].CompareAndSwap(cq, nil)
			ch.last[1].CompareAndSwap(cq, nil)
		}
		if cq.channel != nil {
			cq.channel.mu.Lock()
			cq.channel.cqs--
			cq.channel.mu.Unlock()
		}
		c.dropObject()
		return nil
	})
}
