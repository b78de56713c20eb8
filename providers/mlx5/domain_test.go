package mlx5

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// fakeAlloc is a parent domain's allocator as the core hands it to the provider: anonymous mappings (outside
// the Go heap), every buffer accounted for. useDefault answers "use the default" for a resource type; short
// returns a buffer one page short.
type fakeAlloc struct {
	t          testing.TB
	live       map[uint64]provider.ResourceType
	allocs     map[provider.ResourceType]int
	frees      int
	useDefault map[provider.ResourceType]bool
	short      bool
}

func newFakeAlloc(t testing.TB) *fakeAlloc {
	a := &fakeAlloc{t: t, live: map[uint64]provider.ResourceType{}, allocs: map[provider.ResourceType]int{},
		useDefault: map[provider.ResourceType]bool{}}
	t.Cleanup(func() {
		if len(a.live) != 0 {
			t.Errorf("allocator buffers never freed: %v", a.live)
		}
	})
	return a
}

func (a *fakeAlloc) Alloc(size, alignment int, res provider.ResourceType) ([]byte, error) {
	if size <= 0 || size%4096 != 0 || alignment != 4096 {
		a.t.Errorf("allocator asked for %d bytes aligned to %d for %#x", size, alignment, uint64(res))
	}
	if a.useDefault[res] {
		return nil, nil
	}
	n := size
	if a.short {
		n -= 4096
	}
	b, err := unix.Mmap(-1, 0, max(n, 4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	b = b[:n]
	for i := range b { // dirty: the provider zeroes what it is given
		b[i] = 0xa5
	}
	a.live[addrOf(b)] = res
	a.allocs[res]++
	return b, nil
}

func (a *fakeAlloc) Free(b []byte, res provider.ResourceType) {
	if r, ok := a.live[addrOf(b)]; !ok || r != res {
		a.t.Errorf("free of %#x as %#x: live as %#x, %v", addrOf(b), uint64(res), uint64(r), ok)
	}
	delete(a.live, addrOf(b))
	a.frees++
	unix.Munmap(b[:cap(b)])
}

// td and domain allocate a thread domain and a parent domain through the provider contract.
func (g *glue) td() *tdomain {
	g.t.Helper()
	td, err := g.ctx.AllocTD()
	if err != nil {
		g.t.Fatal(err)
	}
	return td.(*tdomain)
}

func (g *glue) domain(td *tdomain, alloc provider.Allocator) *pdomain {
	g.t.Helper()
	p := provider.ParentDomainParams{PD: pd(7)}
	if td != nil {
		p.TD = td
	}
	if alloc != nil {
		p.Alloc, p.Mask = alloc, provider.ParentDomainAllocators
	}
	d, err := g.ctx.AllocParentDomain(p)
	if err != nil {
		g.t.Fatal(err)
	}
	if d.PDN() != 7 {
		g.t.Errorf("parent domain PDN %d, want the protection domain's 7", d.PDN())
	}
	return d.(*pdomain)
}

// A thread domain holds a BlueFlame register of its own, which no QP outside it gets; the QPs of its parent
// domains share it and post without their queue locks; it returns to the free list only when the TD is
// closed. Without BlueFlame the TD uses the shared NC register, as libmlx5 does.
func TestThreadDomainRegister(t *testing.T) {
	g := newGlue(t, 512)
	scq, scqn := g.cq(16)
	cp := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	plain := g.qp(verbs.QPTypeRC, cp, scq, scq, scqn, scqn)
	td := g.td()
	if td.bf.reg == nil || td.bf.reg == g.ctx.ncReg || td.bf.reg == plain.bf.reg {
		t.Fatalf("TD register %p: NC %p, other QP's %p", td.bf.reg, g.ctx.ncReg, plain.bf.reg)
	}
	dom := g.domain(td, nil)
	q1 := g.qpIn(verbs.QPTypeRC, cp, scq, scq, scqn, scqn, nil, dom)
	q2 := g.qpIn(verbs.QPTypeUD, cp, scq, scq, scqn, scqn, nil, dom)
	for i, q := range []*qpAdapter{q1, q2} {
		if q.bf != td.bf || !q.tdBF || !q.single {
			t.Errorf("QP %d in the TD: register %p (page %d), tdBF %v, single %v; want the TD's %p (page %d)",
				i+1, q.bf.reg, q.bf.pageID, q.tdBF, q.single, td.bf.reg, td.bf.pageID)
		}
	}
	if plain.single || plain.tdBF {
		t.Error("a QP outside the TD posts without locks")
	}
	// Destroying the TD's QPs keeps the register the TD's: later QPs outside the TD never get it.
	q1.Destroyed()
	q2.Destroyed()
	var others []*qpAdapter
	for range 4 {
		q := g.qp(verbs.QPTypeRC, cp, scq, scq, scqn, scqn)
		if q.bf.reg == td.bf.reg {
			t.Fatal("a QP outside the TD got the TD's register")
		}
		others = append(others, q)
	}
	for _, q := range others {
		q.Destroyed()
	}
	if err := dom.Close(); err != nil {
		t.Fatal(err)
	}
	reg := td.bf.reg
	free := len(g.ctx.free)
	if err := td.Close(); err != nil {
		t.Fatal(err)
	}
	if len(g.ctx.free) != free+1 || g.ctx.free[len(g.ctx.free)-1].reg != reg {
		t.Errorf("closed TD's register not back on the free list")
	}
	if err := td.Close(); err != nil || len(g.ctx.free) != free+1 {
		t.Errorf("second Close: %v, free list %d", err, len(g.ctx.free))
	}
	plain.Destroyed()
	scq.Destroyed()

	g = newGlue(t, 0)
	td = g.td()
	if td.bf.reg != g.ctx.ncReg {
		t.Errorf("without BlueFlame the TD register is %p, want the NC register %p", td.bf.reg, g.ctx.ncReg)
	}
	if err := td.Close(); err != nil {
		t.Fatal(err)
	}
}

// mlx5_dealloc_td and mlx5_dealloc_parent_domain: EBUSY while in use, then released.
func TestDomainsBusy(t *testing.T) {
	g := newGlue(t, 512)
	td := g.td()
	dom := g.domain(td, nil)
	if err := td.Close(); !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "thread domain") {
		t.Errorf("TD close with a parent domain: %v, want EBUSY", err)
	}
	scq, scqn := g.cqIn(8, dom)
	cp := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	q := g.qpIn(verbs.QPTypeRC, cp, scq, scq, scqn, scqn, nil, dom)
	s := g.srqIn(4, 1, dom)
	for i, destroy := range []func(){q.Destroyed, s.Destroyed, scq.Destroyed} {
		if err := dom.Close(); !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "parent domain") {
			t.Errorf("parent domain close with %d objects: %v, want EBUSY", 3-i, err)
		}
		destroy()
	}
	if err := dom.Close(); err != nil {
		t.Fatalf("parent domain close when unused: %v", err)
	}
	if err := td.Close(); err != nil {
		t.Fatalf("TD close when unused: %v", err)
	}
}

