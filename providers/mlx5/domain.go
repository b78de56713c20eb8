package mlx5

import (
	"fmt"
	"sync/atomic"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// Thread domains and parent domains, as libmlx5 has them (mlx5_alloc_td, mlx5_alloc_parent_domain):
//
//   - A thread domain holds a dedicated BlueFlame register (the shared NC register when the device has no
//     BlueFlame) from the same free list the QPs' registers come from, until it is closed; its Close is EBUSY
//     while a parent domain holds it.
//   - A parent domain is a PD with the protection domain's PDN, a thread domain (optional) and an allocator
//     (optional); its Close is EBUSY while a QP, CQ, SRQ or WQ made in it lives.
//   - A QP made in a parent domain with a thread domain rings the TD's register (it takes none of its own) and
//     posts without its queue locks (mlx5_spinlock_init_pd: the TD promises one thread). Its CQs keep their
//     lock, as libmlx5's CQs do: a CQ is shared with QPs outside the TD, and its lock also orders a QP's
//     creation, reset and destruction against polls.
//   - The allocator supplies the QP, WQ, SRQ and CQ rings (MLX5DV_RES_TYPE_QP, _RWQ, _SRQ, _CQ),
//     page-aligned whole pages as libmlx5 asks; "use the default" falls back to anonymous memory. Doorbell
//     records stay the provider's (libmlx5 also asks the allocator for those, MLX5DV_RES_TYPE_DBR, one 8-byte
//     record at a time; here they are carved from the provider's pages whatever the parent domain).

// The allocator's resource types (mlx5dv.h MLX5DV_RES_TYPE_*).
const (
	resQP  = provider.ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 1
	resRWQ = provider.ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 2
	resSRQ = provider.ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 4
	resCQ  = provider.ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 5
)

// tdomain is a thread domain (libmlx5 struct mlx5_td).
type tdomain struct {
	ctx  *mctx
	bf   bfSlot       // the TD's doorbell register, shared by its QPs
	refs atomic.Int32 // parent domains holding it
}

// AllocTD implements provider.TDAllocator (mlx5_alloc_td): a dedicated BlueFlame register, or the NC one.
func (c *mctx) AllocTD() (provider.TD, error) {
	s, err := c.takeBF()
	if err != nil {
		return nil, fmt.Errorf("mlx5: allocate thread domain: %w", err)
	}
	return &tdomain{ctx: c, bf: s}, nil
}

// Close implements provider.TD (mlx5_dealloc_td): EBUSY while a parent domain holds the TD, else its register
// goes back to the free list.
func (t *tdomain) Close() error {
	if n := t.refs.Load(); n > 0 {
		return fmt.Errorf("mlx5: deallocate thread domain: %d parent domains use it: %w", n, unix.EBUSY)
	}
	if t.bf.reg != nil {
		t.ctx.putBF(t.bf)
		t.bf = bfSlot{}
	}
	return nil
}

// pdomain is a parent domain (libmlx5 struct mlx5_parent_domain).
type pdomain struct {
	ctx   *mctx
	pdn   uint32
	td    *tdomain
	alloc provider.Allocator
	refs  atomic.Int32 // QPs, CQs and SRQs made in it
}

// PDN implements provider.PD: the protection domain's.
func (d *pdomain) PDN() uint32 { return d.pdn }

// parentDomainKnown are the request fields libmlx5 accepts.
const parentDomainKnown = provider.ParentDomainAllocators | provider.ParentDomainPDContext |
	provider.ParentDomainAllowCCUnprotected

// AllocParentDomain implements provider.ParentDomainAllocator (mlx5_alloc_parent_domain): unknown request
// fields are EINVAL; the protection domain must be this provider's, not a parent domain; the TD is held.
// ALLOW_CC_UNPROTECTED_ALLOC is accepted and changes nothing: libmlx5 acts on it only on a context with
// confidential-computing DMA bounce buffers, which this provider does not speak.
func (c *mctx) AllocParentDomain(p provider.ParentDomainParams) (provider.ParentDomain, error) {
	if unknown := p.Mask &^ parentDomainKnown; unknown != 0 {
		return nil, fmt.Errorf("mlx5: allocate parent domain: unknown request fields %#x: %w", uint32(unknown), errInvalid)
	}
	prot, ok := p.PD.(pd)
	if !ok {
		return nil, fmt.Errorf("mlx5: allocate parent domain: protection domain %T is not an mlx5 PD: %w", p.PD, errInvalid)
	}
	d := &pdomain{ctx: c, pdn: uint32(prot)}
	if p.TD != nil {
		td, ok := p.TD.(*tdomain)
		if !ok || td.ctx != c {
			return nil, fmt.Errorf("mlx5: allocate parent domain: thread domain %T is not of this context: %w", p.TD, errInvalid)
		}
		d.td = td
	}
	if p.Mask&provider.ParentDomainAllocators != 0 {
		if p.Alloc == nil {
			return nil, fmt.Errorf("mlx5: allocate parent domain: ALLOCATORS without an allocator: %w", errInvalid)
		}
		d.alloc = p.Alloc
	}
	if d.td != nil {
		d.td.refs.Add(1)
	}
	return d, nil
}

// Close implements provider.ParentDomain (mlx5_dealloc_parent_domain): EBUSY while objects made in it live,
// else the TD is released.
func (d *pdomain) Close() error {
	if n := d.refs.Load(); n > 0 {
		return fmt.Errorf("mlx5: deallocate parent domain: %d QPs, CQs or SRQs use it: %w", n, unix.EBUSY)
	}
	if d.td != nil {
		d.td.refs.Add(-1)
		d.td = nil
	}
	return nil
}

// domainOf is the parent domain an object is made in: nil for none, EINVAL for another provider's or context's.
func (c *mctx) domainOf(pd provider.ParentDomain) (*pdomain, error) {
	if pd == nil {
		return nil, nil
	}
	d, ok := pd.(*pdomain)
	if !ok || d.ctx != c {
		return nil, fmt.Errorf("mlx5: parent domain %T is not of this context: %w", pd, errInvalid)
	}
	return d, nil
}

// threadDomain is the parent domain's TD (nil for none, or no parent domain).
func (d *pdomain) threadDomain() *tdomain {
	if d == nil {
		return nil
	}
	return d.td
}

// drop uncounts an object made in the parent domain (nil: none).
func (d *pdomain) drop() {
	if d != nil {
		d.refs.Add(-1)
	}
}

// ringFrom returns a queue buffer of n bytes rounded up to whole pages: from the parent domain's allocator when
// it has one that does not defer to the default (libmlx5 MLX5_ALLOC_TYPE_CUSTOM), zeroed, else anonymous
// memory. ext is the allocator's buffer as it returned it, nil for anonymous memory: freeRing takes both.
func (c *mctx) ringFrom(n int, d *pdomain, res provider.ResourceType) (mem, ext []byte, err error) {
	if d != nil && d.alloc != nil {
		ps := c.dev.PageSize
		size := (n + ps - 1) / ps * ps
		b, err := d.alloc.Alloc(size, ps, res)
		if err != nil {
			return nil, nil, fmt.Errorf("mlx5: allocate %d-byte queue buffer: %w", size, err)
		}
		if b != nil {
			// The core checked the buffer; a short or misaligned ring would let the device write past it.
			if len(b) < size || addrOf(b)%uint64(ps) != 0 {
				d.alloc.Free(b, res)
				return nil, nil, fmt.Errorf("mlx5: allocate %d-byte queue buffer: allocator returned %d bytes at %#x: %w",
					size, len(b), addrOf(b), errInvalid)
			}
			mem = b[:size:size]
			clear(mem)
			return mem, b, nil
		}
	}
	mem, err = c.ring(n)
	return mem, nil, err
}

// freeRing releases what ringFrom returned.
func (c *mctx) freeRing(mem, ext []byte, d *pdomain, res provider.ResourceType) {
	if ext != nil {
		d.alloc.Free(ext, res)
		return
	}
	if mem != nil {
		c.sys.unmap(mem)
	}
}
