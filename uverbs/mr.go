package uverbs

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// Access is a set of memory access rights (IBV_ACCESS_* / IB_UVERBS_ACCESS_*).
type Access uint32

// Access rights.
const (
	AccessLocalWrite   Access = abi.IB_UVERBS_ACCESS_LOCAL_WRITE
	AccessRemoteWrite  Access = abi.IB_UVERBS_ACCESS_REMOTE_WRITE
	AccessRemoteRead   Access = abi.IB_UVERBS_ACCESS_REMOTE_READ
	AccessRemoteAtomic Access = abi.IB_UVERBS_ACCESS_REMOTE_ATOMIC
	AccessMWBind       Access = abi.IB_UVERBS_ACCESS_MW_BIND
	AccessZeroBased    Access = abi.IB_UVERBS_ACCESS_ZERO_BASED
	// AccessOnDemand registers the memory for on-demand paging (odp.go): nothing is pinned, pages are faulted
	// in when a transfer touches them. A device without ODPSupport gets ErrNotSupported before any system call.
	AccessOnDemand        Access = abi.IB_UVERBS_ACCESS_ON_DEMAND
	AccessHugeTLB         Access = abi.IB_UVERBS_ACCESS_HUGETLB
	AccessRelaxedOrdering Access = abi.IB_UVERBS_ACCESS_RELAXED_ORDERING
	// AccessFlushGlobal and AccessFlushPersistent let RDMA FLUSH (WRFlush) of that placement type target the
	// MR (IB_UVERBS_ACCESS_FLUSH_*, Linux 6.2+; a device without DeviceCapFlushGlobal/Persistent gets
	// ErrNotSupported before any system call). Persistent needs an MR on persistent memory.
	AccessFlushGlobal     Access = 1 << 8
	AccessFlushPersistent Access = 1 << 9
	accessFlush                  = AccessFlushGlobal | AccessFlushPersistent
)

// accessMandatory are the bits the kernel knows and enforces; the optional range (relaxed ordering) is
// stripped unless the kernel advertised it, as rdma-core does.
const accessMandatory = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic |
	AccessMWBind | AccessZeroBased | AccessOnDemand | AccessHugeTLB | accessFlush

// Validate applies the kernel's ib_check_mr_access rules (RegMR and Rereg call it first), so a bad combination
// is named before any system call.
func (a Access) Validate() error {
	if a&^(accessMandatory|abi.IB_UVERBS_ACCESS_OPTIONAL_RANGE) != 0 {
		return fmt.Errorf("unknown access bits %#x: %w", uint32(a&^accessMandatory), unix.EINVAL)
	}
	if a&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && a&AccessLocalWrite == 0 {
		return fmt.Errorf("remote write or atomic access requires local write: %w", unix.EINVAL)
	}
	return nil
}

// MR is a registered memory region.
type MR struct {
	pd     *PD
	handle uint32
	lkey   uint32
	rkey   uint32
	addr   uintptr
	iova   uint64 // the address the device knows the memory by (the address itself, but for RegMRAddr)
	length int
	access Access
	// imported: made by PD.ImportMR; Close forgets it (the exporter deregisters it).
	imported bool
	// null: made by PD.AllocNullMR, no kernel object; Close forgets it.
	null bool
	buf  []byte // keeps Go memory registered by slice reachable
	dm   *DM    // the device memory it is registered on (PD.RegDMMR), or nil
	life
}

// RegMR registers buf with the given access rights (ibv_reg_mr). buf must stay untouched by the Go runtime's
// reuse while registered: the MR keeps a reference to it; memory from AllocBuffer (anonymous mmap) is the
// recommended choice for anything the device writes.
func (pd *PD) RegMR(buf []byte, access Access) (*MR, error) {
	if len(buf) == 0 {
		return nil, wrap("reg MR", pd.ctx.dev.Name, fmt.Errorf("empty buffer: %w", unix.EINVAL))
	}
	mr, err := pd.regMR(uintptr(unsafe.Pointer(&buf[0])), len(buf), uint64(uintptr(unsafe.Pointer(&buf[0]))), access)
	if err != nil {
		return nil, err
	}
	mr.buf = buf
	return mr, nil
}

// RegMRAddr registers length bytes at addr, which the caller keeps mapped (for example mmap'd memory) for the
// MR's lifetime, with I/O virtual address iova (ibv_reg_mr_iova).
func (pd *PD) RegMRAddr(addr uintptr, length int, iova uint64, access Access) (*MR, error) {
	return pd.regMR(addr, length, iova, access)
}