// mlx5_alloc_parent_domain's refusals (EINVAL): unknown request fields, a protection domain that is not an mlx5
// PD (or is a parent domain), another context's TD, ALLOCATORS without an allocator; and objects made in another
// provider's or context's parent domain.
func TestParentDomainRefusals(t *testing.T) {
	g := newGlue(t, 512)
	other := newGlue(t, 512)
	otd := other.td()
	defer otd.Close()
	dom := g.domain(nil, nil)
	defer dom.Close()
	for name, p := range map[string]provider.ParentDomainParams{
		"unknown field":           {PD: pd(1), Mask: 1 << 3},
		"no PD":                   {},
		"parent domain as PD":     {PD: dom},
		"another context's TD":    {PD: pd(1), TD: otd},
		"ALLOCATORS without one":  {PD: pd(1), Mask: provider.ParentDomainAllocators},
		"unknown and known field": {PD: pd(1), Mask: provider.ParentDomainAllowCCUnprotected | 1<<7},
	} {
		d, err := g.ctx.AllocParentDomain(p)
		if d != nil || !errors.Is(err, syscall.EINVAL) || !strings.HasPrefix(err.Error(), "mlx5: allocate parent domain: ") {
			t.Errorf("%s: %v, %v; want an mlx5 error wrapping EINVAL", name, d, err)
		}
	}
	if otd.refs.Load() != 0 {
		t.Errorf("refused parent domains hold the TD: %d", otd.refs.Load())
	}
	if d, err := g.ctx.AllocParentDomain(provider.ParentDomainParams{PD: pd(1), Mask: provider.ParentDomainAllowCCUnprotected |
		provider.ParentDomainPDContext}); err != nil {
		t.Errorf("known fields refused: %v", err)
	} else {
		d.Close()
	}
	odom := other.domain(nil, nil)
	defer odom.Close()
	scq, _ := g.cq(4)
	defer scq.Destroyed()
	for name, d := range map[string]provider.ParentDomain{"another provider's": foreignDomain{}, "another context's": odom} {
		_, _, err := g.ctx.CreateCQ(provider.CQParams{CQE: 4, ParentDomain: d}, func(provider.CQParams, []byte, []byte) (provider.CQResult, error) {
			t.Error("command issued")
			return provider.CQResult{}, nil
		})
		_, _, errQP := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1},
			SendCQ: scq, RecvCQ: scq, ParentDomain: d}, func(provider.QPParams, []byte, []byte) (provider.QPResult, error) {
			t.Error("command issued")
			return provider.QPResult{}, nil
		})
		_, _, errSRQ := g.ctx.CreateSRQ(provider.SRQParams{MaxWR: 1, MaxSGE: 1, ParentDomain: d}, func(provider.SRQParams, []byte, []byte) (provider.SRQResult, error) {
			t.Error("command issued")
			return provider.SRQResult{}, nil
		})
		for what, err := range map[string]error{"CQ": err, "QP": errQP, "SRQ": errSRQ} {
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%s in %s parent domain: %v, want EINVAL", what, name, err)
			}
		}
	}
}

