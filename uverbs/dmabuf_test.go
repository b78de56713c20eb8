package uverbs

import (
	"errors"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// The core's side of dma-buf MRs (dmabuf.go), with fake providers: libibverbs' refusal for a provider without
// the op, the checks before the command, the books, and the command against libibverbs'. mlx5's side is
// tested against libmlx5 in providers/mlx5 (TestLibmlx5DmabufMR); rxe's refusal against libibverbs' on the lab
// device in test/conformance (TestRefusalsMatchLibibverbs).

// dmabufProv registers dma-bufs, adding the driver attribute drv says (none where nil).
type dmabufProv struct {
	provider.Context
	drv  func(cmd *rawcmd.Cmd)
	seen *provider.DmabufMRParams
}

func (p dmabufProv) RegDmabufMR(q provider.DmabufMRParams, reg provider.RegDmabufMRCmd) error {
	*p.seen = q
	return reg(p.drv)
}

// A provider without the op: ErrNotSupported (EOPNOTSUPP) in an *Error naming the device, before any command
// (the fake context's commands would fail with EBADF); nothing is counted. A closed PD is ErrClosed first.
func TestDmabufMRNotSupported(t *testing.T) {
	c := fakeContext(noDomainProv{}, DriverRXE)
	c.fd = -1
	pd := &PD{ctx: c, handle: 1}
	mr, err := pd.RegDmabufMR(0, 4096, 0, 3, AccessLocalWrite)
	var e *Error
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.As(err, &e) || e.Device != "fake0" ||
		mr != nil || c.objects != 0 {
		t.Errorf("RegDmabufMR: %v, %v; %d objects", mr, err, c.objects)
	}
	pd.life.close(func() error { return nil })
	if _, err := pd.RegDmabufMR(0, 4096, 0, 3, AccessLocalWrite); !errors.Is(err, ErrClosed) {
		t.Errorf("RegDmabufMR on a closed PD: %v", err)
	}
}

// Bad rights, a length or fd no kernel takes: EINVAL before the provider; a command the kernel refuses (here
// EBADF: the fake context has no fd) counts nothing; what reaches the provider is the request as given.
func TestDmabufMRBooks(t *testing.T) {
	var seen provider.DmabufMRParams
	c := fakeContext(dmabufProv{seen: &seen}, DriverMLX5)
	c.fd = -1
	pd := &PD{ctx: c, handle: 1}
	for name, tc := range map[string]struct {
		length int
		fd     int
		access Access
	}{
		"remote write without local": {4096, 3, AccessRemoteWrite},
		"unknown rights":             {4096, 3, AccessLocalWrite | 1<<12},
		"empty":                      {0, 3, AccessLocalWrite},
		"no fd":                      {4096, -1, AccessLocalWrite},
	} {
		if mr, err := pd.RegDmabufMR(0, tc.length, 0, tc.fd, tc.access); !errors.Is(err, unix.EINVAL) || mr != nil {
			t.Errorf("%s: %v, %v", name, mr, err)
		}
	}
	if seen != (provider.DmabufMRParams{}) {
		t.Errorf("the provider saw a refused request: %+v", seen)
	}
	mr, err := pd.RegDmabufMR(4096, 8192, 0x7f0000001000, 77, AccessLocalWrite|AccessRemoteRead)
	if !errors.Is(err, unix.EBADF) || mr != nil || !strings.Contains(err.Error(), "reg dma-buf MR of 8192 bytes at 4096 of fd 77") {
		t.Errorf("RegDmabufMR with the command failing: %v, %v", mr, err)
	}
	want := provider.DmabufMRParams{Offset: 4096, Length: 8192, IOVA: 0x7f0000001000, FD: 77, Access: uint32(AccessLocalWrite | AccessRemoteRead)}
	if seen != want || c.objects != 0 {
		t.Errorf("the provider saw %+v, want %+v; %d objects", seen, want, c.objects)
	}
}

// REG_DMABUF_MR's attributes are libibverbs' (testdata/libibverbs_dmabuf_mr.txt, which providers/mlx5's
// TestLibmlx5DmabufMR keeps in step with the libmlx5 harness), in its order.
func TestDmabufMRCommandMatchesLibibverbs(t *testing.T) {
	golden := goldenLines(t, "testdata/libibverbs_dmabuf_mr.txt")
	var lkey, rkey uint32
	cmd, h := regDmabufMRCmd(rawcmd.New(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_REG_DMABUF_MR, 1), 1,
		provider.DmabufMRParams{Offset: 4096, Length: 8192, IOVA: 0x7f0000001000, FD: 77, Access: uint32(AccessLocalWrite | AccessRemoteRead)},
		&lkey, &rkey)
	got := cmd.Describe(abi.UVERBS_ATTR_REG_DMABUF_MR_HANDLE, abi.UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, abi.UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY)
	if got != golden["dmabuf_mr.attrs"] || h != 0 || golden["dmabuf_mr.object"] != "7" || golden["dmabuf_mr.method"] != "4" ||
		abi.UVERBS_OBJECT_MR != 7 || abi.UVERBS_METHOD_REG_DMABUF_MR != 4 {
		t.Errorf("REG_DMABUF_MR %s; libibverbs %s", got, golden["dmabuf_mr.attrs"])
	}
}
