package mlx5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// Device memory (dm.go) against libmlx5 itself: the harness's dmdump mode runs Debian's libibverbs and
// libmlx5 against its fake kernel, which answers the extended QUERY_DEVICE (max_dm_size) and the DM ioctls,
// and dumps the attributes libmlx5 adds to DM_ALLOC, the mapping it asks for and what its copies write; the
// same calls here must add the same attributes, map the same page and write the same bytes.

// The harness's fake kernel's answers (csrc/harness.c, DM_*).
const (
	dmMaxSize     = 1 << 17
	dmStartOffset = 0x12340
	dmPageIndex   = 0x0105
)

// mapDM is the glue's device-memory mapping: anonymous memory standing for the device's.
func (s *emuSys) mapDM(fd int, offset int64, length int) ([]byte, error) { return s.anon(length) }

// allocDM allocates through the driver, the fake DM_ALLOC answering as the harness's kernel does; drv records
// the driver attributes it was given.
func (g *glue) allocDM(p provider.DMParams, drv *string) (*dmem, error) {
	d, err := g.ctx.AllocDM(p, func(driver func(*rawcmd.Cmd)) error {
		cmd := rawcmd.New(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_ALLOC, abi.RDMA_DRIVER_MLX5)
		driver(cmd)
		*drv = cmd.Describe(abi.MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, abi.MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX)
		answer(cmd, map[uint16]uint64{abi.MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET: dmStartOffset,
			abi.MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX: dmPageIndex})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d.(*dmem), nil
}

// answer writes the outputs of cmd as the harness's fake kernel does: each attribute of outs (an output
// pointer of 2 or 8 bytes) gets its value.
func answer(cmd *rawcmd.Cmd, outs map[uint16]uint64) {
	for i := range int(cmd.Hdr.NumAttrs) {
		a := &cmd.Attrs[i]
		if v, ok := outs[a.AttrId]; ok && a.Len == 2 {
			binary.NativeEndian.PutUint16(hostBytes(a.Data, 2), uint16(v))
		} else if ok {
			binary.NativeEndian.PutUint64(hostBytes(a.Data, 8), v)
		}
	}
}

func TestLibmlx5DM(t *testing.T) {
	want := libmlx5Dump(t, "dmdump")
	checkGolden(t, want, "../../uverbs/testdata/libibverbs_dm.txt")
	g := newGlue(t, 512)
	var drv string
	d, err := g.allocDM(provider.DMParams{Length: 5000, LogAlign: 3, MaxSize: dmMaxSize}, &drv)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Freed()
	if !strings.HasSuffix(want["dm_alloc.attrs"], ","+drv) {
		t.Errorf("DM_ALLOC driver attributes %s; libmlx5's command %s", drv, want["dm_alloc.attrs"])
	}
	if d.offset != int64(want.num(t, "dm.mmap_off")) || len(d.mapped) != int(want.num(t, "dm.mmap_len")) {
		t.Errorf("mapped %d bytes at offset %#x; libmlx5 %d at %#x", len(d.mapped), d.offset, want.num(t, "dm.mmap_len"),
			want.num(t, "dm.mmap_off"))
	}

	// The copies: the same bytes at the same place; the refusals with libmlx5's errnos.
	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(i*3 + 1)
	}
	if err := d.CopyTo(8, src); err != nil || want.num(t, "to.ret") != 0 {
		t.Fatalf("CopyTo: %v; libmlx5 %d", err, want.num(t, "to.ret"))
	}
	if got := d.mapped[dmStartOffset&4095 : dmStartOffset&4095+80]; !bytes.Equal(got, want.hex(t, "to.page")) {
		t.Errorf("device memory\n%x\nlibmlx5\n%x", got, want.hex(t, "to.page"))
	}
	dst := make([]byte, 64)
	if err := d.CopyFrom(dst, 8); err != nil || !bytes.Equal(dst, want.hex(t, "from.data")) {
		t.Errorf("CopyFrom: %v, %x; libmlx5 %x", err, dst, want.hex(t, "from.data"))
	}
	for name, err := range map[string]error{
		"to_unaligned_off.ret": d.CopyTo(2, src[:4]),
		"to_unaligned_len.ret": d.CopyTo(4, src[:6]),
		"to_past_end.ret":      d.CopyTo(4996, src[:8]),
		"from_past_end.ret":    d.CopyFrom(dst[:12], 4992),
	} {
		if !errors.Is(err, unix.Errno(want.num(t, name))) {
			t.Errorf("%s: %v; libmlx5 %v", name, err, unix.Errno(want.num(t, name)))
		}
	}

	// The MR's rights.
	if err := d.RegMRAccess(abi.IB_UVERBS_ACCESS_ZERO_BASED | abi.IB_UVERBS_ACCESS_LOCAL_WRITE | abi.IB_UVERBS_ACCESS_REMOTE_READ); err != nil {
		t.Errorf("MR rights libmlx5 accepts: %v", err)
	}
	err = d.RegMRAccess(abi.IB_UVERBS_ACCESS_ZERO_BASED | abi.IB_UVERBS_ACCESS_MW_BIND)
	if !errors.Is(err, unix.Errno(want.num(t, "dm_mr_bind.errno"))) {
		t.Errorf("MW_BIND on a DM MR: %v; libmlx5 %v", err, unix.Errno(want.num(t, "dm_mr_bind.errno")))
	}

	// Past the device's limit: EINVAL without a command.
	_, err = g.ctx.AllocDM(provider.DMParams{Length: dmMaxSize + 1, MaxSize: dmMaxSize}, func(func(*rawcmd.Cmd)) error {
		t.Error("DM_ALLOC issued past max_dm_size")
		return nil
	})
	if !errors.Is(err, unix.Errno(want.num(t, "dm_big.errno"))) || want.num(t, "dm_big.cmds") != 0 {
		t.Errorf("past max_dm_size: %v; libmlx5 %v", err, unix.Errno(want.num(t, "dm_big.errno")))
	}
}

// A failed DM_ALLOC maps nothing; Freed unmaps once.
func TestDMFailedAlloc(t *testing.T) {
	g := newGlue(t, 512)
	_, err := g.ctx.AllocDM(provider.DMParams{Length: 64, MaxSize: dmMaxSize}, func(func(*rawcmd.Cmd)) error { return unix.ENOMEM })
	if !errors.Is(err, unix.ENOMEM) {
		t.Errorf("failed DM_ALLOC: %v", err)
	}
	var drv string
	d, err := g.allocDM(provider.DMParams{Length: 64, MaxSize: dmMaxSize}, &drv)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.mapped) != 4096 || len(d.mem) != 4096-dmStartOffset&4095 {
		t.Errorf("mapped %d bytes, memory from %d", len(d.mapped), len(d.mapped)-len(d.mem))
	}
	d.Freed()
	d.Freed()
	if d.mapped != nil {
		t.Error("Freed kept the mapping")
	}
}