type foreignDomain struct{}

func (foreignDomain) PDN() uint32  { return 1 }
func (foreignDomain) Close() error { return nil }

// A QP pair and its CQs made in a parent domain with a thread domain and an allocator run RC traffic through
// the emulator: the TD's register rings the doorbells (BlueFlame where there is one), the rings are the
// allocator's (zeroed by the provider), polls complete; every allocator buffer is freed at destruction. The
// allocator's "use the default" falls back to anonymous memory.
func TestThreadDomainTraffic(t *testing.T) {
	for _, bf := range []int{512, 0} {
		t.Run(map[int]string{512: "BlueFlame", 0: "no BlueFlame"}[bf], func(t *testing.T) {
			g := newGlue(t, bf)
			alloc := newFakeAlloc(t)
			alloc.useDefault[resSRQ] = true
			td := g.td()
			dom := g.domain(td, alloc)
			scq, scqn := g.cqIn(32, dom)
			rcq, rcqn := g.cqIn(32, dom)
			cp := verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}
			a := g.qpIn(verbs.QPTypeRC, cp, scq, rcq, scqn, rcqn, nil, dom)
			b := g.qpIn(verbs.QPTypeRC, cp, scq, rcq, scqn, rcqn, nil, dom)
			srq := g.srqIn(4, 1, dom)
			if alloc.allocs[resQP] != 2 || alloc.allocs[resCQ] != 2 || alloc.allocs[resSRQ] != 0 {
				t.Fatalf("allocator calls %v, want 2 QP and 2 CQ rings", alloc.allocs)
			}
			if a.ext == nil || scq.ext == nil || srq.ext != nil {
				t.Errorf("ring origins: QP %v, CQ %v, SRQ (default) %v", a.ext != nil, scq.ext != nil, srq.ext != nil)
			}
			if a.bf.reg != td.bf.reg || b.bf.reg != td.bf.reg {
				t.Fatal("QPs in the TD do not ring its register")
			}
			g.connect(a, b, 0)
			src, slk := g.mr(4096)
			dst, dlk := g.mr(4096)
			for i := range src {
				src[i] = byte(i*3 + 1)
			}
			for i := range 40 {
				n := uint32(8 + i)
				if _, err := errOf(b.PostRecv([]hw.RecvWR{{WRID: uint64(100 + i), SGL: []hw.SGE{{Addr: addrOf(dst), Length: 256, LKey: dlk}}}})); err != nil {
					t.Fatal(err)
				}
				wr := hw.SendWR{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []hw.SGE{{Addr: addrOf(src) + uint64(i), Length: n, LKey: slk}}}
				if i%2 == 0 {
					wr.Flags |= verbs.SendInline
				}
				if _, err := errOf(a.PostSend([]hw.SendWR{wr})); err != nil {
					t.Fatal(err)
				}
				g.dev.Process()
				s := pollN(t, scq, 1)[0]
				r := pollN(t, rcq, 1)[0]
				if s.Status != verbs.WCSuccess || s.WRID != uint64(i) || r.Status != verbs.WCSuccess || r.WRID != uint64(100+i) || r.ByteLen != n {
					t.Fatalf("message %d: send %+v receive %+v", i, s, r)
				}
				if !bytes.Equal(dst[:n], src[i:i+int(n)]) {
					t.Fatalf("message %d: payload %x", i, dst[:n])
				}
			}
			// The extended QP's all-or-nothing post takes the same unlocked path.
			if _, err := errOf(b.PostRecv([]hw.RecvWR{{WRID: 7, SGL: []hw.SGE{{Addr: addrOf(dst), Length: 256, LKey: dlk}}}})); err != nil {
				t.Fatal(err)
			}
			if bad, err := errOf(a.PostSendAll([]hw.SendWR{{WRID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
				SGL: []hw.SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}}})); err != nil {
				t.Fatal(bad, err)
			}
			g.dev.Process()
			if s, r := pollN(t, scq, 1)[0], pollN(t, rcq, 1)[0]; s.WRID != 8 || r.WRID != 7 {
				t.Errorf("PostSendAll: send %+v receive %+v", s, r)
			}
			st, err := g.dev.QPStats(a.QPN)
			if err != nil || (bf != 0) != (st.BlueFlameWrites > 0) || (bf == 0 && st.Doorbells == 0) {
				t.Errorf("doorbell statistics with bf_reg_size %d: %+v, %v", bf, st, err)
			}
			a.Destroyed()
			b.Destroyed()
			srq.Destroyed()
			scq.Destroyed()
			rcq.Destroyed()
			if alloc.frees != 4 || len(alloc.live) != 0 {
				t.Errorf("allocator: %d frees, live %v", alloc.frees, alloc.live)
			}
			if err := dom.Close(); err != nil {
				t.Fatal(err)
			}
			if err := td.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A buffer shorter than asked is refused (EINVAL) and handed back; nothing is created.
func TestParentDomainAllocatorShortBuffer(t *testing.T) {
	g := newGlue(t, 512)
	alloc := newFakeAlloc(t)
	alloc.short = true
	dom := g.domain(nil, alloc)
	_, _, err := g.ctx.CreateCQ(provider.CQParams{CQE: 200, ParentDomain: dom}, func(provider.CQParams, []byte, []byte) (provider.CQResult, error) {
		t.Error("command issued with a short ring")
		return provider.CQResult{}, nil
	})
	if !errors.Is(err, syscall.EINVAL) || alloc.frees != 1 || dom.refs.Load() != 0 {
		t.Errorf("short CQ ring: %v, %d frees, parent domain refs %d", err, alloc.frees, dom.refs.Load())
	}
	if err := dom.Close(); err != nil {
		t.Fatal(err)
	}
}
