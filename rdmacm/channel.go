package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Where the rdma_cm node and its sysfs attributes live; the lookup takes them as parameters (tests pass fake
// trees), nothing here is a mutable global.
const (
	devDir    = "/dev/infiniband"
	sysfsRoot = "/sys"
)

// ABIVersion is the only ucma ABI this package speaks.
const ABIVersion = abi.RDMA_USER_CM_ABI_VERSION

// Channel is an event channel (struct rdma_event_channel): one open file of
// /dev/infiniband/rdma_cm. Every id is created on a channel and its events
// are fetched from it. A Channel is safe for concurrent use; GetEvent may be
// called from one goroutine while others issue commands.
//
// Closing the channel destroys every id still on it (the kernel does so when
// the file is closed) and releases its hold on the device contexts its ids
// used (they are the process's, shared by every channel, as librdmacm's: the
// last release closes one).
type Channel struct {
	f  *os.File
	rc syscall.RawConn
	fd int // the number only: os.File.Fd would put the fd back into blocking mode

	mu     sync.Mutex
	ids    map[uint64]*ID // by uid
	mcasts map[uint64]*Multicast
	devs   map[devKey]*devRef // the devices this channel's ids used: it holds each until it is closed
	closed bool

	evMu  sync.Mutex // one GetEvent at a time (it owns the read deadline)
	evBuf *abi.RdmaUcmEventResp
}

// devRef is a device context shared by every id of the process on that device, with its PD and attributes
// (librdmacm's cma_device: one context and one PD per device and process). It is open while an id uses it
// or a channel whose ids used it is open; the last release closes it.
type devRef struct {
	key  devKey
	ctx  *uverbs.Context
	pd   *uverbs.PD
	attr *uverbs.DeviceAttr
	refs int // ids using it, and channels holding it; under devices.mu
}

// devKey names a device: its node GUID (host order) and its index, which a device removed and added again
// does not keep (an rxe or siw link re-created), so that its new ids never meet the old context.
type devKey struct {
	guid  uint64
	index uint32
}

// devices are the device contexts open in this process.
var devices = struct {
	mu sync.Mutex
	m  map[devKey]*devRef
}{m: map[devKey]*devRef{}}

// devicePath finds /dev/infiniband/rdma_cm: RDMA netlink GET_CHARDEV
// "rdma_cm" first, then sysfs, and checks the ABI version.
func devicePath() (string, error) {
	if c, err := netlinkrdma.Dial(); err == nil {
		cd, err := c.GlobalChardev("rdma_cm")
		c.Close()
		if err == nil {
			if cd.ABI != ABIVersion {
				return "", fmt.Errorf("rdma_cm ABI %d, want %d: %w", cd.ABI, ABIVersion, unix.EPROTONOSUPPORT)
			}
			return filepath.Join(devDir, cd.Name), nil
		}
	}
	return sysfsDevicePath(sysfsRoot, devDir)
}

// sysfsDevicePath is the lookup's fallback when RDMA netlink does not answer: the misc device's sysfs
// attributes under sysfs, the node under dev.
func sysfsDevicePath(sysfs, dev string) (string, error) {
	for _, p := range []string{"class/misc/rdma_cm/abi_version", "class/infiniband_ucma/abi_version"} {
		b, err := os.ReadFile(filepath.Join(sysfs, p))
		if err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || v != ABIVersion {
			return "", fmt.Errorf("rdma_cm ABI %q in %s, want %d: %w", strings.TrimSpace(string(b)), p,
				ABIVersion, unix.EPROTONOSUPPORT)
		}
		return filepath.Join(dev, "rdma_cm"), nil
	}
	return "", fmt.Errorf("rdma_cm not found (module rdma_ucm not loaded?): %w", unix.ENODEV)
}

// NewChannel opens an event channel (rdma_create_event_channel).
func NewChannel() (*Channel, error) {
	p, err := devicePath()
	if err != nil {
		return nil, &Error{Op: "create event channel", Err: err}
	}
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &Error{Op: "create event channel", Err: fmt.Errorf("open %s: %w", p, err)}
	}
	f := os.NewFile(uintptr(fd), p)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, &Error{Op: "create event channel", Err: err}
	}
	return &Channel{f: f, rc: rc, fd: fd, ids: map[uint64]*ID{}, mcasts: map[uint64]*Multicast{}, devs: map[devKey]*devRef{},
		evBuf: new(abi.RdmaUcmEventResp)}, nil
}

// FD is the channel's file descriptor number (it polls readable when an
// event is queued). It stays owned by the Channel, in non-blocking mode.
func (ch *Channel) FD() int { return ch.fd }

