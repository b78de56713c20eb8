package hw

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/rawcmd"
)

// UARObject is a dynamically allocated UAR page (MLX5_IB_OBJECT_UAR), what rdma-core's default context uses on a
// 6.1 kernel: one NC page for CQ arm doorbells and BlueFlame pages for QPs. Map it with
// mmap(MmapLength, PROT_WRITE, MAP_SHARED, cmd fd, MmapOffset) and pass PageID in CQ and QP create requests.
type UARObject struct {
	Handle     uint32
	MmapOffset uint64
	MmapLength uint32
	PageID     uint32
}

// UAR allocation types (MLX5_IB_UAPI_UAR_ALLOC_TYPE_*).
const (
	UARTypeBF = abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF
	UARTypeNC = abi.MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC
)

// BuildUARAlloc fills cmd with MLX5_IB_METHOD_UAR_OBJ_ALLOC of type typ, pointing the kernel's outputs at out
// (which must stay reachable and unmoved until the command returns). It returns the index of the new-handle
// attribute; after a successful Invoke, out.Handle = cmd.Handle(index).
func BuildUARAlloc(cmd *rawcmd.Cmd, typ uint32, out *UARObject) int {
	cmd.Reset(abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC, abi.RDMA_DRIVER_MLX5)
	h := cmd.NewObject(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE)
	cmd.ConstIn(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, uint64(typ))
	cmd.PtrOut(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, unsafe.Pointer(&out.MmapOffset), 8)
	cmd.PtrOut(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, unsafe.Pointer(&out.MmapLength), 4)
	cmd.PtrOut(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, unsafe.Pointer(&out.PageID), 4)
	return h
}

// BuildUARDestroy fills cmd with MLX5_IB_METHOD_UAR_OBJ_DESTROY for the UAR object handle.
func BuildUARDestroy(cmd *rawcmd.Cmd, handle uint32) {
	cmd.Reset(abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_DESTROY, abi.RDMA_DRIVER_MLX5)
	cmd.Object(abi.MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, handle)
}

// numBfregsPerUAR is how many dynamic bfregs each 4 KiB UAR of a BF page provides (MLX5_NUM_NON_FP_BFREGS_PER_UAR).
const numBfregsPerUAR = 2

// DynamicBfregs carves the send doorbell registers out of a mapped dynamic UAR page, as rdma-core's
// mlx5_insert_dyn_uuars does: for a BF page, uarsPerPage*2 registers at 4096*u + 0x800 + i*bfRegSize with a
// BlueFlame buffer of bfRegSize/2 (or none when bfRegSize is 0); for an NC page, 4 per UAR at stride 0x100 without
// BlueFlame. Registers of a dynamic page are dedicated to one QP each (no lock).
func DynamicBfregs(page mmio.Reg, uarsPerPage, bfRegSize int, nc bool) ([]*BFReg, error) {
	perUAR, stride, buf := numBfregsPerUAR, bfRegSize, bfRegSize/2
	if nc || bfRegSize == 0 {
		perUAR, stride, buf = 4, 0x100, 0
	}
	if uarsPerPage < 1 || page.Len() < uarsPerPage*AdapterPageSize {
		return nil, fmt.Errorf("mlx5: carve bfregs: %d-byte page for %d UARs: %w", page.Len(), uarsPerPage, errInvalid)
	}
	var regs []*BFReg
	for u := 0; u < uarsPerPage; u++ {
		for i := 0; i < perUAR; i++ {
			off := u*AdapterPageSize + BFOffset + i*stride
			n := max(2*buf, 8)
			r, err := NewBFReg(page.Sub(uintptr(off), uintptr(n)), buf, false)
			if err != nil {
				return nil, err
			}
			regs = append(regs, r)
		}
	}
	return regs, nil
}
