package abi

// RDMA netlink values newer than the uAPI headers the generator reads
// (linux-libc-dev 6.1). Values from include/uapi/rdma/rdma_netlink.h of
// Linux 7.3.4 (Debian's linux-libc-dev 7.3.4-1~bpo13+1); an enum grows only
// at its end, so they hold on every kernel that has them, and a kernel
// without them never sends them.
const (
	RDMA_NL_GROUP_NOTIFY = 0x4 // multicast group of RDMA_NLDEV_CMD_MONITOR events (6.12)

	RDMA_NLDEV_CMD_RES_SRQ_GET_RAW = 0x19 // driver's raw SRQ dump (absent in 6.1: EINVAL)
	RDMA_NLDEV_CMD_NEWDEV          = 0x1a // sub-device (SMI) add (6.11)
	RDMA_NLDEV_CMD_DELDEV          = 0x1b
	RDMA_NLDEV_CMD_MONITOR         = 0x1c // device events on RDMA_NL_GROUP_NOTIFY (6.12)
	RDMA_NLDEV_CMD_FRMR_POOLS_GET  = 0x1d
	RDMA_NLDEV_CMD_FRMR_POOLS_SET  = 0x1e

	RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE        = 0x60 // u8 (6.7; Debian 6.1.190+)
	RDMA_NLDEV_ATTR_DRIVER_DETAILS                  = 0x61 // u8
	RDMA_NLDEV_ATTR_RES_SUBTYPE                     = 0x62 // string
	RDMA_NLDEV_ATTR_DEV_TYPE                        = 0x63 // u8
	RDMA_NLDEV_ATTR_PARENT_NAME                     = 0x64 // string
	RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE                = 0x65 // u8
	RDMA_NLDEV_ATTR_EVENT_TYPE                      = 0x66 // u8, enum rdma_nl_notify_event_type
	RDMA_NLDEV_SYS_ATTR_MONITOR_MODE                = 0x67 // u8
	RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED          = 0x68 // u8
	RDMA_NLDEV_ATTR_FRMR_POOLS                      = 0x69 // nested table (7.1)
	RDMA_NLDEV_ATTR_FRMR_POOL_ENTRY                 = 0x6a // nested
	RDMA_NLDEV_ATTR_FRMR_POOL_KEY                   = 0x6b // nested
	RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS               = 0x6c // u8
	RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS      = 0x6d // u32
	RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY        = 0x6e // u64
	RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS    = 0x6f // u64
	RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES         = 0x70 // u32
	RDMA_NLDEV_ATTR_FRMR_POOL_MAX_IN_USE            = 0x71 // u64
	RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE                = 0x72 // u64
	RDMA_NLDEV_ATTR_FRMR_POOLS_AGING_PERIOD         = 0x73 // u32
	RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES        = 0x74 // u32
	RDMA_NLDEV_ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY = 0x75 // u64
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX           = 0x76 // u64 (7.3)
)

// enum rdma_nl_notify_event_type: the RDMA_NLDEV_ATTR_EVENT_TYPE of a monitor event.
const (
	RDMA_REGISTER_EVENT      = 0x0
	RDMA_UNREGISTER_EVENT    = 0x1
	RDMA_NETDEV_ATTACH_EVENT = 0x2
	RDMA_NETDEV_DETACH_EVENT = 0x3
	RDMA_RENAME_EVENT        = 0x4
	RDMA_NETDEV_RENAME_EVENT = 0x5
)