func (pd *PD) regMR(addr uintptr, length int, iova uint64, access Access) (*MR, error) {
	c := pd.ctx
	if err := pd.checkOpen(); err != nil {
		return nil, wrap("reg MR", c.dev.Name, err)
	}
	if err := access.Validate(); err != nil {
		return nil, wrap("reg MR", c.dev.Name, err)
	}
	if err := c.checkFlushAccess(access); err != nil {
		return nil, wrap("reg MR", c.dev.Name, err)
	}
	if err := c.checkODPAccess(access); err != nil {
		return nil, wrap("reg MR", c.dev.Name, err)
	}
	if access&abi.IB_UVERBS_ACCESS_OPTIONAL_RANGE != 0 && c.coreSupp&abi.IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS == 0 {
		access &^= abi.IB_UVERBS_ACCESS_OPTIONAL_RANGE
	}
	if length <= 0 {
		return nil, wrap("reg MR", c.dev.Name, fmt.Errorf("length %d: %w", length, unix.EINVAL))
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("reg MR", c.dev.Name, err)
	}
	in := &abi.IbUverbsRegMr{Start: uint64(addr), Length: uint64(length), HcaVa: iova, PdHandle: pd.handle, AccessFlags: uint32(access)}
	out := new(abi.IbUverbsRegMrResp)
	w := &rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_REG_MR, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}
	if d, ok := c.prov.(provider.MRDriverData); ok { // siw's driver wants its request and response with every REG_MR
		w.UHWIn, w.UHWOut = d.RegMRData()
	}
	if err := c.write(w); err != nil {
		c.dropObject()
		err = memlockErr(c.dev.Name, length, limitErr(c.dev.Name, "hca_object", err))
		return nil, wrapf(c.dev.Name, err, "reg MR (%d bytes, access %#x)", length, uint32(access))
	}
	return &MR{pd: pd, handle: out.MrHandle, lkey: out.Lkey, rkey: out.Rkey, addr: addr, iova: iova, length: length, access: access}, nil
}

// LKey is the local key.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey is the remote key.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Addr is the start address of the registered memory in this process.
func (mr *MR) Addr() uint64 { return uint64(mr.addr) }

// IOVA is the address the device knows the memory by (ibv_mr's iova): Addr, unless the region was registered
// with another I/O virtual address (RegMRAddr). SGEs and a peer's remote addresses for this MR are in this
// space.
func (mr *MR) IOVA() uint64 { return mr.iova }

// Len is the registered length.
func (mr *MR) Len() int { return mr.length }

// Handle is the kernel's handle.
func (mr *MR) Handle() uint32 { return mr.handle }

// SGE returns a scatter/gather element for bytes [off, off+n) of the region (in its IOVA space).
func (mr *MR) SGE(off, n int) SGE {
	return SGE{Addr: mr.iova + uint64(off), Length: uint32(n), LKey: mr.lkey}
}

// ReregFlags select what MR.Rereg changes (IB_MR_REREG_*).
type ReregFlags uint32

// Rereg flags.
const (
	ReregTrans  ReregFlags = 1 << 0 // a new memory range
	ReregPD     ReregFlags = 1 << 1 // a new protection domain
	ReregAccess ReregFlags = 1 << 2 // new access rights
)

var reregFlagNames = [...]string{"TRANS", "PD", "ACCESS"}

func (f ReregFlags) String() string { return enumstr.Flags(reregFlagNames[:], uint64(f)) }

