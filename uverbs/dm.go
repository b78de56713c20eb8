package uverbs

import (
	"fmt"
	"sync/atomic"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// Device memory (ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to_dm, ibv_memcpy_from_dm, ibv_reg_dm_mr): memory on
// the device itself, which the host reaches by copying (DM.CopyTo, DM.CopyFrom) and the device through an MR
// registered on it (PD.RegDMMR, zero-based: its addresses are offsets into that MR).
//
// An optional provider operation, as in libibverbs: goverbs' mlx5 provider has it (MEMIC, as libmlx5's
// mlx5_alloc_dm: the memory mapped through the command fd and copied in 4-byte words); rxe and siw have none
// (their rdma-core providers have no alloc_dm op), and AllocDM answers an error matching ErrNotSupported and
// unix.EOPNOTSUPP there, as libibverbs does.
//
// Lifetime: a DM cannot be freed while an MR is registered on it (EBUSY, refused by goverbs before the kernel,
// which refuses it too). Another process sharing the command file (ImportContext) uses the DM by its handle
// (Context.ImportDM, ibv_import_dm); closing the imported DM only forgets it (ibv_unimport_dm).

// DMAttr is what Context.AllocDM allocates (struct ibv_alloc_dm_attr; comp_mask has no counterpart).
type DMAttr struct {
	Length   uint64 // bytes
	LogAlign uint32 // log2 of the alignment asked for (log_align_req)
}

// DM is device memory (struct ibv_dm).
type DM struct {
	ctx    *Context
	handle uint32
	length uint64
	prov   provider.DM
	mrs    atomic.Int32 // MRs registered on it
	// imported: made by Context.ImportDM; Close forgets it (the exporter frees it).
	imported bool
	life
}

// AllocDM allocates device memory (ibv_alloc_dm) through DM_ALLOC. The device's limit (DeviceAttr.MaxDMSize)
// is read with QueryDevice first, as libmlx5 reads it at context creation: mlx5 refuses a longer request with
// unix.EINVAL. A provider without device memory (rxe, siw) answers ErrNotSupported (unix.EOPNOTSUPP), as
// libibverbs does.
func (c *Context) AllocDM(attr DMAttr) (*DM, error) {
	op := func() string { return fmt.Sprintf("alloc DM of %d bytes", attr.Length) }
	a, ok := c.prov.(provider.DMAllocator)
	if !ok {
		return nil, wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v has no device memory: %w", c.dev.DriverID, unix.EOPNOTSUPP),
			"%s", op())
	}
	dev, err := c.QueryDevice()
	if err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	if err := c.addObject(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	var handle uint32
	created := false
	p, err := a.AllocDM(provider.DMParams{Length: attr.Length, LogAlign: attr.LogAlign, MaxSize: dev.MaxDMSize},
		func(driver func(cmd *rawcmd.Cmd)) error {
			cmd, h := allocDMCmd(c.newCmd(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_ALLOC), attr)
			if driver != nil {
				driver(cmd)
			}
			if err := cmd.Invoke(c.fd); err != nil {
				return err
			}
			handle, created = cmd.Handle(h), true
			return nil
		})
	if err != nil {
		if created {
			c.destroyObject(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_FREE, abi.UVERBS_ATTR_FREE_DM_HANDLE, handle)
		}
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "%s", op())
	}
	return &DM{ctx: c, handle: handle, length: attr.Length, prov: p}, nil
}

