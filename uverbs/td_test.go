package uverbs

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// The core's side of thread and parent domains, with a fake provider (no kernel is involved: neither object
// has a kernel command). The mlx5 side runs against the emulator in providers/mlx5 (domain_test.go); rxe's
// refusal on a device in test/conformance (td_test.go).

// domainProv is a provider context with thread and parent domains; only those operations are called.
type domainProv struct {
	provider.Context
	tdOpen, domOpen int
	last            provider.ParentDomainParams
	refuse          error
}

type fakePDN uint32

func (p fakePDN) PDN() uint32 { return uint32(p) }

type fakeTD struct{ p *domainProv }

func (t *fakeTD) Close() error { t.p.tdOpen--; return nil }

type fakeDomain struct {
	fakePDN
	p *domainProv
}

func (d *fakeDomain) Close() error { d.p.domOpen--; return nil }

func (p *domainProv) AllocTD() (provider.TD, error) { p.tdOpen++; return &fakeTD{p}, nil }

func (p *domainProv) AllocParentDomain(a provider.ParentDomainParams) (provider.ParentDomain, error) {
	p.last = a
	if err := p.refuse; err != nil {
		return nil, err
	}
	p.domOpen++
	return &fakeDomain{fakePDN(a.PD.PDN()), p}, nil
}

// noDomainProv is a provider without either (rxe).
type noDomainProv struct{ provider.Context }

func fakeContext(prov provider.Context, id DriverID) *Context {
	c := &Context{prov: prov}
	c.dev.Name, c.dev.DriverID = "fake0", id
	return c
}