// Close destroys the channel's remaining ids and closes it (rdma_destroy_event_channel).
func (ch *Channel) Close() error {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil
	}
	ids := make([]*ID, 0, len(ch.ids))
	for _, id := range ch.ids {
		ids = append(ids, id)
	}
	ch.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := id.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	ch.mu.Lock()
	ch.closed = true
	held := ch.devs
	ch.devs = map[devKey]*devRef{}
	ch.mu.Unlock()
	for _, d := range held { // ids migrated elsewhere, and other channels' ids, still hold theirs
		errs = append(errs, releaseDevice(d))
	}
	errs = append(errs, ch.f.Close())
	return errors.Join(errs...)
}

// isClosed reports whether Close has begun (it marks the channel before closing the file).
func (ch *Channel) isClosed() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.closed
}

// exec issues one command through ucmWrite while holding the fd open.
func exec[T any](ch *Channel, cmd uint32, req *T, resp unsafe.Pointer, outLen uintptr) error {
	var werr error
	err := ch.rc.Control(func(fd uintptr) { werr = ucmWrite(int(fd), cmd, req, resp, outLen) })
	if err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return werr
}

// register enters id under a fresh non-zero uid.
func (ch *Channel) register(id *ID) error {
	id.uid = lastUID.Add(1)
	return ch.adopt(id)
}

// adopt enters id under its current uid (MIGRATE_ID keeps the kernel's uid).
func (ch *Channel) adopt(id *ID) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return ErrClosed
	}
	ch.ids[id.uid] = id
	return nil
}

func (ch *Channel) unregister(id *ID) {
	ch.mu.Lock()
	delete(ch.ids, id.uid)
	ch.mu.Unlock()
}

func (ch *Channel) lookup(uid uint64) *ID {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.ids[uid]
}

// GetEvent waits until ctx ends for the next event of any id of the channel
// (rdma_get_cm_event). Like librdmacm it completes the work some events
// imply before returning them: on CONNECT_REQUEST it creates the new ID and
// queries its addresses; on the active side's CONNECT_RESPONSE of an id with
// a QP it moves the QP to RTS, sends the RTU (ACCEPT without parameters) and
// returns ESTABLISHED (or CONNECT_ERROR if that fails).
func (ch *Channel) GetEvent(ctx context.Context) (*Event, error) {
	ch.evMu.Lock()
	defer ch.evMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "get event", Err: err}
	}
	for {
		raw, err := ch.fetch(ctx)
		if err != nil {
			return nil, &Error{Op: "get event", Err: err}
		}
		if ev := ch.process(raw); ev != nil {
			return ev, nil
		}
	}
}

