package uverbs

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// RegDmabufMR registers length bytes from offset of the dma-buf fd (memory another driver exported: a GPU's,
// a dma-buf heap's) as an MR whose I/O virtual address is iova (ibv_reg_dmabuf_mr), through the kernel's
// REG_DMABUF_MR (Linux 5.12+). SGEs and a peer's remote addresses for it are in iova's space; Addr is 0 (the
// memory need not be mapped in this process; libibverbs' mr->addr holds offset). The caller
// keeps fd open while it registers; the kernel holds its own reference to the dma-buf for the MR's lifetime.
// Access follows RegMR's rules (Validate; flush rights need the device's capability).
//
// An optional provider operation, as in libibverbs: goverbs' mlx5 provider has it (as libmlx5's
// mlx5_reg_dmabuf_mr: the core command, no driver data); rxe and siw have none (their rdma-core providers have
// no reg_dmabuf_mr op), and RegDmabufMR answers an error matching ErrNotSupported and unix.EOPNOTSUPP there,
// before any command, as libibverbs does.
func (pd *PD) RegDmabufMR(offset uint64, length int, iova uint64, fd int, access Access) (*MR, error) {
	c := pd.ctx
	op := func() string {
		return fmt.Sprintf("reg dma-buf MR of %d bytes at %d of fd %d (access %#x)", length, offset, fd, uint32(access))
	}
	if err := pd.checkOpen(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	r, ok := c.prov.(provider.DmabufMRRegistrar)
	if !ok {
		return nil, wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v registers no dma-buf: %w", c.dev.DriverID, unix.EOPNOTSUPP),
			"%s", op())
	}
	if err := access.Validate(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	if err := c.checkFlushAccess(access); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	if length <= 0 || fd < 0 {
		return nil, wrapf(c.dev.Name, fmt.Errorf("length %d, fd %d: %w", length, fd, unix.EINVAL), "%s", op())
	}
	if err := c.addObject(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	var lkey, rkey, handle uint32
	p := provider.DmabufMRParams{Offset: offset, Length: uint64(length), IOVA: iova, FD: fd, Access: uint32(access)}
	err := r.RegDmabufMR(p, func(driver func(cmd *rawcmd.Cmd)) error {
		cmd, h := regDmabufMRCmd(c.newCmd(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_REG_DMABUF_MR), pd.handle, p, &lkey, &rkey)
		if driver != nil {
			driver(cmd)
		}
		if err := cmd.Invoke(c.fd); err != nil {
			return err
		}
		handle = cmd.Handle(h)
		return nil
	})
	if err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "%s", op())
	}
	return &MR{pd: pd, handle: handle, lkey: lkey, rkey: rkey, iova: iova, length: length, access: access}, nil
}

// regDmabufMRCmd fills REG_DMABUF_MR's attributes into cmd, in libibverbs' order (ibv_cmd_reg_dmabuf_mr), the
// keys written to lkey and rkey, and returns it with the index of the new handle's attribute.
func regDmabufMRCmd(cmd *rawcmd.Cmd, pdHandle uint32, p provider.DmabufMRParams, lkey, rkey *uint32) (*rawcmd.Cmd, int) {
	h := cmd.NewObject(abi.UVERBS_ATTR_REG_DMABUF_MR_HANDLE)
	cmd.PtrOut(abi.UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, ptr(lkey), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, ptr(rkey), 4)
	cmd.Object(abi.UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, pdHandle)
	cmd.U64In(abi.UVERBS_ATTR_REG_DMABUF_MR_OFFSET, p.Offset)
	cmd.U64In(abi.UVERBS_ATTR_REG_DMABUF_MR_LENGTH, p.Length)
	cmd.U64In(abi.UVERBS_ATTR_REG_DMABUF_MR_IOVA, p.IOVA)
	cmd.U32In(abi.UVERBS_ATTR_REG_DMABUF_MR_FD, uint32(p.FD))
	cmd.U32In(abi.UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, p.Access)
	return cmd, h
}
