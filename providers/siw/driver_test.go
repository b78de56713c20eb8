package siw

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

func TestRegistered(t *testing.T) {
	d, ok := provider.Lookup(abi.RDMA_DRIVER_SIW)
	if !ok {
		t.Fatal("siw provider not registered for RDMA_DRIVER_SIW")
	}
	if d.Name() != "siw" || d.DriverID() != 18 {
		t.Errorf("registered %q for driver %d", d.Name(), d.DriverID())
	}
	if lo, hi := d.ABI(); lo != 1 || hi != 1 {
		t.Errorf("ABI range %d..%d, want 1..1 (SIW_ABI_VERSION)", lo, hi)
	}
}

func TestContextAndPD(t *testing.T) {
	k := newFakeKernel(t)
	dev := &provider.Device{Name: "siw0", FD: k.fd, DriverID: abi.RDMA_DRIVER_SIW, ABI: 1}
	// GET_CONTEXT: no request, an 8-byte struct siw_uresp_alloc_ctx response.
	ctx, err := driver{}.AllocContext(dev, func(in, out []byte) error {
		if len(in) != 0 || len(out) != abi.SizeofSiwUrespAllocCtx {
			t.Errorf("GET_CONTEXT driver data: in %d out %d bytes, want 0 and %d", len(in), len(out), abi.SizeofSiwUrespAllocCtx)
		}
		out[0] = 7
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := ctx.(*context); c.devID != 7 || c.fd != k.fd {
		t.Errorf("context %+v, want dev_id 7 on fd %d", c, k.fd)
	}
	none := func(in, out []byte) error {
		if len(in) != 0 || len(out) != 0 {
			t.Errorf("unexpected driver data: in %d out %d bytes", len(in), len(out))
		}
		return nil
	}
	pd, err := ctx.AllocPD(none)
	if err != nil || pd.PDN() != 0 {
		t.Fatalf("AllocPD = %v, %v", pd, err)
	}
	if _, err := ctx.AllocPD(func([]byte, []byte) error { return unix.EMFILE }); err != unix.EMFILE {
		t.Fatalf("AllocPD exec error = %v", err)
	}
	if _, err := (driver{}).AllocContext(dev, func(in, out []byte) error { return unix.EMFILE }); err != unix.EMFILE {
		t.Fatalf("AllocContext exec error = %v", err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	ictx, err := driver{}.ImportContext(dev, none)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ictx.(provider.PDImporter).ImportPD(3); err != nil {
		t.Fatal(err)
	}
	if _, err := (driver{}).ImportContext(dev, func([]byte, []byte) error { return unix.EOPNOTSUPP }); err != unix.EOPNOTSUPP {
		t.Fatalf("ImportContext on a kernel without query_ucontext = %v", err)
	}
}

// What the provider refuses without asking the kernel: address handles (iWARP has none) and CQ resizing.
func TestRefusedVerbs(t *testing.T) {
	k := newFakeKernel(t)
	called := false
	_, err := k.context().CreateAH(provider.AHParams{PortNum: 1}, func(provider.AHParams, []byte, []byte) (provider.AHResult, error) {
		called = true
		return provider.AHResult{}, nil
	})
	if !errors.Is(err, unix.EOPNOTSUPP) || called {
		t.Errorf("CreateAH = %v (kernel asked: %v), want EOPNOTSUPP without a command", err, called)
	}
	c := k.newCQ(4)
	if _, err := c.Resize(16, func(int, []byte, []byte) (int, error) { called = true; return 16, nil }); !errors.Is(err, unix.EOPNOTSUPP) || called {
		t.Errorf("Resize = %v (kernel asked: %v), want EOPNOTSUPP without a command", err, called)
	}
	// No extended-QP operations (rdma-core's siw has no ibv_qp_ex ops), no thread or parent domains.
	var ctx provider.Context = k.context()
	if _, ok := ctx.(provider.SendOpsSupporter); ok {
		t.Error("context claims extended-QP send operations")
	}
	if _, ok := ctx.(provider.TDAllocator); ok {
		t.Error("context claims thread domains")
	}
	if _, ok := ctx.(provider.InitRecvFlusher); ok {
		t.Error("context claims the INIT receive flush, which the lab has not shown on siw")
	}
}

// REG_MR's driver data: struct siw_ureq_reg_mr (all zero: stag_key 0) and room for struct siw_uresp_reg_mr.
func TestRegMRData(t *testing.T) {
	in, out := newFakeKernel(t).context().RegMRData()
	if len(in) != abi.SizeofSiwUreqRegMr || len(out) != abi.SizeofSiwUrespRegMr {
		t.Fatalf("REG_MR driver data %d in, %d out; want %d and %d", len(in), len(out), abi.SizeofSiwUreqRegMr, abi.SizeofSiwUrespRegMr)
	}
	for _, b := range in {
		if b != 0 {
			t.Fatalf("REG_MR request %x, want zeros", in)
		}
	}
}

// A create whose queue cannot be mapped fails, and leaves nothing mapped; an exec error is returned as it is.
func TestCreateMapFailures(t *testing.T) {
	k := newFakeKernel(t)
	ctx := k.context()
	cqKey, _ := k.region(4, abi.SizeofSiwCqe, abi.SizeofSiwCqCtrl)
	for _, resp := range []abi.SiwUrespCreateCq{
		{NumCqe: 4, CqKey: abi.SIW_INVAL_UOBJ_KEY}, // the kernel could not prepare the mapping
		{NumCqe: 0, CqKey: cqKey},                  // no entries
		{NumCqe: maxRingEntries + 1, CqKey: cqKey}, // absurd
		{NumCqe: 4, CqKey: 0x123},                  // not a page offset: mmap fails
	} {
		before := fakeMappings(t)
		if _, _, err := ctx.CreateCQ(provider.CQParams{CQE: 4}, respond[provider.CQParams](&resp, provider.CQResult{CQE: 4})); err == nil {
			t.Errorf("CreateCQ accepted %+v", resp)
		}
		if after := fakeMappings(t); after != before {
			t.Errorf("CreateCQ %+v left %d mappings", resp, after-before)
		}
	}
	if _, _, err := ctx.CreateCQ(provider.CQParams{}, fail[provider.CQParams, provider.CQResult](unix.EINVAL)); err != unix.EINVAL {
		t.Errorf("CreateCQ exec error = %v", err)
	}

	sqKey, _ := k.region(4, abi.SizeofSiwSqe, 0)
	p := provider.QPParams{Type: verbs.QPTypeRC, Cap: testCap}
	for _, resp := range []abi.SiwUrespCreateQp{
		{NumSqe: 4, NumRqe: 4, SqKey: abi.SIW_INVAL_UOBJ_KEY, RqKey: sqKey},
		{NumSqe: 4, NumRqe: 4, SqKey: sqKey, RqKey: abi.SIW_INVAL_UOBJ_KEY}, // the send queue must be unmapped again
		{NumSqe: 0, NumRqe: 4, SqKey: sqKey, RqKey: sqKey},
		{NumSqe: 4, NumRqe: 4, SqKey: sqKey, RqKey: 0x123}, // mmap fails
	} {
		before := fakeMappings(t)
		if _, _, err := ctx.CreateQP(p, respond[provider.QPParams](&resp, provider.QPResult{Cap: testCap})); err == nil {
			t.Errorf("CreateQP accepted %+v", resp)
		}
		if after := fakeMappings(t); after != before {
			t.Errorf("CreateQP %+v left %d mappings", resp, after-before)
		}
	}
	if _, _, err := ctx.CreateQP(p, fail[provider.QPParams, provider.QPResult](unix.EOPNOTSUPP)); err != unix.EOPNOTSUPP {
		t.Errorf("CreateQP exec error = %v", err)
	}

	if _, _, err := ctx.CreateSRQ(provider.SRQParams{MaxWR: 4}, respond[provider.SRQParams](
		&abi.SiwUrespCreateSrq{NumRqe: 4, SrqKey: abi.SIW_INVAL_UOBJ_KEY}, provider.SRQResult{MaxWR: 4})); err == nil {
		t.Error("CreateSRQ accepted SIW_INVAL_UOBJ_KEY")
	}
	if _, _, err := ctx.CreateSRQ(provider.SRQParams{}, fail[provider.SRQParams, provider.SRQResult](unix.ENOMEM)); err != unix.ENOMEM {
		t.Errorf("CreateSRQ exec error = %v", err)
	}
}

// The send limits are the caps the kernel granted, bounded by what an SQE holds.
func TestCreateQPLimits(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 9, MaxRecvSGE: 9, MaxInlineData: 200}, false, true)
	if f.limit != (sendLimits{maxSGE: 6, maxInline: 80, sigAll: true}) {
		t.Errorf("send limits %+v, want 6 SGEs, 80 inline bytes, sig_all", f.limit)
	}
	if f.qp.rq.maxSGE != 6 {
		t.Errorf("receive SGE limit %d, want 6", f.qp.rq.maxSGE)
	}
	g := k.newQP(verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 16}, false, false)
	if g.limit != (sendLimits{maxSGE: 2, maxInline: 16}) || g.qp.rq.maxSGE != 1 {
		t.Errorf("send limits %+v, receive SGEs %d; want 2 SGEs, 16 inline bytes, 1 receive SGE", g.limit, g.qp.rq.maxSGE)
	}
}
