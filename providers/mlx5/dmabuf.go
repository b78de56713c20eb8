package mlx5

import "github.com/goverbs/goverbs/internal/provider"

// Memory registered from a dma-buf as libmlx5 registers it (mlx5_reg_dmabuf_mr): the core's REG_DMABUF_MR as
// it is, no driver attributes and no check of the rights (the kernel checks them).

// RegDmabufMR implements provider.DmabufMRRegistrar.
func (c *mctx) RegDmabufMR(p provider.DmabufMRParams, reg provider.RegDmabufMRCmd) error {
	return reg(nil)
}

var _ provider.DmabufMRRegistrar = (*mctx)(nil)
