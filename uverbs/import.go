package uverbs

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
)

// Sharing a context between processes (ibv_import_device, ibv_import_pd, ibv_import_mr): the kernel's
// ucontext belongs to the uverbs command file, not to the process that opened it, so another process that has
// the file (passed over a Unix socket with SCM_RIGHTS, or inherited across exec as os/exec's ExtraFiles) can
// build a Context on it, and use the PDs and MRs the first process made by their handles. Objects the importer
// creates on the shared context are the kernel's like any other; imported ones stay the exporter's: closing
// them in the importer only forgets them (ibv_unimport_pd, ibv_unimport_mr).

// ImportContext builds a Context on a uverbs command file descriptor another Context opened (ibv_import_device):
// it finds the device by the file's character device number and asks the kernel about the existing ucontext
// (QUERY_CONTEXT, Linux 5.10+) instead of creating one. The Context works on a duplicate of cmdFD: the caller
// still owns cmdFD and may close it. An imported Context has no async event file of its own (the kernel reports
// events to the file the exporter's context allocated): AsyncEvent answers ErrNotSupported.
//
// The kernel answers QUERY_CONTEXT only for drivers with a query_ucontext operation (mlx5 has one, rxe and
// siw do not): on rxe the import is the kernel's EOPNOTSUPP, as libibverbs' rxe provider refuses it, typed
// ErrNotSupported. The provider must take part too: goverbs' rxe provider does (it keeps no per-context driver
// state); its mlx5 provider does not yet (ErrNotSupported), since mlx5's context comes back in a driver
// attribute of QUERY_CONTEXT that goverbs does not decode yet.
func ImportContext(cmdFD int) (*Context, error) {
	var st unix.Stat_t
	if err := unix.Fstat(cmdFD, &st); err != nil {
		return nil, wrap("import device", fmt.Sprintf("fd %d", cmdFD), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return nil, wrap("import device", fmt.Sprintf("fd %d", cmdFD), fmt.Errorf("not a character device: %w", unix.EINVAL))
	}
	devs, err := Devices()
	if err != nil {
		return nil, wrap("import device", fmt.Sprintf("fd %d", cmdFD), err)
	}
	var d Device
	found := false
	for _, dev := range devs {
		if dev.Err == nil && dev.Major == unix.Major(st.Rdev) && dev.Minor == unix.Minor(st.Rdev) {
			d, found = dev, true
			break
		}
	}
	if !found {
		return nil, wrap("import device", fmt.Sprintf("fd %d", cmdFD), fmt.Errorf("%w: no RDMA device has character device %d:%d",
			ErrNoDevice, unix.Major(st.Rdev), unix.Minor(st.Rdev)))
	}
	drv, ok := provider.Lookup(uint32(d.DriverID))
	if !ok {
		return nil, wrap("import device", d.Name, fmt.Errorf("%w: no goverbs provider for driver %v", ErrNotSupported, d.DriverID))
	}
	imp, ok := drv.(provider.ContextImporter)
	if !ok {
		return nil, wrap("import device", d.Name, fmt.Errorf("%w: the %s provider cannot import a context: %w",
			ErrNotSupported, drv.Name(), unix.EOPNOTSUPP))
	}
	fd, err := unix.FcntlInt(uintptr(cmdFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, wrap("import device", d.Name, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err))
	}
	c := &Context{dev: d, fd: fd, asyncFD: -1, imported: true, dpErrs: newDataPathErrors(d.Name)}
	pdev := &provider.Device{Name: d.Name, FD: fd, DriverID: uint32(d.DriverID), ABI: d.ABI, PageSize: os.Getpagesize(),
		Objects: c.driverObject}
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_CONTEXT, uint32(d.DriverID))
	prov, err := imp.ImportContext(pdev, func(uhwIn, uhwOut []byte) error {
		if len(uhwIn) > 0 || len(uhwOut) > 0 {
			return fmt.Errorf("QUERY_CONTEXT takes no driver data (%d bytes in, %d out): %w", len(uhwIn), len(uhwOut), unix.EINVAL)
		}
		cmd.Reset(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_CONTEXT, uint32(d.DriverID))
		cmd.PtrOut(abi.UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, ptr(&c.numComp), 4)
		cmd.Optional(cmd.PtrOut(abi.UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, ptr(&c.coreSupp), 8))
		return cmd.Invoke(fd)
	})
	if err != nil {
		unix.Close(fd)
		return nil, wrap("import device (query context)", d.Name, err)
	}
	c.prov = prov
	c.cleanup = runtime.AddCleanup(c, func(fd int) { unix.Close(fd) }, fd)
	return c, nil
}

// Imported reports whether the context was made by ImportContext.
func (c *Context) Imported() bool { return c.imported }

// ImportPD makes a PD of this context from the handle of a PD the exporting process allocated on the same
// command file (ibv_import_pd; the exporter reads it with PD.Handle). The kernel has no generic query of a PD,
// so a handle that names none is refused by the first command that uses it. Close forgets the PD without
// deallocating it (ibv_unimport_pd); the exporter deallocates it. rxe's provider takes part (an rxe PD has no
// driver state); mlx5's does not yet (its PD number needs mlx5's PD query): ErrNotSupported.
func (c *Context) ImportPD(handle uint32) (*PD, error) {
	imp, ok := c.prov.(provider.PDImporter)
	if !ok {
		return nil, wrap("import PD", c.dev.Name, fmt.Errorf("%w: the provider cannot import a PD: %w", ErrNotSupported, unix.EOPNOTSUPP))
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("import PD", c.dev.Name, err)
	}
	prov, err := imp.ImportPD(handle)
	if err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, err, "import PD %#x", handle)
	}
	return &PD{ctx: c, handle: handle, prov: prov, imported: true}, nil
}

// Imported reports whether the PD was made by Context.ImportPD.
func (pd *PD) Imported() bool { return pd.imported }

// ImportMR makes an MR of this PD's context from the handle of an MR the exporting process registered on the
// same command file (ibv_import_mr; the exporter reads it with MR.Handle): the kernel's QUERY_MR (Linux 5.10+)
// gives its keys, length and, from Linux 5.13, its IOVA. The memory is the exporter's: Addr is 0 (this process
// may not have it mapped) and Bytes nil; SGEs and remote addresses use IOVA. Close forgets the MR without
// deregistering it (ibv_unimport_mr).
func (pd *PD) ImportMR(handle uint32) (*MR, error) {
	c := pd.ctx
	if err := pd.checkOpen(); err != nil {
		return nil, wrap("import MR", c.dev.Name, err)
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("import MR", c.dev.Name, err)
	}
	var lkey, rkey uint32
	var length, iova uint64
	cmd := c.newCmd(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_QUERY_MR)
	cmd.Object(abi.UVERBS_ATTR_QUERY_MR_HANDLE, handle)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_MR_RESP_LKEY, ptr(&lkey), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_MR_RESP_RKEY, ptr(&rkey), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_MR_RESP_LENGTH, ptr(&length), 8)
	cmd.Optional(cmd.PtrOut(abi.UVERBS_ATTR_QUERY_MR_RESP_IOVA, ptr(&iova), 8))
	if err := cmd.Invoke(c.fd); err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, err, "import MR %#x (query MR)", handle)
	}
	return &MR{pd: pd, handle: handle, lkey: lkey, rkey: rkey, iova: iova, length: int(length), imported: true}, nil
}

// Imported reports whether the MR was made by PD.ImportMR.
func (mr *MR) Imported() bool { return mr.imported }
