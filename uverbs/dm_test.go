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

// The core's side of device memory (dm.go), with fake providers: libibverbs' refusal for a provider without
// it, the books (an MR on a DM holds it), what reaches the provider, and the ioctls' attributes against
// libibverbs'. mlx5's side is tested against libmlx5 in providers/mlx5 (TestLibmlx5DM); rxe's refusal against
// libibverbs' on the lab device in test/conformance (TestRefusalsMatchLibibverbs).

// fakeDM is a provider DM that records the copies and refuses what err says.
type fakeDM struct {
	copies int
	err    error
	access uint32
}

func (d *fakeDM) CopyTo(offset uint64, src []byte) error   { d.copies++; return d.err }
func (d *fakeDM) CopyFrom(dst []byte, offset uint64) error { d.copies++; return d.err }
func (d *fakeDM) RegMRAccess(access uint32) error {
	if access&^d.access != 0 {
		return unix.EINVAL
	}
	return nil
}
func (d *fakeDM) Freed() {}

// dmProv is a context with device memory.
type dmProv struct{ provider.Context }

func (dmProv) AllocDM(p provider.DMParams, alloc provider.AllocDMCmd) (provider.DM, error) {
	return &fakeDM{}, alloc(nil)
}

// A provider without device memory: ErrNotSupported (EOPNOTSUPP) in an *Error naming the device, before any
// command (the fake context's commands would fail with EBADF); nothing is counted.
func TestDMNotSupported(t *testing.T) {
	c := fakeContext(noDomainProv{}, DriverRXE)
	c.fd = -1
	dm, err := c.AllocDM(DMAttr{Length: 4096})
	var e *Error
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.As(err, &e) || e.Device != "fake0" ||
		dm != nil || c.objects != 0 {
		t.Errorf("AllocDM: %v, %v; %d objects", dm, err, c.objects)
	}
	// With the op, the device's limit is asked for first: the fake context's QUERY_DEVICE fails.
	c = fakeContext(dmProv{}, DriverMLX5)
	c.fd = -1
	if _, err := c.AllocDM(DMAttr{Length: 4096}); !errors.Is(err, unix.EBADF) || c.objects != 0 {
		t.Errorf("AllocDM with the query failing: %v; %d objects", err, c.objects)
	}
}

// Copies reach the provider, their refusals wrapped; an MR on the DM needs AccessZeroBased and the provider's
// consent, holds the DM (its Close is EBUSY), and a failed registration counts nothing; after Close every verb
// is ErrClosed.
func TestDMBooks(t *testing.T) {
	c := fakeContext(dmProv{}, DriverMLX5)
	c.fd = -1
	p := &fakeDM{access: uint32(AccessZeroBased | AccessLocalWrite)}
	dm := &DM{ctx: c, handle: 65, length: 4096, prov: p}
	pd := &PD{ctx: c, handle: 1}
	buf := make([]byte, 8)
	if err := dm.CopyTo(0, buf); err != nil || dm.CopyFrom(buf, 0) != nil || p.copies != 2 {
		t.Errorf("copies: %v, provider saw %d", err, p.copies)
	}
	p.err = unix.EFAULT
	if err := dm.CopyTo(4096, buf); !errors.Is(err, unix.EFAULT) || !strings.Contains(err.Error(), "copy 8 bytes to DM 0x41 at 4096 on fake0") {
		t.Errorf("refused copy: %v", err)
	}
	for name, tc := range map[string]struct {
		access Access
		want   error
	}{
		"not zero-based":      {AccessLocalWrite, unix.EINVAL},
		"refused by provider": {AccessZeroBased | AccessRemoteRead, unix.EINVAL},
		"command":             {AccessZeroBased | AccessLocalWrite, unix.EBADF},
	} {
		if mr, err := pd.RegDMMR(dm, 0, 64, tc.access); !errors.Is(err, tc.want) || mr != nil {
			t.Errorf("%s: %v, %v", name, mr, err)
		}
	}
	if _, err := pd.RegDMMR(&DM{ctx: fakeContext(dmProv{}, DriverMLX5)}, 0, 64, AccessZeroBased); !errors.Is(err, unix.EINVAL) {
		t.Errorf("DM of another context: %v", err)
	}
	if c.objects != 0 || dm.mrs.Load() != 0 {
		t.Errorf("%d objects, %d MRs on the DM after failed registrations", c.objects, dm.mrs.Load())
	}
	// An MR on it: the DM refuses Close until the MR is gone (here its deregistration fails: EBADF).
	mr := &MR{pd: pd, handle: 9, dm: dm}
	dm.mrs.Add(1)
	if err := dm.Close(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("Close under an MR: %v", err)
	}
	if err := mr.Close(); !errors.Is(err, unix.EBADF) || dm.mrs.Load() != 1 {
		t.Errorf("failed dereg: %v, DM held by %d MRs", err, dm.mrs.Load())
	}
	dm.mrs.Add(-1)
	if err := dm.Close(); !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "free DM 0x41") {
		t.Errorf("Close with DM_FREE failing: %v", err)
	}
	dm.life.close(func() error { return nil })
	if err := dm.CopyTo(0, buf); !errors.Is(err, ErrClosed) {
		t.Errorf("CopyTo after Close: %v", err)
	}
	if _, err := pd.RegDMMR(dm, 0, 64, AccessZeroBased); !errors.Is(err, ErrClosed) {
		t.Errorf("RegDMMR after Close: %v", err)
	}
}

