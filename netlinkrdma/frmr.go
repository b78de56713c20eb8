package netlinkrdma

import (
	"errors"

	"github.com/goverbs/goverbs/abi"
)

// FRMRPoolKey identifies a pool of fast-registration MRs: MRs of one pool
// are interchangeable (same vendor key, size in DMA blocks, access flags and
// ATS setting).
type FRMRPoolKey struct {
	VendorKey    uint64 // RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY
	NumDMABlocks uint64 // RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS
	AccessFlags  uint32 // RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS
	ATS          bool   // RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS
	// KernelVendorKey is the driver's internal key (read only).
	KernelVendorKey uint64
	// Present records which key attributes the kernel sent.
	Present AttrSet
}

// FRMRPool is one pool of a device's kernel FRMR pools
// (RDMA_NLDEV_CMD_FRMR_POOLS_GET, Linux 7.1+; drivers that keep pools, not
// rxe). HasKey is false when the kernel sent no key.
type FRMRPool struct {
	ResBase
	Key           FRMRPoolKey
	HasKey        bool
	QueueHandles  uint32 // MRs queued in the pool
	InUse         uint64
	MaxInUse      uint64
	PinnedHandles uint32 // MRs kept in the pool regardless of aging
}

func (f *FRMRPool) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY:
		f.HasKey = true
		ad.Nested(func(k *attrDecoder) {
			k.each(&f.Key.Present, func(k *attrDecoder) {
				switch k.Type() {
				case abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS:
					f.Key.ATS = k.Uint8() != 0
				case abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS:
					f.Key.AccessFlags = k.Uint32()
				case abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY:
					f.Key.VendorKey = k.Uint64()
				case abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS:
					f.Key.NumDMABlocks = k.Uint64()
				case abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY:
					f.Key.KernelVendorKey = k.Uint64()
				}
			})
		})
	case abi.RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES:
		f.QueueHandles = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE:
		f.InUse = ad.Uint64()
	case abi.RDMA_NLDEV_ATTR_FRMR_POOL_MAX_IN_USE:
		f.MaxInUse = ad.Uint64()
	case abi.RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES:
		f.PinnedHandles = ad.Uint32()
	}
}

func (f *FRMRPool) check() error { return nil }

var frmrPoolKind = resKind{"frmr_pools", abi.RDMA_NLDEV_CMD_FRMR_POOLS_GET, 0,
	abi.RDMA_NLDEV_ATTR_FRMR_POOLS, abi.RDMA_NLDEV_ATTR_FRMR_POOL_ENTRY, 0}

// FRMRPools lists the FRMR pools of a device. Kernels before 7.1 answer
// EOPNOTSUPP or EINVAL.
//
// Equivalent to: rdma resource show frmr_pools dev DEV
func (c *Conn) FRMRPools(q ResQuery) ([]FRMRPool, error) {
	return listRes[FRMRPool](c, frmrPoolKind, q)
}

// ErrZeroAging is returned for an aging period of 0, which the kernel
// does not support.
var ErrZeroAging = errors.New("netlinkrdma: an FRMR pool aging period of 0 is not supported")

// SetFRMRPoolAging sets the period (in seconds) after which unused MRs leave
// the device's FRMR pools.
//
// Equivalent to: rdma resource set frmr_pools dev DEV aging PERIOD
func (c *Conn) SetFRMRPoolAging(devIndex, period uint32) error {
	if period == 0 {
		return opErr("set frmr pool aging of device", ResQuery{DevIndex: devIndex}.object(), ErrZeroAging)
	}
	e := devAttrs(devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_FRMR_POOLS_AGING_PERIOD, period)
	return opErr("set frmr pool aging of device", ResQuery{DevIndex: devIndex}.object(),
		c.doit(abi.RDMA_NLDEV_CMD_FRMR_POOLS_SET, e.Encode(), nil))
}

// SetFRMRPoolPinned sets how many MRs the pool with key k keeps however
// long they are unused.
//
// Equivalent to: rdma resource set frmr_pools dev DEV pinned KEY VALUE
func (c *Conn) SetFRMRPoolPinned(devIndex uint32, k FRMRPoolKey, pinned uint32) error {
	e := devAttrs(devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES, pinned)
	e.Nested(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY, func(ke *attrEncoder) {
		ke.Bool(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS, k.ATS)
		ke.Uint32(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS, k.AccessFlags)
		ke.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY, k.VendorKey)
		ke.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS, k.NumDMABlocks)
	})
	return opErr("set frmr pool pinned count of device", ResQuery{DevIndex: devIndex}.object(),
		c.doit(abi.RDMA_NLDEV_CMD_FRMR_POOLS_SET, e.Encode(), nil))
}
