package uverbs

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain).
//
// A thread domain is a promise: the objects made in it are used by one goroutine at a time (or with the
// caller's own synchronisation), so the provider drops the locks it would take for them, and it may dedicate
// resources to the domain. A TD is used through a parent domain: a PD made from a protection domain, a TD
// (optional) and an Allocator (optional), accepted wherever a PD is (CreateQP, CreateSRQ, RegMR, CreateAH,
// AllocMW: the kernel sees the protection domain) and by CreateCQEx (CQExAttr.ParentDomain).
//
// On mlx5 (as libmlx5 does): a TD owns a dedicated BlueFlame doorbell register (the shared NC register where
// the device has no BlueFlame); every QP made in a parent domain with that TD rings it instead of a register
// of its own, and posts (PostSend, PostRecv) without the queue locks. CQs made in such a parent domain keep
// their lock, as libmlx5 keeps it: a CQ is also used by the QPs that complete into it, which need not be in
// the TD. The Allocator supplies the QP, SRQ and CQ rings.
//
// rxe has neither (its rdma-core provider has no alloc_td or alloc_parent_domain op): AllocTD and
// AllocParentDomain answer an error matching ErrNotSupported and unix.EOPNOTSUPP, as libibverbs does.
//
// Lifetime: close the objects made in a parent domain before it (its Close is EBUSY until then, as libmlx5's
// mlx5_dealloc_parent_domain), the parent domain before its TD and its protection domain (EBUSY until then,
// as mlx5_dealloc_td and mlx5_dealloc_pd), and all of them before the Context.

// TD is a thread domain (struct ibv_td).
type TD struct {
	ctx     *Context
	prov    provider.TD
	domains atomic.Int32 // parent domains holding it
	life
}

// AllocTD allocates a thread domain (ibv_alloc_td). A provider without thread domains (rxe) answers an error
// matching ErrNotSupported and unix.EOPNOTSUPP.
func (c *Context) AllocTD() (*TD, error) {
	tda, ok := c.prov.(provider.TDAllocator)
	if !ok {
		return nil, wrap("alloc TD", c.dev.Name, fmt.Errorf("goverbs' provider for %v has no thread domains: %w",
			c.dev.DriverID, unix.EOPNOTSUPP))
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("alloc TD", c.dev.Name, err)
	}
	p, err := tda.AllocTD()
	if err != nil {
		c.dropObject()
		return nil, wrap("alloc TD", c.dev.Name, err)
	}
	return &TD{ctx: c, prov: p}, nil
}

// Context is the context the TD belongs to.
func (td *TD) Context() *Context { return td.ctx }

// Close deallocates the thread domain (ibv_dealloc_td). While a parent domain holds it, Close fails with an
// error matching unix.EBUSY and the TD stays open.
func (td *TD) Close() error {
	if td == nil {
		return nil
	}
	return td.life.close(func() error {
		if n := td.domains.Load(); n > 0 {
			return wrap("dealloc TD", td.ctx.dev.Name, fmt.Errorf("%d parent domains still hold it: %w", n, unix.EBUSY))
		}
		if err := td.prov.Close(); err != nil {
			return wrap("dealloc TD", td.ctx.dev.Name, err)
		}
		td.ctx.dropObject()
		return nil
	})
}

// String names the TD.
func (td *TD) String() string { return "TD on " + td.ctx.dev.Name }

// ResourceType names the buffer an Allocator is asked for (the resource_type of ibv_parent_domain_init_attr's
// alloc). The values are rdma-core's MLX5DV_RES_TYPE_* (the driver id RDMA_DRIVER_MLX5 in the upper 32 bits),
// mlx5 being the provider that calls an allocator.
type ResourceType uint64

// Resource types.
const (
	ResourceQP  ResourceType = ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 1 // MLX5DV_RES_TYPE_QP: a QP's send and receive rings
	ResourceRWQ ResourceType = ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 2 // MLX5DV_RES_TYPE_RWQ: a receive work queue's ring (PD.CreateWQ)
	ResourceDBR ResourceType = ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 3 // MLX5DV_RES_TYPE_DBR: a doorbell record (goverbs' mlx5 keeps its own)
	ResourceSRQ ResourceType = ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 4 // MLX5DV_RES_TYPE_SRQ: an SRQ's ring
	ResourceCQ  ResourceType = ResourceType(abi.RDMA_DRIVER_MLX5)<<32 | 5 // MLX5DV_RES_TYPE_CQ: a CQ's ring
)

var resourceTypeNames = [...]string{"", "QP", "RWQ", "DBR", "SRQ", "CQ"}

// String names the resource as mlx5dv.h does, without its MLX5DV_RES_TYPE_ prefix ("QP"); another value
// prints as ResourceType(0x…).
func (r ResourceType) String() string {
	if r>>32 == ResourceType(abi.RDMA_DRIVER_MLX5) {
		if n := uint64(r & 0xffffffff); n != 0 && n < uint64(len(resourceTypeNames)) {
			return resourceTypeNames[n]
		}
	}
	return fmt.Sprintf("ResourceType(%#x)", uint64(r))
}

