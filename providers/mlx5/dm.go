package mlx5

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// Device memory as libmlx5's ibv_alloc_dm has it (mlx5_alloc_dm: MEMIC): a request longer than the device's
// max_dm_size is EINVAL; DM_ALLOC carries the MEMIC type (an optional attribute) and asks for the memory's
// start offset and page index; the page is mapped read-write through the command fd (a failed mapping frees
// the memory: ENOMEM); copies are 4-byte words (mlx5_access_dm); an MR on it may have local and remote
// write, remote read and atomic, zero-based and the optional range rights, nothing else (EINVAL). Another
// context's DM is imported by its handle as mlx5_import_dm: libmlx5's DM query, the same mapping; forgetting
// it unmaps it (mlx5_unimport_dm). Not done as libmlx5 can: mlx5dv_alloc_dm's SW ICM types, and
// mlx5dv_dm_map_op_addr.

// dmem is MEMIC device memory (libmlx5's struct mlx5_dm).
type dmem struct {
	ctx    *mctx
	mapped []byte // the mapping, the length rounded up to whole pages
	mem    []byte // from the start offset within the page
	length uint64
	offset int64 // the mmap offset (pg_off)
}

// dmAccess are the MR rights libmlx5 accepts on device memory (MLX5_DM_ALLOWED_ACCESS).
const dmAccess = abi.IB_UVERBS_ACCESS_LOCAL_WRITE | abi.IB_UVERBS_ACCESS_REMOTE_WRITE | abi.IB_UVERBS_ACCESS_REMOTE_READ |
	abi.IB_UVERBS_ACCESS_REMOTE_ATOMIC | abi.IB_UVERBS_ACCESS_ZERO_BASED | abi.IB_UVERBS_ACCESS_OPTIONAL_RANGE

// AllocDM implements provider.DMAllocator (mlx5_alloc_dm).
func (c *mctx) AllocDM(p provider.DMParams, alloc provider.AllocDMCmd) (provider.DM, error) {
	if p.Length > p.MaxSize {
		return nil, fmt.Errorf("mlx5: allocate %d bytes of device memory: the device has at most %d: %w", p.Length, p.MaxSize, errInvalid)
	}
	var start uint64
	var page uint16
	err := alloc(func(cmd *rawcmd.Cmd) {
		cmd.Optional(cmd.ConstIn(abi.MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, abi.MLX5_IB_UAPI_DM_TYPE_MEMIC))
		cmd.PtrOut(abi.MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, unsafe.Pointer(&start), 8)
		cmd.PtrOut(abi.MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, unsafe.Pointer(&page), 2)
	})
	if err != nil {
		return nil, err
	}
	d, err := c.mapDMem(page, start, p.Length)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, unix.ENOMEM)
	}
	return d, nil
}

// mapDMem maps the memory of a DM whose page index, start offset and length the kernel reported (dm_mmap):
// the length rounded up to whole pages at the page's offset, the memory from the start's offset in the page.
func (c *mctx) mapDMem(page uint16, start, length uint64) (*dmem, error) {
	ps := c.dev.PageSize
	size := (int(length) + ps - 1) / ps * ps
	off := hw.DMMmapOffset(page, ps)
	m, err := c.sys.mapDM(c.dev.FD, off, size)
	if err != nil {
		return nil, fmt.Errorf("mlx5: map device memory page %d (offset %#x): %w", page, off, err)
	}
	return &dmem{ctx: c, mapped: m, mem: m[int(start)&(ps-1):], length: length, offset: off}, nil
}

// ImportDM implements provider.DMImporter (mlx5_import_dm): libmlx5's DM query (the start offset, page index
// and length of the memory the handle names) and the mapping AllocDM makes. A failed mapping is the mapping's
// error (libmlx5 returns mmap's errno).
func (c *mctx) ImportDM(handle uint32, query provider.QueryDMCmd) (provider.ImportedDM, error) {
	var start, length uint64
	var page uint16
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DM, abi.MLX5_IB_METHOD_DM_QUERY, c.dev.DriverID)
	cmd.Object(abi.MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE, handle)
	cmd.PtrOut(abi.MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, unsafe.Pointer(&start), 8)
	cmd.PtrOut(abi.MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX, unsafe.Pointer(&page), 2)
	cmd.PtrOut(abi.MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH, unsafe.Pointer(&length), 8)
	if err := query(cmd); err != nil {
		return provider.ImportedDM{}, err
	}
	d, err := c.mapDMem(page, start, length)
	if err != nil {
		return provider.ImportedDM{}, err
	}
	return provider.ImportedDM{DM: d, Length: length}, nil
}

// CopyTo implements provider.DM (mlx5_memcpy_to_dm).
func (d *dmem) CopyTo(offset uint64, src []byte) error {
	return hw.DMWordCopy(d.mem, d.length, offset, src, true)
}

// CopyFrom implements provider.DM (mlx5_memcpy_from_dm).
func (d *dmem) CopyFrom(dst []byte, offset uint64) error {
	return hw.DMWordCopy(d.mem, d.length, offset, dst, false)
}

// RegMRAccess implements provider.DM (mlx5_reg_dm_mr's check).
func (d *dmem) RegMRAccess(access uint32) error {
	if access&^dmAccess != 0 {
		return fmt.Errorf("mlx5: MR on device memory: access %#x beyond %#x: %w", access, uint32(dmAccess), errInvalid)
	}
	return nil
}

// Freed implements provider.DM (mlx5_free_dm after the kernel's free): the mapping goes.
func (d *dmem) Freed() {
	if d.mapped != nil {
		d.ctx.sys.unmap(d.mapped)
		d.mapped, d.mem = nil, nil
	}
}

var (
	_ provider.DMAllocator = (*mctx)(nil)
	_ provider.DMImporter  = (*mctx)(nil)
)
