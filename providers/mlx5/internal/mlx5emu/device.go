package mlx5emu

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrProtocol marks an emulated-device error: something the driver wrote (a
// doorbell, a BlueFlame copy, a WQE, a CQ buffer) that real hardware would
// reject or misinterpret. Every entry returned by [Device.Errors] wraps it.
var ErrProtocol = errors.New("mlx5emu: driver protocol violation")

// UAR layout constants (offsets inside the 4096-byte page returned by [Device.UAR]).
const (
	// UARSize is the size of the emulated UAR page.
	UARSize = 4096
	// CQDoorbellOffset is where the driver writes the 8-byte CQ arm doorbell
	// (MLX5_CQ_DOORBELL).
	CQDoorbellOffset = 0x20
	// BFOffset is where the first send doorbell / BlueFlame register starts
	// (MLX5_BF_OFFSET).
	BFOffset = 0x800
	// nonBFSlotStride separates send-doorbell registers when BlueFlame is off
	// (non-cached UAR: four registers per page at a 0x100 stride).
	nonBFSlotStride = 0x100
)

// Options configures a [Device]. The zero value is a device without
// BlueFlame, CQE version 1, MTU 4096.
type Options struct {
	// BFRegSize is bf_reg_size as the kernel reports it: 0 means the
	// device has no BlueFlame (write-combining self test failed) and
	// only 8-byte doorbells are accepted; otherwise one of 256, 512,
	// 1024. Each register has two halves of BFRegSize/2 bytes (buf_size)
	// which the driver alternates; registers start at BFOffset.
	BFRegSize int
	// CQEVersionZero selects CQE version 0 (cqe_version negotiated as 0):
	// srqn_uidx then carries the SRQ number for SRQ receives and 0
	// otherwise. By default (version 1) it carries the QP's user index.
	CQEVersionZero bool
	// MTU bounds UD message sizes (LOC_LEN_ERR above it). 0 means 4096.
	MTU int
	// RequireDoorbell makes the SQ execute only WQEs covered by a
	// doorbell or BlueFlame write seen on the UAR (as hardware does);
	// without it the SQ doorbell record alone drives execution. See the
	// package documentation for why doorbells can be lost when several
	// writes hit the same register between two Process calls.
	RequireDoorbell bool
	// GID is the source GID written into the GRH of UD receives whose
	// address vector asks for a GRH.
	GID [16]byte
	// LID is reported as slid in UD receive CQEs.
	LID uint16
	// UARPages is the number of UAR pages (default 1), each with its own
	// CQ doorbell and send/BlueFlame registers; more pages give more
	// QPs a register of their own, as the kernel's dynamic UARs do.
	UARPages int
}

// Device is one emulated ConnectX HCA with its UAR page and the objects the
// kernel would have created on it. All methods are safe for concurrent use.
type Device struct {
	opts Options
	uar  []byte

	mu       sync.Mutex
	closed   bool
	mrs      map[uint32]*mr
	cqs      map[uint32]*cq
	qps      map[uint32]*qp
	srqs     map[uint32]*srq
	nextMR   uint32
	nextCQN  uint32
	nextQPN  uint32
	nextSRQN uint32
	errs     []error
	events   []uint32
	evReady  chan struct{}
	slots    []uarSlot
	armSlots []uarSlot

	bgStop chan struct{}
	bgDone chan struct{}
}

// New creates an emulated device and maps its UAR page.
func New(opts Options) (*Device, error) {
	switch opts.BFRegSize {
	case 0, 256, 512, 1024:
	default:
		return nil, fmt.Errorf("mlx5emu: new device: bf_reg_size %d: %w", opts.BFRegSize, unix.EINVAL)
	}
	if opts.MTU == 0 {
		opts.MTU = 4096
	}
	if opts.MTU < 256 {
		return nil, fmt.Errorf("mlx5emu: new device: mtu %d: %w", opts.MTU, unix.EINVAL)
	}
	if opts.UARPages == 0 {
		opts.UARPages = 1
	}
	if opts.UARPages < 0 || opts.UARPages > 256 {
		return nil, fmt.Errorf("mlx5emu: new device: %d UAR pages: %w", opts.UARPages, unix.EINVAL)
	}
	uar, err := unix.Mmap(-1, 0, opts.UARPages*UARSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mlx5emu: new device: map UAR page: %w", err)
	}
	d := &Device{
		opts:     opts,
		uar:      uar,
		mrs:      map[uint32]*mr{},
		cqs:      map[uint32]*cq{},
		qps:      map[uint32]*qp{},
		srqs:     map[uint32]*srq{},
		nextMR:   0x10,
		nextCQN:  0x40,
		nextQPN:  0x100,
		nextSRQN: 0x20,
		evReady:  make(chan struct{}, 1),
	}
	stride := d.slotSize()
	for p := 0; p < opts.UARPages; p++ {
		base := p * UARSize
		d.armSlots = append(d.armSlots, uarSlot{off: base + CQDoorbellOffset, size: 8})
		for off := BFOffset; off+stride <= UARSize; off += stride {
			d.slots = append(d.slots, uarSlot{off: base + off, size: stride})
		}
	}
	return d, nil
}

func (d *Device) slotSize() int {
	if d.opts.BFRegSize == 0 {
		return nonBFSlotStride
	}
	return d.opts.BFRegSize / 2
}

// UAR returns the first emulated UAR page (4096 bytes, page aligned). The
// driver writes send doorbells / BlueFlame copies at BFOffset + k*slot and
// CQ arm doorbells at CQDoorbellOffset, exactly as it would to the mmap'd
// UAR. The emulator clears a register after consuming it.
func (d *Device) UAR() []byte { return d.UARPage(0) }

// UARPage returns UAR page i (0 <= i < Options.UARPages); every page works
// like the one UAR returns, and any QP or CQ may use any page.
func (d *Device) UARPage(i int) []byte {
	return d.uar[i*UARSize : (i+1)*UARSize : (i+1)*UARSize]
}

// BFRegSize returns the configured bf_reg_size (0: no BlueFlame).
func (d *Device) BFRegSize() int { return d.opts.BFRegSize }

// Close stops the background engine (if started) and unmaps the UAR page.
// The device must not be used afterwards.
func (d *Device) Close() error {
	d.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if err := unix.Munmap(d.uar); err != nil {
		return fmt.Errorf("mlx5emu: close device: unmap UAR page: %w", err)
	}
	return nil
}

// Process runs the emulated hardware once, synchronously: it consumes the
// doorbells and BlueFlame writes found on the UAR, reads every doorbell
// record, executes the newly posted WQEs of every QP in QPN order (each QP
// until its SQ is empty or stalled on RNR) and writes the CQEs. Each call is
// one RNR retry for a stalled RC QP. It returns the number of WQEs executed
// or flushed plus receive/arm work done (0 means the device was idle).
func (d *Device) Process() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.processLocked(false)
}