// Rereg changes the registration (ibv_rereg_mr): with ReregTrans a new range (buf), with ReregPD a new PD,
// with ReregAccess new access rights. Devices that cannot re-register answer ErrNotSupported (rxe on 6.1).
func (mr *MR) Rereg(flags ReregFlags, pd *PD, buf []byte, access Access) error {
	c := mr.pd.ctx
	if err := mr.enter(); err != nil {
		return wrapf(c.dev.Name, err, "rereg MR %#x", mr.handle)
	}
	defer mr.exit()
	if mr.null {
		return wrapf(c.dev.Name, fmt.Errorf("a null MR has no registration: %w", unix.EINVAL), "rereg MR %#x", mr.handle)
	}
	if flags&ReregPD != 0 {
		if err := pd.checkOpen(); err != nil {
			return wrapf(c.dev.Name, err, "rereg MR %#x to a new PD", mr.handle)
		}
	}
	in := &abi.IbUverbsReregMr{MrHandle: mr.handle, Flags: uint32(flags)}
	if flags&ReregTrans != 0 {
		if len(buf) == 0 {
			return wrap("rereg MR", c.dev.Name, fmt.Errorf("empty buffer: %w", unix.EINVAL))
		}
		in.Start = uint64(uintptr(unsafe.Pointer(&buf[0])))
		in.Length = uint64(len(buf))
		in.HcaVa = in.Start
	}
	if flags&ReregPD != 0 {
		in.PdHandle = pd.handle
	}
	if flags&ReregAccess != 0 {
		if err := access.Validate(); err != nil {
			return wrap("rereg MR", c.dev.Name, err)
		}
		if err := c.checkFlushAccess(access); err != nil {
			return wrap("rereg MR", c.dev.Name, err)
		}
		if err := c.checkODPAccess(access); err != nil {
			return wrap("rereg MR", c.dev.Name, err)
		}
		in.AccessFlags = uint32(access)
	}
	out := new(abi.IbUverbsReregMrResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_REREG_MR, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		if flags&ReregTrans != 0 {
			err = memlockErr(c.dev.Name, len(buf), err)
		}
		return wrapf(c.dev.Name, err, "rereg MR %#x", mr.handle)
	}
	mr.lkey, mr.rkey = out.Lkey, out.Rkey
	if flags&ReregTrans != 0 {
		mr.addr, mr.iova, mr.length, mr.buf = uintptr(in.Start), in.HcaVa, len(buf), buf
	}
	if flags&ReregPD != 0 {
		mr.pd = pd
	}
	if flags&ReregAccess != 0 {
		mr.access = access
	}
	return nil
}

// Close deregisters the region (ibv_dereg_mr); an imported one (PD.ImportMR) it only forgets (ibv_unimport_mr).
func (mr *MR) Close() error {
	if mr == nil {
		return nil
	}
	return mr.life.close(func() error {
		c := mr.pd.ctx
		if mr.imported || mr.null {
			c.dropObject()
			return nil
		}
		if err := c.destroyObject(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_MR_DESTROY, abi.UVERBS_ATTR_DESTROY_MR_HANDLE, mr.handle); err != nil {
			return wrapf(c.dev.Name, err, "dereg MR %#x", mr.handle)
		}
		mr.buf = nil
		if mr.dm != nil {
			mr.dm.mrs.Add(-1)
		}
		c.dropObject()
		return nil
	})
}

// Buffer is page-aligned anonymous memory outside the Go heap, the right home for registered memory and for
// anything a device writes.
type Buffer struct {
	b []byte
	m []byte // the whole mapping, as unix.Mmap returned it
}

// AllocBuffer maps n bytes (rounded up to whole pages) of zeroed anonymous memory.
func AllocBuffer(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("alloc buffer of %d bytes: %w", n, unix.EINVAL)
	}
	pg := unix.Getpagesize()
	size := (n + pg - 1) &^ (pg - 1)
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("alloc buffer of %d bytes: %w", n, err)
	}
	return &Buffer{b: b[:n:n], m: b}, nil
}

// Bytes is the buffer's memory.
func (b *Buffer) Bytes() []byte { return b.b }

// Close unmaps the buffer. Deregister every MR over it first.
func (b *Buffer) Close() error {
	if b == nil || b.m == nil {
		return nil
	}
	m := b.m
	b.b, b.m = nil, nil
	return unix.Munmap(m)
}

// checkFlushAccess refuses flush access bits the device does not advertise: Linux 6.1 does not know them
// (EINVAL), later kernels answer EOPNOTSUPP for a device without the capability; both are "not supported".
func (c *Context) checkFlushAccess(access Access) error {
	if access&accessFlush == 0 {
		return nil
	}
	caps, err := c.deviceCaps()
	if err != nil {
		return err
	}
	if access&AccessFlushGlobal != 0 && caps&DeviceCapFlushGlobal == 0 {
		return fmt.Errorf("access FLUSH_GLOBAL: the device does not advertise RDMA FLUSH (FLUSH_GLOBAL; rxe has it from Linux 6.2): %w", unix.EOPNOTSUPP)
	}
	if access&AccessFlushPersistent != 0 && caps&DeviceCapFlushPersistent == 0 {
		return fmt.Errorf("access FLUSH_PERSISTENT: the device does not advertise persistent RDMA FLUSH (FLUSH_PERSISTENT): %w", unix.EOPNOTSUPP)
	}
	return nil
}
