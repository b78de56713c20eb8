package uverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/internal/enumstr"
	"golang.org/x/sys/unix"
)

// pollFile wraps a kernel event fd (the async events; completion channels have their own wait, compchannel.go)
// so reads wait on Go's runtime poller:
// no thread is blocked, and a read can be cancelled through a context.
type pollFile struct {
	f *os.File
}

func newPollFile(fd int, name string) (*pollFile, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	return &pollFile{f: os.NewFile(uintptr(fd), name)}, nil
}

// read reads exactly one event record into b, waiting until one arrives or ctx ends.
func (p *pollFile) read(ctx context.Context, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A context that can never end (context.Background) needs no watcher, and
	// then waiting allocates nothing: event-driven data paths stay allocation-free.
	if ctx.Done() != nil {
		// When ctx ends the watcher sets a deadline in the past to wake the read. It may do so just after the
		// read returned an event; that deadline must not outlive this call, or the next read fails at once
		// with "i/o timeout" (TestLabCloseRace met this): once the watcher has run, wait for it and clear the
		// deadline.
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			p.f.SetReadDeadline(time.Now())
			close(fired)
		})
		defer func() {
			if !stop() {
				<-fired
				p.f.SetReadDeadline(time.Time{})
			}
		}()
	}
	n, err := p.f.Read(b)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if n != len(b) {
		return fmt.Errorf("short event record: %d of %d bytes: %w", n, len(b), io.ErrUnexpectedEOF)
	}
	return nil
}

func (p *pollFile) close() error { return p.f.Close() }

// AsyncEventType is the kind of an asynchronous event (IBV_EVENT_* numbering).
type AsyncEventType uint32

// Asynchronous event types.
const (
	EventCQErr AsyncEventType = iota
	EventQPFatal
	EventQPReqErr
	EventQPAccessErr
	EventCommEst
	EventSQDrained
	EventPathMig
	EventPathMigErr
	EventDeviceFatal
	EventPortActive
	EventPortErr
	EventLIDChange
	EventPKeyChange
	EventSMChange
	EventSRQErr
	EventSRQLimitReached
	EventQPLastWQEReached
	EventClientReregister
	EventGIDChange
	EventWQFatal
	// EventDeviceSpeedChange: the link speed of one or more ports changed (IBV_EVENT_DEVICE_SPEED_CHANGE,
	// rdma-core 62); Port is the port the kernel names.
	EventDeviceSpeedChange
)

var asyncEventNames = [...]string{"CQ error", "QP fatal", "QP request error", "QP access error",
	"communication established", "SQ drained", "path migrated", "path migration error", "device fatal",
	"port active", "port error", "LID change", "PKey change", "SM change", "SRQ error", "SRQ limit reached",
	"QP last WQE reached", "client reregister", "GID change", "WQ fatal", "device speed change"}

func (t AsyncEventType) String() string { return enumstr.Name(asyncEventNames[:], uint64(t), "event") }

// AsyncEvent is one asynchronous event. Exactly one of CQ, QP, SRQ is set for object events; Port is set for
// port events (EventPortActive, EventPortErr, EventLIDChange, ...) and DeviceFatal has neither.
type AsyncEvent struct {
	Type AsyncEventType
	CQ   *CQ
	QP   *QP
	SRQ  *SRQ
	WQ   *WQ // EventWQFatal's
	Port int
	// Element is the raw element the kernel reported (a user handle or a port number).
	Element uint64
}

func (e AsyncEvent) String() string {
	switch {
	case e.CQ != nil:
		return fmt.Sprintf("%v on CQ %#x", e.Type, e.CQ.handle)
	case e.QP != nil:
		return fmt.Sprintf("%v on QP %#x", e.Type, e.QP.QPN())
	case e.SRQ != nil:
		return fmt.Sprintf("%v on SRQ", e.Type)
	case e.WQ != nil:
		return fmt.Sprintf("%v on WQ %#x", e.Type, e.WQ.wqn)
	case e.Port != 0:
		return fmt.Sprintf("%v on port %d", e.Type, e.Port)
	}
	return e.Type.String()
}

type asyncReader struct {
	mu  sync.Mutex
	pf  *pollFile
	buf [16]byte
}

func (a *asyncReader) close() { a.pf.close() }

// AsyncEvent waits for the next asynchronous event of the device (ibv_get_async_event) until ctx ends. Events
// on objects carry the object. Events need no acknowledgement in goverbs: the object's Close waits for nothing.
func (c *Context) AsyncEvent(ctx context.Context) (AsyncEvent, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return AsyncEvent{}, wrap("get async event", c.dev.Name, ErrClosed)
	}
	if c.imported {
		c.mu.Unlock()
		return AsyncEvent{}, wrap("get async event", c.dev.Name, fmt.Errorf("%w: an imported context has no async event file (the exporter's context gets the events)", ErrNotSupported))
	}
	if c.async == nil {
		pf, err := newPollFile(c.asyncFD, "uverbs-async")
		if err != nil {
			c.mu.Unlock()
			return AsyncEvent{}, wrap("get async event", c.dev.Name, err)
		}
		c.async = &asyncReader{pf: pf}
	}
	a := c.async
	c.mu.Unlock()

	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.pf.read(ctx, a.buf[:]); err != nil {
		if errors.Is(err, os.ErrClosed) { // the context was closed while this waited
			err = ErrClosed
		}
		return AsyncEvent{}, wrap("get async event", c.dev.Name, err)
	}
	// struct ib_uverbs_async_event_desc { __aligned_u64 element; __u32 event_type; __u32 reserved; }
	ev := AsyncEvent{
		Element: binary.NativeEndian.Uint64(a.buf[0:8]),
		Type:    AsyncEventType(binary.NativeEndian.Uint32(a.buf[8:12])),
	}
	switch ev.Type {
	case EventCQErr:
		ev.CQ, _ = c.handles.get(ev.Element).(*CQ)
	case EventQPFatal, EventQPReqErr, EventQPAccessErr, EventCommEst, EventSQDrained, EventPathMig,
		EventPathMigErr, EventQPLastWQEReached:
		ev.QP, _ = c.handles.get(ev.Element).(*QP)
	case EventSRQErr, EventSRQLimitReached:
		ev.SRQ, _ = c.handles.get(ev.Element).(*SRQ)
	case EventWQFatal:
		ev.WQ, _ = c.handles.get(ev.Element).(*WQ)
	case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange, EventSMChange, EventClientReregister,
		EventGIDChange, EventDeviceSpeedChange:
		ev.Port = int(ev.Element)
	}
	return ev, nil
}

// handleTable maps the opaque user_handle values given to the kernel back to objects. Handles are small
// integers, never Go pointers.
type handleTable struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]any
}

func (t *handleTable) add(o any) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]any{}
	}
	t.next++
	t.m[t.next] = o
	return t.next
}

func (t *handleTable) get(h uint64) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[h]
}

func (t *handleTable) del(h uint64) {
	t.mu.Lock()
	delete(t.m, h)
	t.mu.Unlock()
}

func ptr[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }
