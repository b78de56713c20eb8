package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctl requests (include/uapi/rdma/ib_user_mad.h): magic 0x1b.
const (
	ioctlRegisterAgent   = 0xC01C1B01 // _IOWR(0x1b, 1, struct ib_user_mad_reg_req), 28 bytes
	ioctlUnregisterAgent = 0x40041B02 // _IOW(0x1b, 2, __u32)
	ioctlEnablePKey      = 0x00001B03 // _IO(0x1b, 3)
	ioctlRegisterAgent2  = 0xC0281B04 // _IOWR(0x1b, 4, struct ib_user_mad_reg_req2), 40 bytes

	regReqSize  = 28
	regReq2Size = 40
	// maxAgents is IB_UMAD_MAX_AGENTS, the kernel's limit per open file.
	maxAgents = 32
)

// Port is an open umad device.
type Port struct {
	dev  Device
	f    *os.File
	rc   interface{ Control(func(fd uintptr)) error }
	tid  atomic.Uint64
	mu   sync.Mutex
	regs map[uint32]bool // registered agent ids
	// recvMu serializes Recv and Call readers.
	recvMu sync.Mutex
	// closed is set when Close begins: an operation that fails after it reports ErrClosed, whatever the file
	// said (a Recv that reaches the file after Close gets the runtime's "use of closed file" from its deadline
	// call, which is not os.ErrClosed).
	closed atomic.Bool
}

// Open opens the umad device of port on ibdev (for example "rxe0", 1).
func Open(ibdev string, port int) (*Port, error) { return Root{}.Open(ibdev, port) }

// Open opens the umad device of port on ibdev under r.
func (r Root) Open(ibdev string, port int) (*Port, error) {
	abi, err := r.ABIVersion()
	if err != nil {
		return nil, err
	}
	if abi != ABI {
		return nil, &Error{Op: "open", Device: fmt.Sprintf("%s:%d", ibdev, port), Kind: ErrABI, Err: fmt.Errorf("kernel ABI %d, want %d", abi, ABI)}
	}
	d, err := r.Lookup(ibdev, port)
	if err != nil {
		return nil, err
	}
	return OpenDevice(d)
}

