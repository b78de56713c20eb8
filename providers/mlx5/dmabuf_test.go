package mlx5

import (
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
)

// dma-buf MRs (dmabuf.go) against libmlx5 itself: the harness's dmdump mode answers REG_DMABUF_MR and dumps
// the command libibverbs sends for libmlx5's mlx5_reg_dmabuf_mr; the uverbs golden file the core's command is
// compared with (uverbs' TestDmabufMRCommandMatchesLibibverbs) must be that command, and goverbs' mlx5 must
// add what libmlx5 adds to it: nothing.
func TestLibmlx5DmabufMR(t *testing.T) {
	want := libmlx5Dump(t, "dmdump")
	checkGolden(t, want, "../../uverbs/testdata/libibverbs_dmabuf_mr.txt")
	for _, a := range strings.Split(want["dmabuf_mr.attrs"], ",") {
		if id, _, _ := strings.Cut(a, ":"); len(id) >= 4 { // driver attributes are 4096 and up
			t.Errorf("libmlx5 added driver attribute %s to REG_DMABUF_MR", a)
		}
	}
	// libibverbs reports the offset as the MR's address, the length as given; goverbs' MR.Addr is 0 instead
	// (uverbs' RegDmabufMR documents it).
	if want.num(t, "dmabuf_mr.addr") != 4096 || want.num(t, "dmabuf_mr.length") != 8192 {
		t.Errorf("libibverbs' MR: addr %d, length %d", want.num(t, "dmabuf_mr.addr"), want.num(t, "dmabuf_mr.length"))
	}
	g := newGlue(t, 512)
	p := provider.DmabufMRParams{Offset: 4096, Length: 8192, IOVA: 0x7f0000001000, FD: 77,
		Access: abi.IB_UVERBS_ACCESS_LOCAL_WRITE | abi.IB_UVERBS_ACCESS_REMOTE_READ}
	cmd := rawcmd.New(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_REG_DMABUF_MR, abi.RDMA_DRIVER_MLX5)
	calls := 0
	err := g.ctx.RegDmabufMR(p, func(driver func(*rawcmd.Cmd)) error {
		calls++
		if driver != nil {
			driver(cmd)
		}
		return nil
	})
	if err != nil || calls != 1 || cmd.Hdr.NumAttrs != 0 {
		t.Errorf("RegDmabufMR: %v, %d commands, %d driver attributes (%s)", err, calls, cmd.Hdr.NumAttrs, cmd.Describe())
	}
}
