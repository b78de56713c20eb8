package uverbs

import "github.com/goverbs/goverbs/internal/enumstr"

// DeviceCap is a device's capability flags (enum ib_uverbs_device_cap_flags, ibv_device_attr_ex's
// device_cap_flags_ex): the low 32 bits come from the base QUERY_DEVICE response, all 64 from the extended one.
// The values are the kernel uAPI's; those after Linux 6.1 (whose headers the generated ABI follows) are written
// out here.
type DeviceCap uint64

// Device capability flags.
const (
	DeviceCapResizeMaxWR         DeviceCap = 1 << 0
	DeviceCapBadPKeyCntr         DeviceCap = 1 << 1
	DeviceCapBadQKeyCntr         DeviceCap = 1 << 2
	DeviceCapRawMulti            DeviceCap = 1 << 3
	DeviceCapAutoPathMig         DeviceCap = 1 << 4
	DeviceCapChangePhyPort       DeviceCap = 1 << 5
	DeviceCapUDAVPortEnforce     DeviceCap = 1 << 6
	DeviceCapCurrQPStateMod      DeviceCap = 1 << 7
	DeviceCapShutdownPort        DeviceCap = 1 << 8
	DeviceCapPortActiveEvent     DeviceCap = 1 << 10
	DeviceCapSysImageGUID        DeviceCap = 1 << 11
	DeviceCapRCRNRNAKGen         DeviceCap = 1 << 12
	DeviceCapSRQResize           DeviceCap = 1 << 13
	DeviceCapNNotifyCQ           DeviceCap = 1 << 14
	DeviceCapMemWindow           DeviceCap = 1 << 17
	DeviceCapUDIPCsum            DeviceCap = 1 << 18
	DeviceCapXRC                 DeviceCap = 1 << 20
	DeviceCapMemMgtExtensions    DeviceCap = 1 << 21
	DeviceCapMemWindowType2A     DeviceCap = 1 << 23
	DeviceCapMemWindowType2B     DeviceCap = 1 << 24
	DeviceCapRCIPCsum            DeviceCap = 1 << 25
	DeviceCapRawIPCsum           DeviceCap = 1 << 26
	DeviceCapManagedFlowSteering DeviceCap = 1 << 29
	DeviceCapRawScatterFCS       DeviceCap = 1 << 34
	DeviceCapPCIWriteEndPadding  DeviceCap = 1 << 36
	DeviceCapFlushGlobal         DeviceCap = 1 << 38 // RDMA FLUSH with global visibility (Linux 6.2+)
	DeviceCapFlushPersistent     DeviceCap = 1 << 39 // RDMA FLUSH to persistence (Linux 6.2+)
	DeviceCapAtomicWrite         DeviceCap = 1 << 40 // RDMA ATOMIC WRITE (Linux 6.2+)
	DeviceCapCCDMABounce         DeviceCap = 1 << 41 // confidential-computing guest: DMA bounce buffering
	deviceCapFlushAny                      = DeviceCapFlushGlobal | DeviceCapFlushPersistent
)

var deviceCapNames = [...]string{0: "RESIZE_MAX_WR", 1: "BAD_PKEY_CNTR", 2: "BAD_QKEY_CNTR", 3: "RAW_MULTI",
	4: "AUTO_PATH_MIG", 5: "CHANGE_PHY_PORT", 6: "UD_AV_PORT_ENFORCE", 7: "CURR_QP_STATE_MOD", 8: "SHUTDOWN_PORT",
	10: "PORT_ACTIVE_EVENT", 11: "SYS_IMAGE_GUID", 12: "RC_RNR_NAK_GEN", 13: "SRQ_RESIZE", 14: "N_NOTIFY_CQ",
	17: "MEM_WINDOW", 18: "UD_IP_CSUM", 20: "XRC", 21: "MEM_MGT_EXTENSIONS", 23: "MEM_WINDOW_TYPE_2A",
	24: "MEM_WINDOW_TYPE_2B", 25: "RC_IP_CSUM", 26: "RAW_IP_CSUM", 29: "MANAGED_FLOW_STEERING",
	34: "RAW_SCATTER_FCS", 36: "PCI_WRITE_END_PADDING", 38: "FLUSH_GLOBAL", 39: "FLUSH_PERSISTENT",
	40: "ATOMIC_WRITE", 41: "CC_DMA_BOUNCE"}

// String names the set flags ("RESIZE_MAX_WR|PORT_ACTIVE_EVENT"); unnamed bits print in hex.
func (c DeviceCap) String() string { return enumstr.Flags(deviceCapNames[:], uint64(c)) }