// DM_ALLOC's core attributes and MR_DM_REG's are libibverbs' (testdata/libibverbs_dm.txt, which
// providers/mlx5's TestLibmlx5DM keeps in step with the libmlx5 harness), in its order.
func TestDMCommandsMatchLibibverbs(t *testing.T) {
	golden := goldenLines(t, "testdata/libibverbs_dm.txt")
	cmd, h := allocDMCmd(rawcmd.New(abi.UVERBS_OBJECT_DM, abi.UVERBS_METHOD_DM_ALLOC, 1), DMAttr{Length: 5000, LogAlign: 3})
	core := cmd.Describe(abi.UVERBS_ATTR_ALLOC_DM_HANDLE)
	drv, ok := strings.CutPrefix(golden["dm_alloc.attrs"], core+",")
	if !ok || h != 0 || !strings.HasPrefix(drv, "4") {
		t.Errorf("DM_ALLOC %s; libibverbs %s", core, golden["dm_alloc.attrs"])
	}
	var lkey, rkey uint32
	cmd, _ = regDMMRCmd(rawcmd.New(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_DM_MR_REG, 1), 1, 65, 16, 256,
		AccessZeroBased|AccessLocalWrite|AccessRemoteRead, &lkey, &rkey)
	if got := cmd.Describe(abi.UVERBS_ATTR_REG_DM_MR_HANDLE, abi.UVERBS_ATTR_REG_DM_MR_RESP_LKEY,
		abi.UVERBS_ATTR_REG_DM_MR_RESP_RKEY); got != golden["dm_mr.attrs"] {
		t.Errorf("MR_DM_REG %s; libibverbs %s", got, golden["dm_mr.attrs"])
	}
}

// dmImportProv imports device memory: handle 0 it queries through the core's callback (built as mlx5's
// query), any other it imports as dm.
type dmImportProv struct {
	provider.Context
	dm *freedDM
}

func (p dmImportProv) ImportDM(handle uint32, query provider.QueryDMCmd) (provider.ImportedDM, error) {
	if handle == 0 {
		return provider.ImportedDM{}, query(rawcmd.New(abi.UVERBS_OBJECT_DM, abi.MLX5_IB_METHOD_DM_QUERY, 1))
	}
	return provider.ImportedDM{DM: p.dm, Length: 9000}, nil
}

// freedDM counts Freed.
type freedDM struct {
	fakeDM
	freed int
}

func (d *freedDM) Freed() { d.freed++ }

// A provider that imports no device memory (rxe, siw): ErrNotSupported (EOPNOTSUPP) in an *Error naming the
// device, before any command; nothing is counted.
func TestImportDMNotSupported(t *testing.T) {
	c := fakeContext(dmProv{}, DriverRXE)
	c.fd = -1
	dm, err := c.ImportDM(65)
	var e *Error
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.As(err, &e) || e.Device != "fake0" ||
		dm != nil || c.objects != 0 || !strings.Contains(err.Error(), "import DM 0x41") {
		t.Errorf("ImportDM: %v, %v; %d objects", dm, err, c.objects)
	}
}

// An imported DM: the provider's query goes to the kernel through the core (here it fails: EBADF, nothing
// counted); the DM has the provider's length and is counted; an MR on it holds it (EBUSY); Close forgets it
// without a command (the fake context's would fail) and lets the provider unmap it; then ErrClosed.
func TestImportDMBooks(t *testing.T) {
	p := &freedDM{}
	c := fakeContext(dmImportProv{dm: p}, DriverMLX5)
	c.fd = -1
	if dm, err := c.ImportDM(0); !errors.Is(err, unix.EBADF) || dm != nil || c.objects != 0 {
		t.Errorf("ImportDM with the query failing: %v, %v; %d objects", dm, err, c.objects)
	}
	dm, err := c.ImportDM(65)
	if err != nil || !dm.Imported() || dm.Len() != 9000 || dm.Handle() != 65 || c.objects != 1 {
		t.Fatalf("ImportDM: %v, %v; %d objects", dm, err, c.objects)
	}
	dm.mrs.Add(1)
	if err := dm.Close(); !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "unimport DM 0x41") || p.freed != 0 {
		t.Errorf("Close under an MR: %v; freed %d", err, p.freed)
	}
	dm.mrs.Add(-1)
	if err := dm.Close(); err != nil || p.freed != 1 || c.objects != 0 {
		t.Errorf("Close (unimport): %v; freed %d, %d objects", err, p.freed, c.objects)
	}
	if err := dm.CopyTo(0, make([]byte, 4)); !errors.Is(err, ErrClosed) {
		t.Errorf("CopyTo after Close: %v", err)
	}
	if err := dm.Close(); err != nil || p.freed != 1 {
		t.Errorf("second Close: %v; freed %d", err, p.freed)
	}
}