// ImportDM makes a DM of this context from the handle of device memory the exporting process allocated on
// the same command file (ibv_import_dm; the exporter reads it with DM.Handle; the context is usually one made
// by ImportContext, which goverbs' mlx5 provider cannot do yet: on mlx5 today only a DM of the context itself
// is reachable this way). The provider asks the kernel about the memory and maps it, as its allocation does:
// mlx5 (as libmlx5's mlx5_import_dm) with its DM query, which gives the memory's length (DM.Len), and copies
// then work as on the exporter's DM. Close forgets the DM without freeing it (ibv_unimport_dm); the exporter
// frees it. A provider without device memory (rxe, siw) answers ErrNotSupported (unix.EOPNOTSUPP) before any
// command, as libibverbs does.
func (c *Context) ImportDM(handle uint32) (*DM, error) {
	imp, ok := c.prov.(provider.DMImporter)
	if !ok {
		return nil, wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v imports no device memory: %w", c.dev.DriverID, unix.EOPNOTSUPP),
			"import DM %#x", handle)
	}
	if err := c.addObject(); err != nil {
		return nil, wrapf(c.dev.Name, err, "import DM %#x", handle)
	}
	d, err := imp.ImportDM(handle, func(cmd *rawcmd.Cmd) error { return cmd.Invoke(c.fd) })
	if err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, err, "import DM %#x", handle)
	}
	return &DM{ctx: c, handle: handle, length: d.Length, prov: d.DM, imported: true}, nil
}

// Imported reports whether the DM was made by Context.ImportDM.
func (dm *DM) Imported() bool { return dm.imported }

// Handle is the kernel's handle.
func (dm *DM) Handle() uint32 { return dm.handle }

// Len is the memory's length in bytes.
func (dm *DM) Len() uint64 { return dm.length }

// String names the DM.
func (dm *DM) String() string {
	return fmt.Sprintf("DM %#x of %d bytes on %s", dm.handle, dm.length, dm.ctx.dev.Name)
}

// CopyTo copies src into the device memory at offset (ibv_memcpy_to_dm). mlx5 (as libmlx5) copies 4-byte
// words: an offset or a length that is not a multiple of 4 is unix.EINVAL, a range past the end unix.EFAULT.
func (dm *DM) CopyTo(offset uint64, src []byte) error {
	if err := dm.enter(); err != nil {
		return wrapf(dm.ctx.dev.Name, err, "copy %d bytes to DM %#x at %d", len(src), dm.handle, offset)
	}
	err := dm.prov.CopyTo(offset, src)
	dm.exit()
	return wrapf(dm.ctx.dev.Name, err, "copy %d bytes to DM %#x at %d", len(src), dm.handle, offset)
}

// CopyFrom fills dst from the device memory at offset (ibv_memcpy_from_dm), with CopyTo's rules.
func (dm *DM) CopyFrom(dst []byte, offset uint64) error {
	if err := dm.enter(); err != nil {
		return wrapf(dm.ctx.dev.Name, err, "copy %d bytes from DM %#x at %d", len(dst), dm.handle, offset)
	}
	err := dm.prov.CopyFrom(dst, offset)
	dm.exit()
	return wrapf(dm.ctx.dev.Name, err, "copy %d bytes from DM %#x at %d", len(dst), dm.handle, offset)
}

// Close frees the device memory (ibv_free_dm) through DM_FREE; an imported one (Context.ImportDM) it only
// forgets, with no command (ibv_unimport_dm). While an MR is registered on it through this DM, Close fails
// with an error matching unix.EBUSY and the DM stays allocated (or imported).
func (dm *DM) Close() error {
	if dm == nil {
		return nil
	}
	return dm.life.close(func() error {
		c := dm.ctx
		verb := "free"
		if dm.imported {
			verb = "unimport"
		}
		if n := dm.mrs.Load(); n > 0 {
			return wrapf(c.dev.Name, fmt.Errorf("%d MRs are registered on it: %w", n, unix.EBUSY), "%s DM %#x", verb, dm.handle)
		}
		if dm.imported {
			dm.prov.Freed()
			c.dropObject()
			return nil
		}
		if err := c.destroyObject(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_FREE, abi.UVERBS_ATTR_FREE_DM_HANDLE, dm.handle); err != nil {
			return wrapf(c.dev.Name, err, "free DM %#x", dm.handle)
		}
		dm.prov.Freed()
		c.dropObject()
		return nil
	})
}