// OpenDevice opens d. The fd is nonblocking and served by Go's poller.
func OpenDevice(d Device) (*Port, error) {
	fd, err := unix.Open(d.Path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		kind := error(nil)
		if err == unix.ENOENT || err == unix.ENODEV || err == unix.ENXIO {
			kind = ErrNoDevice
		}
		return nil, &Error{Op: "open", Device: d.Name, Kind: kind, Err: err}
	}
	// The ABI-5 header with pkey_index must be switched on before any
	// agent is registered.
	if err := ioctlNoArg(uintptr(fd), ioctlEnablePKey); err != nil {
		unix.Close(fd)
		return nil, &Error{Op: "enable pkey", Device: d.Name, Kind: ErrABI, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, &Error{Op: "open", Device: d.Name, Err: err}
	}
	return &Port{dev: d, f: f, rc: rc, regs: map[uint32]bool{}}, nil
}

// Device is the device p was opened on.
func (p *Port) Device() Device { return p.dev }

func ioctlNoArg(fd, req uintptr) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, req, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (p *Port) ioctl(req uintptr, arg unsafe.Pointer) error {
	var errno unix.Errno
	err := p.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
	})
	if err != nil {
		if errors.Is(err, os.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// Agent is a registered agent.
type Agent struct {
	ID    uint32
	Class uint8
}

// Registration describes an agent.
type Registration struct {
	QPN          uint32 // 0 (SMI classes) or 1 (GSI); Register picks by class when 0 and Class is not SMI
	Class        uint8
	ClassVersion uint8
	RMPPVersion  uint8
	// MethodMask selects unsolicited methods to receive (bit n = method
	// n); zero for a client that only receives replies.
	MethodMask [2]uint64
	OUI        uint32 // vendor classes 0x30-0x4f only
}

func (reg Registration) qpn() uint32 {
	if reg.Class == ClassSMI || reg.Class == 0x81 {
		return 0
	}
	return QP1
}

// Register registers an agent for reg.Class. It uses
// IB_USER_MAD_REGISTER_AGENT2 and falls back to IB_USER_MAD_REGISTER_AGENT
// when the kernel does not know it (ENOTTY/EINVAL).
func (p *Port) Register(reg Registration) (Agent, error) {
	var b [regReq2Size]byte
	ne := binary.NativeEndian
	qpn := reg.qpn()
	ne.PutUint32(b[4:], qpn)
	b[8] = reg.Class
	b[9] = reg.ClassVersion
	ne.PutUint64(b[16:], reg.MethodMask[0])
	ne.PutUint64(b[24:], reg.MethodMask[1])
	ne.PutUint32(b[32:], reg.OUI)
	b[36] = reg.RMPPVersion
	err := p.ioctl(ioctlRegisterAgent2, unsafe.Pointer(&b[0]))
	id := ne.Uint32(b[0:])
	if errors.Is(err, unix.ENOTTY) {
		var o [regReq2Size]byte // room to spare; the kernel uses 28
		ne.PutUint64(o[4:], reg.MethodMask[0])
		ne.PutUint64(o[12:], reg.MethodMask[1])
		o[20] = byte(qpn)
		o[21] = reg.Class
		o[22] = reg.ClassVersion
		o[23], o[24], o[25] = byte(reg.OUI>>16), byte(reg.OUI>>8), byte(reg.OUI)
		o[26] = reg.RMPPVersion
		err = p.ioctl(ioctlRegisterAgent, unsafe.Pointer(&o[0]))
		id = ne.Uint32(o[0:])
	}
	if err != nil {
		return Agent{}, p.err("register", err)
	}
	p.mu.Lock()
	p.regs[id] = true
	p.mu.Unlock()
	return Agent{ID: id, Class: reg.Class}, nil
}

// Unregister releases an agent.
func (p *Port) Unregister(a Agent) error {
	id := a.ID
	if err := p.ioctl(ioctlUnregisterAgent, unsafe.Pointer(&id)); err != nil {
		return p.err("unregister", err)
	}
	p.mu.Lock()
	delete(p.regs, a.ID)
	p.mu.Unlock()
	return nil
}

// SyscallConn gives access to the port's file descriptor (umad_get_fd) for what the package does not do
// itself — an ioctl, or waiting on the descriptor in another event loop. The descriptor stays owned by the
// Port: do not close it, and do not read MADs through it while Recv or Call may run.
func (p *Port) SyscallConn() (syscall.RawConn, error) {
	if p.closed.Load() {
		return nil, &Error{Op: "syscall conn", Device: p.dev.Name, Kind: ErrClosed}
	}
	rc, err := p.f.SyscallConn()
	if err != nil {
		return nil, p.err("syscall conn", err)
	}
	return rc, nil
}

// Agents is the number of agents registered through p and not released.
func (p *Port) Agents() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.regs)
}

func (p *Port) err(op string, err error) error {
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, os.ErrClosed), p.closed.Load():
		return &Error{Op: op, Device: p.dev.Name, Kind: ErrClosed}
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return &Error{Op: op, Device: p.dev.Name, Kind: ErrTimeout, Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Op: op, Device: p.dev.Name, Err: err}
	}
	return &Error{Op: op, Device: p.dev.Name, Err: err}
}

// Packet is one MAD read from the device.
type Packet struct {
	Hdr
	MAD []byte // the MAD (for a timed-out send: the request's 24-byte header)
}

// Send writes mad (256 bytes, or a multiple for RMPP) for agent a to addr.
// timeout and retries are the kernel's: it waits timeout for a reply,
// resends up to retries times, then reports ETIMEDOUT through Recv.
func (p *Port) Send(a Agent, addr Addr, mad []byte, timeout time.Duration, retries int) error {
	h := Hdr{AgentID: a.ID, TimeoutMS: uint32(timeout / time.Millisecond), Retries: uint32(retries), Addr: addr}
	buf := append(h.Marshal(), mad...)
	n, err := p.f.Write(buf)
	if err != nil {
		return p.err("send", unwrapPathErr(err))
	}
	if n != len(buf) {
		return p.err("send", fmt.Errorf("short write %d of %d: %w", n, len(buf), unix.EIO))
	}
	return nil
}