// Allocator supplies the ring buffers of the QPs, SRQs and CQs made in a parent domain
// (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS: ibv_parent_domain_init_attr's alloc and free).
//
// Alloc returns at least size bytes starting at a multiple of alignment (the provider asks for whole pages,
// page-aligned) for a buffer of type resource, or nil and a nil error to let the provider allocate it the way
// it does without an allocator (IBV_ALLOCATOR_USE_DEFAULT). An error fails the create that asked, wrapped.
// The device reads and writes that memory for as long as the object lives, so it must be outside the Go heap
// (an anonymous mapping, AllocBuffer's memory, huge pages, device memory, ...) and stay mapped until Free:
// goverbs cannot tell heap memory from other memory and does not try. What is shorter than size or misaligned
// is refused with an *AllocatorError (errors.Is(err, unix.EINVAL)), after being handed back to Free.
//
// Free takes back a buffer Alloc returned, exactly as returned, when its object is destroyed (or its create
// failed); the provider no longer touches it. pd is the parent domain. The calls come from the goroutine
// that creates or closes the object (and resizes, for a CQ).
type Allocator interface {
	Alloc(pd *PD, size, alignment int, resource ResourceType) ([]byte, error)
	Free(pd *PD, buf []byte, resource ResourceType)
}

// AllocatorError is an Allocator's buffer refused because it is shorter than asked or misaligned. It unwraps
// to unix.EINVAL.
type AllocatorError struct {
	Resource  ResourceType
	Size      int     // bytes asked for
	Alignment int     // alignment asked for
	Len       int     // bytes returned
	Addr      uintptr // where they start
}

func (e *AllocatorError) Error() string {
	return fmt.Sprintf("allocator returned %d bytes at %#x for a %v buffer of %d bytes aligned to %d: %v",
		e.Len, e.Addr, e.Resource, e.Size, e.Alignment, unix.EINVAL)
}

// Unwrap is unix.EINVAL.
func (e *AllocatorError) Unwrap() error { return unix.EINVAL }

// domainAllocator is a parent domain's Allocator as its provider calls it: the parent domain passed along, and
// what it returns checked.
type domainAllocator struct {
	pd *PD
	a  Allocator
}

func (x *domainAllocator) Alloc(size, alignment int, res provider.ResourceType) ([]byte, error) {
	r := ResourceType(res)
	b, err := x.a.Alloc(x.pd, size, alignment, r)
	if err != nil {
		return nil, fmt.Errorf("allocator for a %v buffer of %d bytes: %w", r, size, err)
	}
	if b == nil {
		return nil, nil
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if len(b) < size || (alignment > 0 && addr%uintptr(alignment) != 0) {
		x.a.Free(x.pd, b, r)
		return nil, &AllocatorError{Resource: r, Size: size, Alignment: alignment, Len: len(b), Addr: addr}
	}
	return b, nil
}

func (x *domainAllocator) Free(buf []byte, res provider.ResourceType) {
	x.a.Free(x.pd, buf, ResourceType(res))
}

// ParentDomainAttr are the attributes of AllocParentDomain (struct ibv_parent_domain_init_attr; pd_context has
// no counterpart: an Allocator carries its own state).
type ParentDomainAttr struct {
	PD        *PD       // the protection domain (required; not itself a parent domain)
	TD        *TD       // the thread domain, or nil
	Allocator Allocator // the rings' allocator, or nil for the provider's own
	// AllowCCUnprotected lets the provider allocate buffers shared with the device in confidential-computing
	// guests (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC). goverbs' mlx5 accepts it and, having no
	// confidential-computing DMA bounce support, allocates as usual, as libmlx5 does on a device without it.
	AllowCCUnprotected bool
}

// parentDomain is what a PD that is a parent domain adds.
type parentDomain struct {
	protection *PD
	td         *TD
	alloc      Allocator
	prov       provider.ParentDomain
	users      atomic.Int32 // QPs, CQs and SRQs made in it
}

// AllocParentDomain allocates a parent domain (ibv_alloc_parent_domain): a *PD that stands for attr.PD (the
// kernel sees that protection domain: MRs, AHs and MWs made in the parent domain are the protection domain's)
// and makes the QPs, SRQs and CQs (CQExAttr.ParentDomain) made in it use attr.TD and attr.Allocator. Close it
// with PD.Close. A missing or unusable PD or TD is EINVAL (ErrClosed once closed); a provider without parent
// domains (rxe) answers an error matching ErrNotSupported and unix.EOPNOTSUPP.
func (c *Context) AllocParentDomain(attr ParentDomainAttr) (*PD, error) {
	const op = "alloc parent domain"
	pda, ok := c.prov.(provider.ParentDomainAllocator)
	if !ok {
		return nil, wrap(op, c.dev.Name, fmt.Errorf("goverbs' provider for %v has no parent domains: %w",
			c.dev.DriverID, unix.EOPNOTSUPP))
	}
	switch {
	case attr.PD == nil:
		return nil, wrap(op, c.dev.Name, fmt.Errorf("no protection domain: %w", unix.EINVAL))
	case attr.PD.dom != nil:
		return nil, wrap(op, c.dev.Name, fmt.Errorf("%v is a parent domain, not a protection domain: %w", attr.PD, unix.EINVAL))
	case attr.PD.ctx != c:
		return nil, wrap(op, c.dev.Name, fmt.Errorf("%v belongs to another context: %w", attr.PD, unix.EINVAL))
	case attr.TD != nil && attr.TD.ctx != c:
		return nil, wrap(op, c.dev.Name, fmt.Errorf("%v belongs to another context: %w", attr.TD, unix.EINVAL))
	}
	// Entered, the PD and TD stay open until their counts include this parent domain: their Close waits.
	if err := attr.PD.enter(); err != nil {
		return nil, wrap(op, c.dev.Name, fmt.Errorf("protection domain: %w", err))
	}
	defer attr.PD.exit()
	if attr.TD != nil {
		if err := attr.TD.enter(); err != nil {
			return nil, wrap(op, c.dev.Name, fmt.Errorf("thread domain: %w", err))
		}
		defer attr.TD.exit()
	}
	if err := c.addObject(); err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	pd := &PD{ctx: c, handle: attr.PD.handle}
	pd.dom = &parentDomain{protection: attr.PD, td: attr.TD, alloc: attr.Allocator}
	p := provider.ParentDomainParams{PD: attr.PD.prov}
	if attr.TD != nil {
		p.TD = attr.TD.prov
	}
	if attr.Allocator != nil {
		p.Alloc = &domainAllocator{pd: pd, a: attr.Allocator}
		p.Mask |= provider.ParentDomainAllocators
	}
	if attr.AllowCCUnprotected {
		p.Mask |= provider.ParentDomainAllowCCUnprotected
	}
	prov, err := pda.AllocParentDomain(p)
	if err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, err, "%s (PD %#x, TD %v, allocator %v, mask %v)", op, attr.PD.handle,
			attr.TD != nil, attr.Allocator != nil, parentDomainMask(p.Mask))
	}
	pd.prov, pd.dom.prov = prov, prov
	attr.PD.domains.Add(1)
	if attr.TD != nil {
		attr.TD.domains.Add(1)
	}
	return pd, nil
}