// RegDMMR registers length bytes of dm from offset as an MR (ibv_reg_dm_mr) through MR_DM_REG. The MR is
// zero-based: access must hold AccessZeroBased (unix.EINVAL otherwise, as libibverbs), and its addresses, in
// SGEs and remote accesses, are offsets into it (MR.Addr is 0). mlx5 (as libmlx5) refuses other rights than
// local and remote write, remote read and atomic, zero-based and the optional range with unix.EINVAL. The DM
// cannot be freed while the MR lives.
func (pd *PD) RegDMMR(dm *DM, offset uint64, length int, access Access) (*MR, error) {
	c := pd.ctx
	op := func() string {
		return fmt.Sprintf("reg DM MR of %d bytes at %d (access %#x)", length, offset, uint32(access))
	}
	if dm == nil || dm.ctx != c {
		return nil, wrapf(c.dev.Name, fmt.Errorf("the DM is not of this context: %w", unix.EINVAL), "%s", op())
	}
	if err := pd.checkOpen(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	if err := dm.enter(); err != nil {
		return nil, wrapf(c.dev.Name, fmt.Errorf("DM: %w", err), "%s", op())
	}
	defer dm.exit()
	if err := dm.prov.RegMRAccess(uint32(access)); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	if access&AccessZeroBased == 0 || length < 0 {
		return nil, wrapf(c.dev.Name, fmt.Errorf("a DM MR is zero-based (AccessZeroBased): %w", unix.EINVAL), "%s", op())
	}
	if err := c.addObject(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	lkey, rkey := new(uint32), new(uint32)
	cmd, h := regDMMRCmd(c.newCmd(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_DM_MR_REG), pd.handle, dm.handle, offset, length,
		access, lkey, rkey)
	if err := cmd.Invoke(c.fd); err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "%s", op())
	}
	dm.mrs.Add(1)
	return &MR{pd: pd, handle: cmd.Handle(h), lkey: *lkey, rkey: *rkey, length: length, access: access, dm: dm}, nil
}

// allocDMCmd fills DM_ALLOC's core attributes into cmd, in libibverbs' order (ibv_cmd_alloc_dm), and returns
// it with the index of the new handle's attribute.
func allocDMCmd(cmd *rawcmd.Cmd, attr DMAttr) (*rawcmd.Cmd, int) {
	h := cmd.NewObject(abi.UVERBS_ATTR_ALLOC_DM_HANDLE)
	cmd.U64In(abi.UVERBS_ATTR_ALLOC_DM_LENGTH, attr.Length)
	cmd.U32In(abi.UVERBS_ATTR_ALLOC_DM_ALIGNMENT, attr.LogAlign)
	return cmd, h
}

// regDMMRCmd fills MR_DM_REG's attributes into cmd, in libibverbs' order (ibv_cmd_reg_dm_mr), the keys
// written to lkey and rkey, and returns it with the index of the new handle's attribute.
func regDMMRCmd(cmd *rawcmd.Cmd, pdHandle, dmHandle uint32, offset uint64, length int, access Access, lkey, rkey *uint32) (*rawcmd.Cmd, int) {
	h := cmd.NewObject(abi.UVERBS_ATTR_REG_DM_MR_HANDLE)
	cmd.PtrOut(abi.UVERBS_ATTR_REG_DM_MR_RESP_LKEY, ptr(lkey), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_REG_DM_MR_RESP_RKEY, ptr(rkey), 4)
	cmd.Object(abi.UVERBS_ATTR_REG_DM_MR_PD_HANDLE, pdHandle)
	cmd.Object(abi.UVERBS_ATTR_REG_DM_MR_DM_HANDLE, dmHandle)
	cmd.U64In(abi.UVERBS_ATTR_REG_DM_MR_OFFSET, offset)
	cmd.U64In(abi.UVERBS_ATTR_REG_DM_MR_LENGTH, uint64(length))
	cmd.U32In(abi.UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, uint32(access))
	return cmd, h
}
