package rxe

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

func TestRegistered(t *testing.T) {
	d, ok := provider.Lookup(abi.RDMA_DRIVER_RXE)
	if !ok {
		t.Fatal("rxe provider not registered for RDMA_DRIVER_RXE")
	}
	if d.Name() != "rxe" || d.DriverID() != 14 {
		t.Errorf("registered %q for driver %d", d.Name(), d.DriverID())
	}
	if lo, hi := d.ABI(); lo != 1 || hi != 2 {
		t.Errorf("ABI range %d..%d, want 1..2", lo, hi)
	}
}

func TestContextAndPD(t *testing.T) {
	k := newFakeKernel(t)
	dev := &provider.Device{Name: "rxe0", FD: k.fd, DriverID: 14, ABI: 2}
	calls := 0
	none := func(in, out []byte) error {
		calls++
		if len(in) != 0 || len(out) != 0 {
			t.Errorf("unexpected driver data: in %d out %d bytes", len(in), len(out))
		}
		return nil
	}
	ctx, err := driver{}.AllocContext(dev, none)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD(none)
	if err != nil || pd.PDN() != 0 {
		t.Fatalf("AllocPD = %v, %v", pd, err)
	}
	if calls != 2 {
		t.Fatalf("exec called %d times, want 2", calls)
	}
	if _, err := (driver{}).AllocContext(dev, func(in, out []byte) error { return unix.EMFILE }); err != unix.EMFILE {
		t.Fatalf("AllocContext exec error = %v", err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateAH(t *testing.T) {
	k := newFakeKernel(t)
	p := provider.AHParams{IsGlobal: true, PortNum: 1}
	ah, err := k.context().CreateAH(p, respond[provider.AHParams](&abi.RxeCreateAhResp{AhNum: 17}, provider.AHResult{Handle: 9}))
	if err != nil {
		t.Fatal(err)
	}
	if ah.Handle != 9 || ah.Num != 17 {
		t.Fatalf("AHData = %+v, want handle 9 num 17", ah)
	}
	// An old kernel answers ah_num 0: refused as not supported (the core then destroys the kernel AH).
	_, err = k.context().CreateAH(p, respond[provider.AHParams](&abi.RxeCreateAhResp{}, provider.AHResult{Handle: 9}))
	if !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("ah_num 0: %v, want EOPNOTSUPP", err)
	}
}

// A QP whose send ring cannot be mapped fails creation and leaves nothing mapped.
func TestCreateQPMapFailure(t *testing.T) {
	k := newFakeKernel(t)
	rqMI, _ := k.ring(4, 64)
	var resp abi.RxeCreateQpResp
	resp.RqMi = rqMI // SqMi left zero: invalid
	p := provider.QPParams{Type: verbs.QPTypeRC, Cap: testCap}
	before := memfdMappings(t)
	if _, _, err := k.context().CreateQP(p, respond[provider.QPParams](&resp, provider.QPResult{Cap: testCap})); err == nil {
		t.Fatal("CreateQP succeeded without a send ring")
	}
	if after := memfdMappings(t); after != before {
		t.Fatalf("%d fake-kernel mappings after the failed CreateQP, %d before: the receive ring leaked", after, before)
	}
	if _, _, err := k.context().CreateQP(p, fail[provider.QPParams, provider.QPResult](unix.ENOMEM)); err != unix.ENOMEM {
		t.Fatalf("CreateQP exec error = %v", err)
	}
}

// The send limits come from the caps the kernel granted, bounded by the element stride.
func TestCreateQPLimits(t *testing.T) {
	k := newFakeKernel(t)
	f := k.newQP(verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 3, MaxRecvSGE: 2, MaxInlineData: 20}, false)
	// Kernel: wqe_size = max(3*16, 20) = 48 -> max_send_sge 3, max_inline 48.
	if f.limit.maxSGE != 3 || f.limit.maxInline != 48 || f.limit.qpType != verbs.QPTypeUD {
		t.Errorf("limits %+v, want UD, 3 SGEs, 48 inline", f.limit)
	}
	if f.qp.rq.maxSGE != 2 {
		t.Errorf("receive SGE limit %d, want 2", f.qp.rq.maxSGE)
	}
}

// memfdMappings counts this process's mappings of fake-kernel memfds.
func memfdMappings(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "rxe-fake-uverbs")
}
