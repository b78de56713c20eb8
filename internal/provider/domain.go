package provider

// Thread domains and parent domains (libibverbs' ibv_alloc_td and ibv_alloc_parent_domain). Both are optional
// provider operations: a Context that does not implement TDAllocator or ParentDomainAllocator has neither, and
// the core answers EOPNOTSUPP, as libibverbs does for a provider without the alloc_td or alloc_parent_domain op.
//
// The core keeps the books every provider shares (a TD cannot be closed while a parent domain holds it, a
// parent domain while a QP, CQ or SRQ made in it is open, a protection domain while a parent domain holds it)
// and refuses with EBUSY before it calls the provider. A provider may keep its own counts as well (mlx5 does,
// as libmlx5 does), and refuse with EBUSY too.

// TD is a provider's thread domain (struct ibv_td): the promise that the objects made in it are used by one
// thread at a time, so the provider may drop their locks, and resources the provider dedicates to it (mlx5: a
// BlueFlame register of its own, shared by the TD's QPs).
type TD interface {
	// Close releases the thread domain (ibv_dealloc_td). The core calls it once no parent domain holds the TD.
	Close() error
}

// TDAllocator is implemented by a Context whose provider has thread domains (the provider's alloc_td op).
type TDAllocator interface {
	AllocTD() (TD, error)
}

// ResourceType names the buffer a parent domain's allocator is asked for (the resource_type argument of
// ibv_parent_domain_init_attr.alloc: rdma-core's MLX5DV_RES_TYPE_* for mlx5).
type ResourceType uint64

// Allocator is a parent domain's buffer allocator, as the provider calls it (the core adapts the caller's).
type Allocator interface {
	// Alloc returns at least size bytes, starting at a multiple of alignment, outside the Go heap, for a
	// resource of type res; or nil and a nil error for "use your default allocation"
	// (IBV_ALLOCATOR_USE_DEFAULT). The core has checked the length and the alignment of what it returns.
	Alloc(size, alignment int, res ResourceType) ([]byte, error)
	// Free takes back a buffer Alloc returned, exactly as Alloc returned it.
	Free(buf []byte, res ResourceType)
}

// ParentDomainMask are the optional fields of a parent domain's request (enum
// ibv_parent_domain_init_attr_mask), as libibverbs passes them to its provider in comp_mask.
type ParentDomainMask uint32

// Parent-domain request fields.
const (
	ParentDomainAllocators         ParentDomainMask = 1 << 0 // IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS
	ParentDomainPDContext          ParentDomainMask = 1 << 1 // IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT
	ParentDomainAllowCCUnprotected ParentDomainMask = 1 << 2 // IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC
)

// ParentDomainParams is the request of AllocParentDomain (struct ibv_parent_domain_init_attr).
type ParentDomainParams struct {
	PD    PD               // the protection domain's provider object (never nil: the core checks)
	TD    TD               // the thread domain's provider object, or nil
	Alloc Allocator        // set when Mask has ParentDomainAllocators
	Mask  ParentDomainMask // which optional fields are set
}

// ParentDomain is a provider's parent domain: a PD (its PDN is the protection domain's) that carries a thread
// domain and an allocator for the objects made in it.
type ParentDomain interface {
	PD
	// Close releases the parent domain (ibv_dealloc_pd on a parent domain). The core calls it once no QP, CQ
	// or SRQ made in it is open.
	Close() error
}

// ParentDomainAllocator is implemented by a Context whose provider has parent domains (the provider's
// alloc_parent_domain op). QPParams, CQParams and SRQParams name the parent domain an object is made in.
type ParentDomainAllocator interface {
	AllocParentDomain(p ParentDomainParams) (ParentDomain, error)
}