// A provider without thread or parent domains (rxe) is answered as libibverbs answers it: EOPNOTSUPP, which
// is ErrNotSupported; nothing is counted.
func TestDomainsNotSupported(t *testing.T) {
	c := fakeContext(noDomainProv{}, DriverRXE)
	pd := &PD{ctx: c, handle: 1, prov: fakePDN(1)}
	td, errTD := c.AllocTD()
	dom, errDom := c.AllocParentDomain(ParentDomainAttr{PD: pd})
	if td != nil || dom != nil {
		t.Fatalf("got %v, %v", td, dom)
	}
	for name, err := range map[string]error{"alloc TD": errTD, "alloc parent domain": errDom} {
		var e *Error
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.Is(err, errors.ErrUnsupported) ||
			!errors.As(err, &e) || e.Device != "fake0" || e.Op != name {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c.objects != 0 || pd.domains.Load() != 0 {
		t.Errorf("refusals counted: %d objects, %d domains", c.objects, pd.domains.Load())
	}
}

// A parent domain stands for its protection domain, passes its TD and allocator to the provider, and keeps
// the books: the TD and the protection domain cannot be closed while it holds them, nor it while objects made
// in it are open (EBUSY, the object staying open); then everything is released, once.
func TestParentDomainLifetime(t *testing.T) {
	prov := &domainProv{}
	c := fakeContext(prov, DriverMLX5)
	pd := &PD{ctx: c, handle: 5, prov: fakePDN(9)}
	td, err := c.AllocTD()
	if err != nil || prov.tdOpen != 1 || td.Context() != c {
		t.Fatalf("AllocTD: %v, %v", td, err)
	}
	alloc := &testAllocator{}
	dom, err := c.AllocParentDomain(ParentDomainAttr{PD: pd, TD: td, Allocator: alloc, AllowCCUnprotected: true})
	if err != nil {
		t.Fatal(err)
	}
	if !dom.IsParentDomain() || pd.IsParentDomain() || dom.Protection() != pd || pd.Protection() != pd ||
		dom.TD() != td || pd.TD() != nil || dom.Handle() != 5 || dom.prov.PDN() != 9 || dom.Context() != c {
		t.Errorf("parent domain accessors: %v %v %v %v %d", dom.IsParentDomain(), dom.Protection(), dom.TD(), pd.TD(), dom.Handle())
	}
	if s := dom.String(); s != "parent domain of PD 0x5 on fake0" {
		t.Errorf("String %q", s)
	}
	if prov.last.PD != pd.prov || prov.last.TD != td.prov || prov.last.Alloc == nil ||
		prov.last.Mask != provider.ParentDomainAllocators|provider.ParentDomainAllowCCUnprotected {
		t.Errorf("provider request %+v", prov.last)
	}
	if c.objects != 2 {
		t.Errorf("%d objects counted, want the TD and the parent domain", c.objects)
	}
	if err := c.Close(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("context close with a TD and a parent domain: %v", err)
	}

	// Held: the TD and the protection domain (refused before the kernel is asked).
	if err := td.Close(); !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "dealloc TD on fake0") || prov.tdOpen != 1 {
		t.Errorf("TD close with a parent domain: %v", err)
	}
	if err := pd.Close(); !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "dealloc PD 0x5") {
		t.Errorf("PD close with a parent domain: %v", err)
	}
	if td.checkOpen() != nil || pd.checkOpen() != nil {
		t.Fatal("a refused close left the object closed")
	}

	// An object made in the parent domain (what CreateQP, CreateSRQ and CreateCQEx do around the provider).
	provDom, err := dom.enterDomain()
	if err != nil || provDom != dom.prov {
		t.Fatalf("enterDomain: %v, %v", provDom, err)
	}
	dom.exitDomain(true)
	if err := dom.Close(); !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "1 QPs, CQs or SRQs") || prov.domOpen != 1 {
		t.Errorf("parent domain close with an object: %v", err)
	}
	// A failed create is not counted.
	if _, err := dom.enterDomain(); err != nil {
		t.Fatal(err)
	}
	dom.exitDomain(false)
	dom.dropUser() // the object closed
	if err := dom.Close(); err != nil || prov.domOpen != 0 {
		t.Fatalf("parent domain close: %v (provider open %d)", err, prov.domOpen)
	}
	if err := dom.Close(); err != nil || prov.domOpen != 0 {
		t.Errorf("second close: %v (provider open %d)", err, prov.domOpen)
	}
	if _, err := dom.enterDomain(); !errors.Is(err, ErrClosed) {
		t.Errorf("object made in a closed parent domain: %v", err)
	}
	if _, err := c.CreateCQEx(CQExAttr{CQE: 1, ParentDomain: dom}); !errors.Is(err, ErrClosed) {
		t.Errorf("CQ in a closed parent domain: %v", err)
	}
	if pd.domains.Load() != 0 {
		t.Errorf("protection domain still held %d times", pd.domains.Load())
	}
	if err := td.Close(); err != nil || prov.tdOpen != 0 {
		t.Fatalf("TD close: %v (provider open %d)", err, prov.tdOpen)
	}
	if _, err := c.AllocParentDomain(ParentDomainAttr{PD: pd, TD: td}); !errors.Is(err, ErrClosed) {
		t.Errorf("parent domain with a closed TD: %v", err)
	}
	if c.objects != 0 {
		t.Errorf("%d objects left counted", c.objects)
	}
}

// AllocParentDomain's refusals, before the provider: no PD, a parent domain as the PD, another context's PD or
// TD (EINVAL), a closed PD (ErrClosed); the provider's refusal is wrapped and nothing is held. CreateCQEx
// refuses a PD that is not a parent domain.
func TestParentDomainRefusals(t *testing.T) {
	prov := &domainProv{}
	c := fakeContext(prov, DriverMLX5)
	other := fakeContext(&domainProv{}, DriverMLX5)
	pd := &PD{ctx: c, handle: 1, prov: fakePDN(1)}
	otherPD := &PD{ctx: other, handle: 1, prov: fakePDN(1)}
	otherTD, err := other.AllocTD()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := c.AllocParentDomain(ParentDomainAttr{PD: pd})
	if err != nil {
		t.Fatal(err)
	}
	closed := &PD{ctx: c, handle: 2, prov: fakePDN(2)}
	closed.life.close(func() error { return nil })
	for name, tc := range map[string]struct {
		attr ParentDomainAttr
		want error
	}{
		"no PD":                {ParentDomainAttr{}, unix.EINVAL},
		"parent domain as PD":  {ParentDomainAttr{PD: dom}, unix.EINVAL},
		"another context's PD": {ParentDomainAttr{PD: otherPD}, unix.EINVAL},
		"another context's TD": {ParentDomainAttr{PD: pd, TD: otherTD}, unix.EINVAL},
		"closed PD":            {ParentDomainAttr{PD: closed}, ErrClosed},
	} {
		if d, err := c.AllocParentDomain(tc.attr); d != nil || !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "alloc parent domain on fake0: ") {
			t.Errorf("%s: %v, %v; want %v", name, d, err, tc.want)
		}
	}
	prov.refuse = unix.ENOMEM
	if d, err := c.AllocParentDomain(ParentDomainAttr{PD: pd}); d != nil || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("provider refusal: %v, %v", d, err)
	}
	if c.objects != 1 || pd.domains.Load() != 1 {
		t.Errorf("after refusals: %d objects, PD held %d times; want the one parent domain", c.objects, pd.domains.Load())
	}
	if _, err := c.CreateCQEx(CQExAttr{CQE: 1, ParentDomain: pd}); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "not a parent domain") {
		t.Errorf("CQ with a PD as parent domain: %v", err)
	}
	if _, err := c.CreateCQEx(CQExAttr{CQE: 1, ParentDomain: otherPD}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("CQ with another context's PD as parent domain: %v", err)
	}
}