// process turns a kernel event into the application's, doing librdmacm's
// per-event work. It returns nil for events of ids that no longer exist.
func (ch *Channel) process(r rawEvent) *Event {
	ev := &Event{Type: r.typ, Status: r.status, Conn: r.conn, UD: r.ud, Arg: r.arg}
	ev.ECE.VendorID, ev.ECE.AttrMod = r.ece[0], r.ece[1]
	if r.typ == EventMulticastJoin || r.typ == EventMulticastError {
		m := ch.lookupMcast(r.uid)
		if m == nil {
			return nil
		}
		ev.Multicast, ev.ID = m, m.id
		if r.typ == EventMulticastJoin {
			m.id.mu.Lock()
			m.mgid, m.mlid = r.ud.AHAttr.GRH.DGID, r.ud.AHAttr.DLID
			if m.id.qp != nil && !m.sendOnly && !m.attached {
				if err := m.id.qp.AttachMcast(m.mgid, m.mlid); err != nil {
					ev.Type, ev.Status = EventMulticastError, -errnoOf(err)
				} else {
					m.attached = true
				}
			}
			m.id.mu.Unlock()
		}
		return ev
	}
	id := ch.lookup(r.uid)
	if id == nil {
		return nil
	}
	ev.ID = id
	switch r.typ {
	case EventConnectRequest:
		child := &ID{ch: ch, kid: r.id, ps: id.ps, qpType: id.qpType, passive: true, reqParam: r.conn,
			initDepth: MaxResources, respRes: MaxResources, remoteECE: ev.ECE}
		if id.qpType == uverbs.QPTypeUD {
			child.reqParam = ConnParam{QPNum: r.ud.QPNum, QKey: r.ud.QKey}
		}
		if err := ch.register(child); err != nil {
			return nil
		}
		child.mu.Lock()
		err := child.queryAddrLocked()
		if err == nil {
			err = child.queryGIDLocked()
		}
		if err == nil {
			_, err = child.queryPathLocked()
		}
		child.mu.Unlock()
		if err != nil {
			// librdmacm rejects the request and reports nothing.
			child.Reject(nil)
			child.Close()
			return nil
		}
		ev.ID, ev.Listener = child, id
	case EventAddrResolved:
		id.mu.Lock()
		err := id.queryAddrLocked()
		if err == nil {
			err = id.queryGIDLocked()
		}
		id.mu.Unlock()
		if err != nil {
			ev.Type, ev.Status = EventAddrError, -errnoOf(err)
		}
	case EventRouteResolved:
		id.mu.Lock()
		_, err := id.queryPathLocked()
		id.mu.Unlock()
		if err != nil {
			ev.Type, ev.Status = EventRouteError, -errnoOf(err)
		}
	case abi.RDMA_CM_EVENT_INTERNAL:
		// The library's own event (ResolveAddrInfo's DNS path), librdmacm's rule: only ADDRINFO_RESOLVED.
		if r.arg != uint64(EventAddrInfoResolved) {
			return nil
		}
		ev.Type, ev.Arg = EventAddrInfoResolved, 0
	case EventAddrInfoResolved:
		// The SA's answer (RESOLVE_IB_SERVICE): AF_IB service records, which the package does not represent.
		id.mu.Lock()
		if id.aiResult == nil {
			id.aiResolving = false
			ev.Type, ev.Status = EventAddrInfoError, int32(unix.EOPNOTSUPP)
		}
		id.mu.Unlock()
	case EventAddrInfoError:
		id.mu.Lock()
		id.aiResolving, id.aiResult = false, nil
		id.mu.Unlock()
	case EventConnectResponse:
		id.mu.Lock()
		if id.qp == nil {
			id.remoteECE = ev.ECE
		} else if !id.destroyed {
			// librdmacm: a REP naming another vendor than the REQ offered breaks the handshake.
			var err error
			if ev.ECE.VendorID != 0 && ev.ECE.VendorID != id.localECE.VendorID {
				err = fmt.Errorf("REP with ECE vendor %#x, the REQ offered %#x: %w", ev.ECE.VendorID,
					id.localECE.VendorID, unix.EINVAL)
			} else {
				id.remoteECE.VendorID = ev.ECE.VendorID
				err = id.setPeerECELocked(ev.ECE) // applied by the moves to RTR and RTS
				if err == nil {
					err = id.toRTSLocked()
				}
			}
			if err == nil {
				err = id.establishLocked()
			}
			if err == nil {
				err = id.queryLocalECELocked()
			}
			if err != nil {
				toErr(id.qp)
				ev.Type, ev.Status = EventConnectError, -errnoOf(err)
			} else {
				ev.Type = EventEstablished
			}
		}
		id.mu.Unlock()
	}
	return ev
}

// errnoOf is the errno inside err (EIO if none).
func errnoOf(err error) int32 {
	var en unix.Errno
	if errors.As(err, &en) {
		return int32(en)
	}
	return int32(unix.EIO)
}

// fetch issues GET_EVENT inside RawConn.Read: the fd is non-blocking, so the
// write fails with EAGAIN while no event is queued and the runtime poller
// then waits for the fd to become readable (ucma's poll only ever reports
// EPOLLIN). ctx ends the wait through the file's read deadline.
func (ch *Channel) fetch(ctx context.Context) (rawEvent, error) {
	ch.f.SetReadDeadline(time.Time{})
	if dl, ok := ctx.Deadline(); ok {
		ch.f.SetReadDeadline(dl)
	}
	var fired chan struct{}
	var stop func() bool
	if ctx.Done() != nil {
		fired = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			ch.f.SetReadDeadline(time.Unix(1, 0))
			close(fired)
		})
	}
	resp := ch.evBuf
	req := abi.RdmaUcmGetEvent{Response: ptr(unsafe.Pointer(resp))}
	var werr error
	err := ch.rc.Read(func(fd uintptr) bool {
		werr = ucmWrite(int(fd), abi.RDMA_USER_CM_CMD_GET_EVENT, &req, unsafe.Pointer(resp),
			abi.SizeofRdmaUcmEventResp)
		return werr != unix.EAGAIN
	})
	if stop != nil && !stop() {
		<-fired // the deadline was set; wait for it, then clear it for the next call
	}
	ch.f.SetReadDeadline(time.Time{})
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
			return rawEvent{}, ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return rawEvent{}, context.DeadlineExceeded
		}
		if errors.Is(err, os.ErrClosed) || ch.isClosed() { // RawConn.Read says "use of closed file"
			return rawEvent{}, ErrClosed
		}
		return rawEvent{}, err
	}
	if werr != nil {
		return rawEvent{}, werr
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(resp)), abi.SizeofRdmaUcmEventResp)
	return decodeEvent(b, func(uid uint64) bool {
		id := ch.lookup(uid)
		return id != nil && id.qpType == uverbs.QPTypeUD
	})
}
