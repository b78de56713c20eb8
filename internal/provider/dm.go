package provider

import "github.com/goverbs/goverbs/rawcmd"

// Device memory (libibverbs' ibv_alloc_dm, ibv_memcpy_to_dm, ibv_memcpy_from_dm, ibv_reg_dm_mr). An optional
// provider operation: a Context that does not implement DMAllocator has none, and the core answers EOPNOTSUPP
// without asking the kernel, as libibverbs does for a provider without the alloc_dm op (rxe, siw).
//
// The core owns DM_ALLOC, DM_FREE and the DM MR's MR_DM_REG; the provider adds its driver attributes to
// DM_ALLOC (mlx5: the type, and the page and offset of the memory in its outputs), maps the memory and copies
// to and from it.

// DMParams is the core's DM_ALLOC request (struct ibv_alloc_dm_attr without comp_mask), with the device's
// limit.
type DMParams struct {
	Length   uint64
	LogAlign uint32 // log2 of the alignment asked for
	// MaxSize is the device's max_dm_size (the extended QUERY_DEVICE's); 0 where the device reports none.
	MaxSize uint64
}

// AllocDMCmd issues the core's DM_ALLOC with the provider's driver attributes: driver adds them to the
// command before it is sent (outputs through pointers the provider owns, read after a nil return). It returns
// the kernel's error; on success the core holds the kernel's handle and frees the object if the provider then
// fails.
type AllocDMCmd func(driver func(cmd *rawcmd.Cmd)) error

// DM is a provider's device memory.
type DM interface {
	// CopyTo copies src into the device memory at offset (memcpy_to_dm); CopyFrom copies from it into dst
	// (memcpy_from_dm). Each returns the provider's refusal (mlx5: EFAULT past the end, EINVAL unaligned).
	CopyTo(offset uint64, src []byte) error
	CopyFrom(dst []byte, offset uint64) error
	// RegMRAccess checks the access rights of an MR on the memory (the provider's reg_dm_mr checks).
	RegMRAccess(access uint32) error
	// Freed is called after the kernel freed the memory: release the mapping.
	Freed()
}

// DMAllocator is implemented by a Context whose provider has device memory (the alloc_dm op).
type DMAllocator interface {
	AllocDM(p DMParams, alloc AllocDMCmd) (DM, error)
}

// QueryDMCmd issues a provider's query of an existing DM (ibv_import_dm): the provider builds cmd completely,
// its driver id and method included, and reads its outputs after a nil return. The query creates no object.
type QueryDMCmd func(cmd *rawcmd.Cmd) error

// ImportedDM is device memory another context allocated, as the provider imported it: its length, from the
// provider's query, with the DM.
type ImportedDM struct {
	DM     DM
	Length uint64
}

// DMImporter is implemented by a Context whose provider can import device memory by its handle (the
// import_dm op). ImportDM asks the kernel about the DM with query and maps it; the DM's Freed releases the
// mapping when the importer forgets it (unimport_dm: no command).
type DMImporter interface {
	ImportDM(handle uint32, query QueryDMCmd) (ImportedDM, error)
}