// testAllocator hands out what next says and records what it is given back.
type testAllocator struct {
	next  []byte
	err   error
	freed [][]byte
	pds   []*PD
}

func (a *testAllocator) Alloc(pd *PD, size, alignment int, res ResourceType) ([]byte, error) {
	a.pds = append(a.pds, pd)
	return a.next, a.err
}

func (a *testAllocator) Free(pd *PD, buf []byte, res ResourceType) {
	a.pds = append(a.pds, pd)
	a.freed = append(a.freed, buf)
}

// The allocator as the provider sees it: the parent domain passed along; (nil, nil) is "use the default"; an
// error is wrapped; a short or misaligned buffer is refused with an *AllocatorError (EINVAL) and handed back.
func TestDomainAllocator(t *testing.T) {
	b, err := AllocBuffer(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mem := b.Bytes()
	pd := &PD{}
	a := &testAllocator{}
	x := &domainAllocator{pd: pd, a: a}
	if got, err := x.Alloc(4096, 4096, provider.ResourceType(ResourceCQ)); got != nil || err != nil {
		t.Errorf("use the default: %v, %v", got, err)
	}
	a.err = unix.ENOMEM
	if _, err := x.Alloc(4096, 4096, provider.ResourceType(ResourceQP)); !errors.Is(err, unix.ENOMEM) || !strings.Contains(err.Error(), "QP buffer of 4096 bytes") {
		t.Errorf("allocator error: %v", err)
	}
	a.err = nil
	a.next = mem[:8192]
	if got, err := x.Alloc(8192, 4096, provider.ResourceType(ResourceSRQ)); err != nil || &got[0] != &mem[0] {
		t.Errorf("good buffer: %v", err)
	}
	for name, bad := range map[string][]byte{"short": mem[:4096], "misaligned": mem[64 : 64+8192]} {
		a.next, a.freed = bad, nil
		_, err := x.Alloc(8192, 4096, provider.ResourceType(ResourceQP))
		var ae *AllocatorError
		if !errors.Is(err, unix.EINVAL) || !errors.As(err, &ae) || ae.Resource != ResourceQP || ae.Size != 8192 ||
			ae.Len != len(bad) || ae.Addr != uintptr(unsafe.Pointer(&bad[0])) {
			t.Errorf("%s: %v", name, err)
		}
		if len(a.freed) != 1 || &a.freed[0][0] != &bad[0] {
			t.Errorf("%s: refused buffer not handed back: %d frees", name, len(a.freed))
		}
	}
	x.Free(mem, provider.ResourceType(ResourceCQ))
	for _, p := range a.pds {
		if p != pd {
			t.Fatal("allocator not given the parent domain")
		}
	}
}

func TestResourceTypeString(t *testing.T) {
	for r, want := range map[ResourceType]string{ResourceQP: "QP", ResourceRWQ: "RWQ", ResourceDBR: "DBR", ResourceSRQ: "SRQ",
		ResourceCQ: "CQ", 7: "ResourceType(0x7)", 1<<32 | 9: "ResourceType(0x100000009)"} {
		if got := r.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint64(r), got, want)
		}
	}
	if ResourceQP != 1<<32|1 || ResourceCQ != 1<<32|5 {
		t.Error("values differ from mlx5dv.h's MLX5DV_RES_TYPE_*")
	}
}