// Start runs the engine in a background goroutine until Stop. In this mode
// the UAR is polled concurrently with the driver's writes, so a register
// rewritten between two polls may be seen torn; such writes are not
// reported as errors (see the package documentation). Calling Start twice
// is a no-op.
func (d *Device) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bgStop != nil || d.closed {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	d.bgStop, d.bgDone = stop, done
	go func() {
		defer close(done)
		idle := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			d.mu.Lock()
			n := d.processLocked(true)
			d.mu.Unlock()
			if n > 0 {
				idle = 0
				continue
			}
			idle++
			if idle < 64 {
				runtime.Gosched()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}()
}

// Stop stops the background engine started by Start and waits for it.
func (d *Device) Stop() {
	d.mu.Lock()
	stop, done := d.bgStop, d.bgDone
	d.bgStop, d.bgDone = nil, nil
	d.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Errors returns a copy of the emulated-device errors recorded so far (each
// wraps ErrProtocol). A correct driver produces none.
func (d *Device) Errors() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]error(nil), d.errs...)
}

// Events returns the CQNs of the completion events fired since the last
// call, in order, and forgets them (like reading the completion channel).
func (d *Device) Events() []uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev := d.events
	d.events = nil
	return ev
}

// EventReady returns a channel that receives a value (coalesced) whenever
// a completion event fires, for waiting on events with the background
// engine; Events then returns them.
func (d *Device) EventReady() <-chan struct{} { return d.evReady }

func (d *Device) protoErr(format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...))
}

func (d *Device) sortedQPNs() []uint32 {
	qpns := make([]uint32, 0, len(d.qps))
	for n := range d.qps {
		qpns = append(qpns, n)
	}
	sort.Slice(qpns, func(i, j int) bool { return qpns[i] < qpns[j] })
	return qpns
}

func (d *Device) processLocked(lenient bool) int {
	if d.closed {
		return 0
	}
	work := d.scanUAR(lenient)
	cqns := make([]uint32, 0, len(d.cqs))
	for n := range d.cqs {
		cqns = append(cqns, n)
	}
	sort.Slice(cqns, func(i, j int) bool { return cqns[i] < cqns[j] })
	for _, n := range cqns {
		work += d.checkArmDBR(d.cqs[n])
	}
	for _, n := range d.sortedQPNs() {
		q := d.qps[n]
		if q == nil {
			continue
		}
		work += d.runQP(q)
	}
	return work
}