// The harness's fake kernel's answers to libmlx5's DM query (csrc/harness.c, IMPORT_DM_*): the start offset
// is dmStartOffset's.
const (
	importDMPageIndex = 0x0107
	importDMLength    = 9000
)

// Importing device memory (ImportDM) against libmlx5's mlx5_import_dm in the harness's dmdump mode: the same
// query (object, method, attributes), the same page mapped, a copy landing on the same bytes, the same refusal
// past the end; unimporting issues no command (the harness counts none) and unmaps.
func TestLibmlx5ImportDM(t *testing.T) {
	want := libmlx5Dump(t, "dmdump")
	g := newGlue(t, 512)
	var got, object, method string
	imp, err := g.ctx.ImportDM(uint32(want.num(t, "dm_import.handle")), func(cmd *rawcmd.Cmd) error {
		got = cmd.Describe(abi.MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, abi.MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX,
			abi.MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH)
		object, method = fmt.Sprint(cmd.Hdr.ObjectId), fmt.Sprint(cmd.Hdr.MethodId)
		answer(cmd, map[uint16]uint64{abi.MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET: dmStartOffset,
			abi.MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX: importDMPageIndex, abi.MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH: importDMLength})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != want["dm_import.attrs"] || object != want["dm_import.object"] || method != want["dm_import.method"] ||
		want.num(t, "dm_import.cmds") != 1 {
		t.Errorf("DM query %s/%s %s; libmlx5's (%d commands) %s/%s %s", object, method, got, want.num(t, "dm_import.cmds"),
			want["dm_import.object"], want["dm_import.method"], want["dm_import.attrs"])
	}
	d := imp.DM.(*dmem)
	if imp.Length != importDMLength || d.offset != int64(want.num(t, "dm_import.mmap_off")) ||
		len(d.mapped) != int(want.num(t, "dm_import.mmap_len")) {
		t.Errorf("imported %d bytes, mapped %d at offset %#x; libmlx5 mapped %d at %#x", imp.Length, len(d.mapped), d.offset,
			want.num(t, "dm_import.mmap_len"), want.num(t, "dm_import.mmap_off"))
	}
	src := make([]byte, 16)
	for i := range src {
		src[i] = byte(i*3 + 1)
	}
	if err := d.CopyTo(importDMLength-16, src); err != nil || want.num(t, "import_to.ret") != 0 {
		t.Errorf("CopyTo the imported DM: %v; libmlx5 %d", err, want.num(t, "import_to.ret"))
	}
	at := dmStartOffset&4095 + importDMLength - 16
	if !bytes.Equal(d.mapped[at:at+16], want.hex(t, "import_to.page")) {
		t.Errorf("device memory %x; libmlx5 %x", d.mapped[at:at+16], want.hex(t, "import_to.page"))
	}
	if err := d.CopyTo(importDMLength-8, src); !errors.Is(err, unix.Errno(want.num(t, "import_past_end.ret"))) {
		t.Errorf("past the end: %v; libmlx5 %v", err, unix.Errno(want.num(t, "import_past_end.ret")))
	}
	if want.num(t, "dm_unimport.cmds") != 0 {
		t.Errorf("libmlx5's unimport issued %d commands", want.num(t, "dm_unimport.cmds"))
	}
	d.Freed()
	if d.mapped != nil {
		t.Error("unimport kept the mapping")
	}
	// A failed query maps nothing and is the kernel's error.
	if _, err := g.ctx.ImportDM(66, func(*rawcmd.Cmd) error { return unix.EINVAL }); !errors.Is(err, unix.EINVAL) {
		t.Errorf("failed query: %v", err)
	}
}
