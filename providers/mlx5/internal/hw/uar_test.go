package hw

import (
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/rawcmd"
)

// TestBuildUARAlloc checks the command rdma-core's mlx5_alloc_dyn_uar sends: object 0x1008, method 0x1000,
// driver mlx5, a new-object handle, the type as a CONST_IN, and three outputs of 8, 4 and 4 bytes.
func TestBuildUARAlloc(t *testing.T) {
	out := new(UARObject)
	cmd := rawcmd.New(0, 0, 0)
	h := BuildUARAlloc(cmd, UARTypeNC, out)
	if cmd.Hdr.ObjectId != 0x1008 || cmd.Hdr.MethodId != 0x1000 || cmd.Hdr.DriverId != abi.RDMA_DRIVER_MLX5 ||
		cmd.NumAttrs() != 5 || h != 0 {
		t.Fatalf("header %+v, %d attrs, handle attr %d", cmd.Hdr, cmd.NumAttrs(), h)
	}
	want := []struct {
		id  uint16
		len uint16
		ptr unsafe.Pointer
	}{
		{abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, 0, nil},
		{abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, 8, nil},
		{abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, 8, unsafe.Pointer(&out.MmapOffset)},
		{abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, 4, unsafe.Pointer(&out.MmapLength)},
		{abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, 4, unsafe.Pointer(&out.PageID)},
	}
	for i, w := range want {
		a := cmd.Attrs[i]
		if a.AttrId != w.id || a.Len != w.len || a.Flags&abi.UVERBS_ATTR_F_MANDATORY == 0 {
			t.Errorf("attr %d = %+v, want id %#x len %d mandatory", i, a, w.id, w.len)
		}
		if w.ptr != nil && a.Data != uint64(uintptr(w.ptr)) {
			t.Errorf("attr %d points at %#x, want %p", i, a.Data, w.ptr)
		}
	}
	if cmd.Attrs[1].Data != UARTypeNC {
		t.Errorf("type = %d", cmd.Attrs[1].Data)
	}
	BuildUARDestroy(cmd, 42)
	if cmd.Hdr.MethodId != 0x1001 || cmd.NumAttrs() != 1 || cmd.Attrs[0].AttrId != 0x1000 || cmd.Attrs[0].Data != 42 {
		t.Errorf("destroy: %+v %+v", cmd.Hdr, cmd.Attrs[0])
	}
}

func TestDynamicBfregs(t *testing.T) {
	page := aligned(2 * 4096)
	r, _ := mmio.RegFromBytes(page)
	regs, err := DynamicBfregs(r, 2, 512, false)
	if err != nil || len(regs) != 4 {
		t.Fatalf("BF page: %d regs, %v", len(regs), err)
	}
	for i, b := range regs {
		if !b.BlueFlame() || b.shared {
			t.Errorf("reg %d: BlueFlame %v shared %v", i, b.BlueFlame(), b.shared)
		}
	}
	// Ring register 3 (UAR 1, index 1): the doorbell lands at 4096 + 0x800 + 512.
	w1, w2 := aligned(64), aligned(64)
	w2[0] = 1
	regs[3].ring(unsafe.Pointer(&w1[0]), 64, 0, 0)
	regs[3].ring(unsafe.Pointer(&w2[0]), 64, 0, 0)
	if page[4096+0x800+512+256] != 1 {
		t.Errorf("second ring did not use the other half")
	}
	nc, err := DynamicBfregs(r, 1, 512, true)
	if err != nil || len(nc) != 4 || nc[1].BlueFlame() {
		t.Fatalf("NC page: %d regs, %v", len(nc), err)
	}
	if _, err := DynamicBfregs(r, 3, 512, false); err == nil {
		t.Error("page too small accepted")
	}
}