// Recv reads the next packet, waiting until ctx is done.
func (p *Port) Recv(ctx context.Context) (Packet, error) {
	p.recvMu.Lock()
	defer p.recvMu.Unlock()
	return p.recv(ctx)
}

func (p *Port) recv(ctx context.Context) (Packet, error) {
	if err := ctx.Err(); err != nil {
		return Packet{}, p.err("recv", err)
	}
	dl, hasDL := ctx.Deadline()
	if err := p.f.SetReadDeadline(dl); err != nil {
		return Packet{}, p.err("recv", err)
	}
	poked := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		p.f.SetReadDeadline(time.Unix(1, 0))
		close(poked)
	})
	defer func() {
		if !stop() {
			// The poke ran or is running: wait, so that it cannot land
			// on the next Recv's deadline.
			<-poked
		}
	}()
	buf := make([]byte, HdrSize+MADSize)
	for {
		n, err := p.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				switch {
				case ctx.Err() != nil:
					err = ctx.Err()
				case hasDL:
					// The poller's timer can fire before the context's.
					err = context.DeadlineExceeded
				}
			}
			if errors.Is(err, unix.ENOSPC) {
				// An RMPP reply larger than one MAD: the kernel put the
				// header in buf with the length it needs.
				h, _ := ParseHdr(buf)
				big := make([]byte, max(int(h.Length), HdrSize+MADSize))
				if n, err = p.f.Read(big); err == nil {
					buf = big
				}
			}
			if err != nil {
				return Packet{}, p.err("recv", unwrapPathErr(err))
			}
		}
		pkt, err := parsePacket(buf[:n])
		if err != nil {
			return Packet{}, p.err("recv", err)
		}
		return pkt, nil
	}
}

func parsePacket(b []byte) (Packet, error) {
	h, err := ParseHdr(b)
	if err != nil {
		return Packet{}, err
	}
	return Packet{Hdr: h, MAD: append([]byte(nil), b[HdrSize:]...)}, nil
}

// NewTID returns a fresh transaction ID (the high 32 bits are the kernel's;
// the MAD layer rewrites them per agent).
func (p *Port) NewTID() uint64 { return p.tid.Add(1) & 0xffffffff }

// Call sends mad (with a new TID) and waits for the reply with the same
// TID, skipping other arrivals. A kernel-reported timeout is ErrTimeout; a
// reply with a non-zero status is returned with a *StatusError.
func (p *Port) Call(ctx context.Context, a Agent, addr Addr, mad []byte, timeout time.Duration, retries int) ([]byte, error) {
	h, err := ParseMADHdr(mad)
	if err != nil {
		return nil, p.err("call", err)
	}
	h.TID = p.NewTID()
	req := append([]byte(nil), mad...)
	h.Put(req)
	p.recvMu.Lock()
	defer p.recvMu.Unlock()
	if err := p.Send(a, addr, req, timeout, retries); err != nil {
		return nil, err
	}
	for {
		pkt, err := p.recv(ctx)
		if err != nil {
			return nil, err
		}
		if pkt.AgentID != a.ID {
			continue
		}
		rh, err := ParseMADHdr(pkt.MAD)
		if err != nil {
			return nil, p.err("call", err)
		}
		if rh.TID&0xffffffff != h.TID {
			continue
		}
		if pkt.Status != 0 {
			e := unix.Errno(pkt.Status)
			if e == unix.ETIMEDOUT {
				return nil, &Error{Op: "call", Device: p.dev.Name, Kind: ErrTimeout, Err: e}
			}
			return nil, p.err("call", e)
		}
		if rh.Status != 0 {
			return pkt.MAD, &Error{Op: "call", Device: p.dev.Name, Kind: ErrMADStatus, Err: &StatusError{Status: rh.Status}}
		}
		return pkt.MAD, nil
	}
}

// Close releases the device and, with it, every agent registered on it.
// A Recv blocked on p returns an error matching ErrClosed.
func (p *Port) Close() error {
	p.closed.Store(true)
	err := p.f.Close()
	p.mu.Lock()
	clear(p.regs)
	p.mu.Unlock()
	if err != nil {
		return p.err("close", err)
	}
	return nil
}