type parentDomainMask provider.ParentDomainMask

var parentDomainMaskNames = [...]string{"ALLOCATORS", "PD_CONTEXT", "ALLOW_CC_UNPROTECTED_ALLOC"}

func (m parentDomainMask) String() string { return enumstr.Flags(parentDomainMaskNames[:], uint64(m)) }

// IsParentDomain reports whether the PD is a parent domain (made by AllocParentDomain).
func (pd *PD) IsParentDomain() bool { return pd.dom != nil }

// Protection is the protection domain: the PD a parent domain was made on, or pd itself.
func (pd *PD) Protection() *PD {
	if pd.dom != nil {
		return pd.dom.protection
	}
	return pd
}

// TD is a parent domain's thread domain: nil for a PD, or a parent domain made without one.
func (pd *PD) TD() *TD {
	if pd.dom != nil {
		return pd.dom.td
	}
	return nil
}

// closeDomain is Close of a parent domain: no kernel object, only the books and the provider's release.
func (pd *PD) closeDomain() error {
	d := pd.dom
	return pd.life.close(func() error {
		if n := d.users.Load(); n > 0 {
			return wrapf(pd.ctx.dev.Name, fmt.Errorf("%d QPs, CQs or SRQs made in it are still open: %w", n, unix.EBUSY),
				"dealloc parent domain of PD %#x", pd.handle)
		}
		if err := d.prov.Close(); err != nil {
			return wrapf(pd.ctx.dev.Name, err, "dealloc parent domain of PD %#x", pd.handle)
		}
		d.protection.domains.Add(-1)
		if d.td != nil {
			d.td.domains.Add(-1)
		}
		pd.ctx.dropObject()
		return nil
	})
}

// enterDomain admits the creation of an object in pd: for a parent domain it returns the provider's parent
// domain, and the parent domain stays open until exitDomain, which counts the object when made; for a PD it
// returns nil and exitDomain does nothing.
func (pd *PD) enterDomain() (provider.ParentDomain, error) {
	if pd.dom == nil {
		return nil, nil
	}
	if err := pd.enter(); err != nil {
		return nil, fmt.Errorf("parent domain: %w", err)
	}
	return pd.dom.prov, nil
}

func (pd *PD) exitDomain(made bool) {
	if pd.dom == nil {
		return
	}
	if made {
		pd.dom.users.Add(1)
	}
	pd.exit()
}

// dropUser uncounts an object made in pd (a QP, CQ or SRQ closed).
func (pd *PD) dropUser() {
	if pd != nil && pd.dom != nil {
		pd.dom.users.Add(-1)
	}
}
