package provider

import "github.com/goverbs/goverbs/rawcmd"

// Memory registered from a dma-buf (libibverbs' ibv_reg_dmabuf_mr). An optional provider operation: a Context
// that does not implement DmabufMRRegistrar has none, and the core answers EOPNOTSUPP without asking the
// kernel, as libibverbs does for a provider without the reg_dmabuf_mr op (rxe, siw).
//
// The core owns the REG_DMABUF_MR command; the provider may add driver attributes to it (libmlx5 adds none).

// DmabufMRParams is the core's REG_DMABUF_MR request.
type DmabufMRParams struct {
	Offset uint64 // into the dma-buf
	Length uint64
	IOVA   uint64
	FD     int    // the dma-buf's file descriptor
	Access uint32 // IB_UVERBS_ACCESS_*
}

// RegDmabufMRCmd issues the core's REG_DMABUF_MR with the provider's driver attributes (driver may be nil: none).
// It returns the kernel's error; on success the core holds the new MR.
type RegDmabufMRCmd func(driver func(cmd *rawcmd.Cmd)) error

// DmabufMRRegistrar is implemented by a Context whose provider registers dma-buf memory (the reg_dmabuf_mr op).
type DmabufMRRegistrar interface {
	RegDmabufMR(p DmabufMRParams, reg RegDmabufMRCmd) error
}
