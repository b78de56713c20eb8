package uverbs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// Context is an open device context: one uverbs command file descriptor with its kernel ucontext, the provider's
// per-context state and the async event fd. All objects are created from it. Close it after every object made
// from it is closed.
type Context struct {
	dev      Device
	fd       int
	asyncFD  int
	prov     provider.Context
	numComp  uint32
	coreSupp uint64
	imported bool // made by ImportContext: no async event file of its own

	mu      sync.Mutex
	closed  bool
	objects int // live objects created from this context
	async   *asyncReader
	handles handleTable
	dpErrs  *dataPathErrors

	cleanup runtime.Cleanup
	drvObjs driverObjects // the provider's own kernel objects (driverobj.go)

	// The device's capability flags, queried on first need (flush and ODP access, the opcodes a QP may post).
	capsOnce sync.Once
	caps     DeviceCap
	odp      ODPGeneralCap
	capsErr  error
}

// deviceCaps is the device's capability flags, queried once per context.
func (c *Context) deviceCaps() (DeviceCap, error) {
	c.capsOnce.Do(func() {
		a, err := c.QueryDevice()
		if err != nil {
			c.capsErr = err
			return
		}
		c.caps = a.DeviceCapFlags
		c.odp = a.ODPGeneralCaps
	})
	return c.caps, c.capsErr
}

// Open opens the named device ("rxe0"). Equivalent to ibv_open_device on the device of that name. Its errors
// are *Error (Op "open device"); one for a name that no device has matches ErrNoDevice.
func Open(name string) (*Context, error) {
	d, err := deviceByName(name)
	if err != nil {
		return nil, wrap("open device", name, err)
	}
	return d.Open()
}

