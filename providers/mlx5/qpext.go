package mlx5

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"golang.org/x/sys/unix"
)

// The optional verbs libmlx5 has and the core reaches through internal/provider's optional interfaces, each
// as libmlx5 does it (providers/mlx5/verbs.c and mlx5.c of rdma-core):
//
//   - ECE (mlx5_set_ece, mlx5_query_ece): a context whose GET_CONTEXT response has
//     MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE asks for ECE version 1 in every QP_CREATE and keeps the options the
//     response returns. SetECE checks the vendor (Mellanox only: EINVAL), then the context's support
//     (EOPNOTSUPP), records the options and forgets the last answer; the next modify of the QP is the extended
//     MODIFY_QP with those options in its driver request, and its driver response's options become the QP's.
//     QueryECE answers the Mellanox vendor id and the last options, 0 on a device without ECE.
//   - The rate limit (mlx5_modify_qp_rate_limit): the extended MODIFY_QP with IB_QP_RATE_LIMIT and the burst
//     information in the driver request. A burst or packet size is EINVAL without a rate or without the
//     device's MLX5_IB_PP_SUPPORT_BURST, which libmlx5 reads from the extended QUERY_DEVICE's driver response
//     at context creation; goverbs' mlx5 does not issue that query, so it never knows the device has burst
//     support and refuses burst and packet sizes on every device (a rate alone is sent as libmlx5 sends it).
//   - The device clock (mlx5_query_rt_values): a context whose response has
//     MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET maps the clock page read-only at context creation
//     (a failed mapping leaves the context without a clock, as libmlx5 only warns); the read takes no system
//     call. Without the page: EOPNOTSUPP.
//   - The null MR (mlx5_alloc_null_mr): the dump-fill mkey of the GET_CONTEXT response
//     (MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY); no kernel command. Without it: EOPNOTSUPP (libmlx5's
//     ENOTSUP, the same errno on Linux).

// setOptional records what the GET_CONTEXT response offers besides the queues, and maps the clock page.
func (c *mctx) setOptional(resp *abi.Mlx5IbAllocUcontextResp) {
	c.ece = resp.CompMask&abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE != 0
	if resp.CompMask&abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY != 0 {
		c.nullKey, c.hasNullKey = resp.DumpFillMkey, true
	}
	if resp.CompMask&abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET != 0 {
		page, err := c.sys.mapClock(c.dev.FD, hw.ClockMmapOffset(c.dev.PageSize), c.dev.PageSize)
		if err != nil {
			return // libmlx5: "timestamp available, but failed to mmap() hca core clock page", and no clock
		}
		clk, err := hw.NewClock(page, resp.HcaCoreClockOffset)
		if err != nil {
			c.sys.unmap(page)
			return
		}
		c.clock, c.clockPage = clk, page
	}
}

// ReadClock implements provider.ClockReader (mlx5_read_clock).
func (c *mctx) ReadClock() (uint64, error) {
	if c.clock == nil {
		return 0, fmt.Errorf("mlx5: read HCA core clock on %s: the kernel mapped no clock page: %w", c.dev.Name, unix.EOPNOTSUPP)
	}
	return c.clock.Read(), nil
}

// NullMRKey implements provider.NullMRAllocator (mlx5_alloc_null_mr).
func (c *mctx) NullMRKey() (uint32, error) {
	if !c.hasNullKey {
		return 0, fmt.Errorf("mlx5: null MR on %s: the kernel reported no dump-fill mkey: %w", c.dev.Name, unix.EOPNOTSUPP)
	}
	return c.nullKey, nil
}

// SetECE implements provider.ECEQP (mlx5_set_ece).
func (q *qpAdapter) SetECE(e provider.ECE) error {
	if e.VendorID != vendorMellanox {
		return fmt.Errorf("mlx5: set ECE: vendor %#x is not Mellanox's %#x: %w", e.VendorID, vendorMellanox, errInvalid)
	}
	if !q.ctx.ece {
		return fmt.Errorf("mlx5: set ECE: the kernel reports no ECE support: %w", unix.EOPNOTSUPP)
	}
	q.setECE.Store(e.Options)
	q.getECE.Store(0) // the last answer is stale once new options are asked for
	return nil
}

// QueryECE implements provider.ECEQP (mlx5_query_ece).
func (q *qpAdapter) QueryECE() (provider.ECE, error) {
	return provider.ECE{VendorID: vendorMellanox, Options: q.getECE.Load()}, nil
}

// Modify implements provider.QPModifier (mlx5_modify_qp): the legacy command, or the extended one while ECE
// options are pending, whose answer becomes the QP's options.
func (q *qpAdapter) Modify(modify provider.ModifyQP) error {
	set := q.setECE.Load()
	if set == 0 {
		return modify(false, nil, nil)
	}
	req := hw.ModifyQPECEReq(set)
	var resp abi.Mlx5IbModifyQpResp
	if err := modify(true, bytesOf(&req), bytesOf(&resp)); err != nil {
		return err
	}
	q.setECE.Store(0)
	q.getECE.Store(resp.EceOptions)
	return nil
}

// SetRateLimit implements provider.RateLimiter (mlx5_modify_qp_rate_limit).
func (q *qpAdapter) SetRateLimit(r provider.RateLimit, modify provider.ModifyQP) error {
	if (r.MaxBurstSize != 0 || r.TypicalPacketSize != 0) && (r.Rate == 0 || !q.ctx.ppBurst) {
		return fmt.Errorf("mlx5: rate limit: burst %d bytes, typical packet %d bytes need a rate and the device's burst support (known: %v): %w",
			r.MaxBurstSize, r.TypicalPacketSize, q.ctx.ppBurst, errInvalid)
	}
	req := hw.RateLimitReq(r.MaxBurstSize, r.TypicalPacketSize)
	return modify(true, bytesOf(&req), nil)
}

// vendorMellanox is PCI_VENDOR_ID_MELLANOX, the vendor id of mlx5's ECE options.
const vendorMellanox = 0x15b3