// Open opens the device: its uverbs character device, then GET_CONTEXT (with the provider's driver data) over
// ioctl, then an async event fd.
func (d Device) Open() (*Context, error) {
	if d.Err != nil {
		return nil, wrap("open device", d.Name, d.Err)
	}
	drv, ok := provider.Lookup(uint32(d.DriverID))
	if !ok {
		return nil, wrap("open device", d.Name, fmt.Errorf("%w: no goverbs provider for driver %v (have %v)",
			ErrNotSupported, d.DriverID, provider.Names()))
	}
	if lo, hi := drv.ABI(); d.ABI < lo || d.ABI > hi {
		return nil, wrap("open device", d.Name, fmt.Errorf("%w: driver uverbs ABI %d, provider %s speaks %d..%d",
			ErrNotSupported, d.ABI, drv.Name(), lo, hi))
	}
	fd, err := unix.Open(d.DevPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, wrap("open device", d.Name, &os.PathError{Op: "open", Path: d.DevPath, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, wrap("open device", d.Name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || (d.Major != 0 && (unix.Major(st.Rdev) != d.Major || unix.Minor(st.Rdev) != d.Minor)) {
		unix.Close(fd)
		return nil, wrap("open device", d.Name, fmt.Errorf("%s is not the uverbs character device %d:%d", d.DevPath, d.Major, d.Minor))
	}
	c := &Context{dev: d, fd: fd, asyncFD: -1, dpErrs: newDataPathErrors(d.Name)}
	pdev := &provider.Device{Name: d.Name, FD: fd, DriverID: uint32(d.DriverID), ABI: d.ABI, PageSize: os.Getpagesize(),
		Objects: c.driverObject}
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT, uint32(d.DriverID))
	prov, err := drv.AllocContext(pdev, func(uhwIn, uhwOut []byte) error {
		cmd.Reset(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_GET_CONTEXT, uint32(d.DriverID))
		nc := cmd.PtrOut(abi.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, ptr(&c.numComp), 4)
		cs := cmd.PtrOut(abi.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, ptr(&c.coreSupp), 8)
		cmd.Optional(cs)
		_ = nc
		addUHW(cmd, uhwIn, uhwOut)
		return cmd.Invoke(fd)
	})
	if err != nil {
		unix.Close(fd)
		return nil, wrap("open device (get context)", d.Name, limitErr(d.Name, "hca_handle", err))
	}
	c.prov = prov
	// The async event fd: the first one allocated becomes the file's default event file, so every object
	// created later reports its async events there.
	cmd.Reset(abi.UVERBS_OBJECT_ASYNC_EVENT, abi.UVERBS_METHOD_ASYNC_EVENT_ALLOC, uint32(d.DriverID))
	fi := cmd.NewFD(abi.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE)
	if err := cmd.Invoke(fd); err != nil {
		prov.Close()
		unix.Close(fd)
		return nil, wrap("open device (alloc async event fd)", d.Name, err)
	}
	c.asyncFD = cmd.FDOut(fi)
	// Safety net only: closing the command fd makes the kernel destroy every object of the context.
	c.cleanup = runtime.AddCleanup(c, func(fds [2]int) {
		unix.Close(fds[1])
		unix.Close(fds[0])
	}, [2]int{fd, c.asyncFD})
	return c, nil
}

// addUHW adds the driver-data attributes when present.
func addUHW(cmd *rawcmd.Cmd, in, out []byte) {
	if len(in) > 0 {
		cmd.BytesIn(abi.UVERBS_ATTR_UHW_IN, in)
	}
	if len(out) > 0 {
		cmd.BytesOut(abi.UVERBS_ATTR_UHW_OUT, out)
	}
}

// Device returns what discovery knew about the device.
func (c *Context) Device() Device { return c.dev }

// Name is the device name.
func (c *Context) Name() string { return c.dev.Name }

// FD is the uverbs command file descriptor (for raw commands through package rawcmd).
func (c *Context) FD() int { return c.fd }

// DriverID is the driver id every command on this context carries (uint32(id) for package rawcmd).
func (c *Context) DriverID() DriverID { return c.dev.DriverID }

// AsyncFD is the context's async event file descriptor (ibv_context's async_fd), for diagnostics such as
// ibv_asyncwatch's banner. Read events with AsyncEvent, not from the descriptor.
func (c *Context) AsyncFD() int { return c.asyncFD }

// NumCompVectors is the number of completion vectors (GET_CONTEXT).
func (c *Context) NumCompVectors() int { return int(c.numComp) }

// CoreSupport is the kernel's UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT bits (IB_UVERBS_CORE_SUPPORT_*).
func (c *Context) CoreSupport() uint64 { return c.coreSupp }

// Close destroys the context. It fails with EBUSY (as the kernel does for a parent with children) while
// objects created from it are still open.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.objects > 0 {
		return wrap("close context", c.dev.Name, fmt.Errorf("%d objects still open: %w", c.objects, unix.EBUSY))
	}
	c.closed = true
	c.cleanup.Stop()
	var errs []error
	if c.async != nil {
		c.async.close()
	}
	if err := c.prov.Close(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.drvObjs.leaked())
	if c.asyncFD >= 0 && c.async == nil {
		unix.Close(c.asyncFD)
	}
	if err := unix.Close(c.fd); err != nil {
		errs = append(errs, err)
	}
	return wrap("close context", c.dev.Name, errors.Join(errs...))
}

// write runs a legacy command through the INVOKE_WRITE tunnel.
func (c *Context) write(w *rawcmd.Write) error {
	cmd := new(rawcmd.Cmd)
	return cmd.InvokeWrite(c.fd, uint32(c.dev.DriverID), w)
}

// ioctl starts a new ioctl command for this context's driver.
func (c *Context) newCmd(object, method uint16) *rawcmd.Cmd {
	return rawcmd.New(object, method, uint32(c.dev.DriverID))
}

// addObject / dropObject count live children so Close can refuse while they exist.
func (c *Context) addObject() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.objects++
	return nil
}

func (c *Context) dropObject() {
	c.mu.Lock()
	c.objects--
	c.mu.Unlock()
}
