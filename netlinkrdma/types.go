package netlinkrdma

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/verbs"
)

// GUID is a 64-bit InfiniBand GUID (node GUID, system image GUID, subnet
// prefix) as the kernel sends it over netlink: a u64 in host byte order whose
// most significant byte is the first byte of the GUID on the wire.
type GUID uint64

// String formats g the way iproute2's rdma tool and sysfs do: four groups of
// four hex digits, most significant first ("0002:c903:00a1:b2c3").
func (g GUID) String() string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", uint16(g>>48), uint16(g>>32), uint16(g>>16), uint16(g))
}

// ParseGUID parses the form String prints and sysfs shows: four groups of one
// to four hex digits separated by colons, most significant first
// ("0002:c903:00a1:b2c3").
func ParseGUID(s string) (GUID, error) {
	var g GUID
	rest := s
	for i := 0; i < 4; i++ {
		group := rest
		if i < 3 {
			var ok bool
			group, rest, ok = strings.Cut(rest, ":")
			if !ok {
				return 0, fmt.Errorf("netlinkrdma: GUID %q: want four groups of hex digits separated by ':'", s)
			}
		}
		if len(group) == 0 || len(group) > 4 {
			return 0, fmt.Errorf("netlinkrdma: GUID %q: group %q is not 1 to 4 hex digits", s, group)
		}
		v, err := strconv.ParseUint(group, 16, 16)
		if err != nil {
			return 0, fmt.Errorf("netlinkrdma: GUID %q: group %q is not 1 to 4 hex digits", s, group)
		}
		g = g<<16 | GUID(v)
	}
	return g, nil
}

// NodeType is the RDMA node type of a device (kernel enum rdma_node_type).
type NodeType uint8

// Node types as numbered by the kernel's enum rdma_node_type (include/rdma/
// ib_verbs.h; not part of the uapi headers).
const (
	NodeTypeUnknown NodeType = iota
	NodeTypeCA
	NodeTypeSwitch
	NodeTypeRouter
	NodeTypeRNIC
	NodeTypeUSNIC
	NodeTypeUSNICUDP
	NodeTypeUnspecified
)

var nodeTypeNames = [...]string{"unknown", "ca", "switch", "router", "rnic", "usnic", "usnic_udp", "unspecified"}

// String returns iproute2's name for t ("ca", "rnic", ...; "unknown" for
// values it does not know).
func (t NodeType) String() string {
	if int(t) < len(nodeTypeNames) {
		return nodeTypeNames[t]
	}
	return "unknown"
}

// bitNames returns the names of the set bits of v, lowest first, with
// "UNKNOWN" for bits without a name (iproute2's convention).
func bitNames(v uint64, names []string) []string {
	var out []string
	for i := 0; v != 0; i++ {
		if v&1 != 0 {
			n := "UNKNOWN"
			if i < len(names) && names[i] != "" {
				n = names[i]
			}
			out = append(out, n)
		}
		v >>= 1
	}
	return out
}

// DeviceCaps is a device's capability mask (RDMA_NLDEV_ATTR_CAP_FLAGS on a
// device: the kernel's device_cap_flags).
type DeviceCaps uint64

// deviceCapNames are iproute2 6.1's names for the device capability bits.
var deviceCapNames = []string{
	0: "RESIZE_MAX_WR", 1: "BAD_PKEY_CNTR", 2: "BAD_QKEY_CNTR", 3: "RAW_MULTI",
	4: "AUTO_PATH_MIG", 5: "CHANGE_PHY_PORT", 6: "UD_AV_PORT_ENFORCE_PORT_ENFORCE",
	7: "CURR_QP_STATE_MOD", 8: "SHUTDOWN_PORT", 9: "INIT_TYPE", 10: "PORT_ACTIVE_EVENT",
	11: "SYS_IMAGE_GUID", 12: "RC_RNR_NAK_GEN", 13: "SRQ_RESIZE", 14: "N_NOTIFY_CQ",
	15: "LOCAL_DMA_LKEY", 17: "MEM_WINDOW", 18: "UD_IP_CSUM", 19: "UD_TSO", 20: "XRC",
	21: "MEM_MGT_EXTENSIONS", 22: "BLOCK_MULTICAST_LOOPBACK", 23: "MEM_WINDOW_TYPE_2A",
	24: "MEM_WINDOW_TYPE_2B", 25: "RC_IP_CSUM", 26: "RAW_IP_CSUM", 27: "CROSS_CHANNEL",
	29: "MANAGED_FLOW_STEERING", 30: "SIGNATURE_HANDOVER", 31: "ON_DEMAND_PAGING",
	// iproute2 numbers the high flags from the end of the low table (32).
	32: "SG_GAPS_REG", 33: "VIRTUAL_FUNCTION", 34: "RAW_SCATTER_FCS",
	35: "RDMA_NETDEV_OPA_VNIC", 36: "PCI_WRITE_END_PADDING",
}

// Names returns iproute2's names of the set bits, lowest bit first.
func (c DeviceCaps) Names() []string { return bitNames(uint64(c), deviceCapNames) }

// String joins Names with "|" ("0" for none).
func (c DeviceCaps) String() string { return capString(c.Names()) }

// PortCaps is a port's capability mask (RDMA_NLDEV_ATTR_CAP_FLAGS on a port:
// CapabilityMask in the low 32 bits, CapabilityMask2 above).
type PortCaps uint64

var portCapNames = []string{
	0: "RESERVED", 1: "SM", 2: "NOTICE", 3: "TRAP", 4: "OPT_IPD", 5: "AUTO_MIGR",
	6: "SL_MAP", 7: "MKEY_NVRAM", 8: "PKEY_NVRAM", 9: "LED_INFO", 10: "SM_DISABLED",
	11: "SYS_IMAGE_GUID", 12: "PKEY_SW_EXT_PORT_TRAP", 13: "CABLE_INFO",
	14: "EXTENDED_SPEEDS", 15: "CAP_MASK2", 16: "CM", 17: "SNMP_TUNNEL", 18: "REINIT",
	19: "DEVICE_MGMT", 20: "VENDOR_CLASS", 21: "DR_NOTICE", 22: "CAP_MASK_NOTICE",
	23: "BOOT_MGMT", 24: "LINK_LATENCY", 25: "CLIENT_REG", 26: "OTHER_LOCAL_CHANGES",
	27: "LINK_SPPED_WIDTH", 28: "VENDOR_SPECIFIC_MADS", 29: "MULT_PKER_TRAP",
	30: "MULT_FDB", 31: "HIERARCHY_INFO",
	32: "SET_NODE_DESC", 33: "EXT_INFO", 34: "VIRT", 35: "SWITCH_POR_STATE_TABLE",
	36: "LINK_WIDTH_2X", 37: "LINK_SPEED_HDR",
}

// Names returns iproute2's names of the set bits, lowest bit first.
func (c PortCaps) Names() []string { return bitNames(uint64(c), portCapNames) }

// String joins Names with "|" ("0" for none).
func (c PortCaps) String() string { return capString(c.Names()) }

func capString(names []string) string {
	if len(names) == 0 {
		return "0"
	}
	return strings.Join(names, "|")
}

// PortState is a port's logical state and PortPhysState its physical state: package verbs' types, which the
// verbs core (uverbs.PortAttr) reports too. Their String gives the name without prefix ("ACTIVE", "LINK_UP");
// a value without a name prints as "PortState(9)", where iproute2 prints "UNKNOWN".
type (
	PortState     = verbs.PortState
	PortPhysState = verbs.PortPhysState
)

// Port states (kernel enum ib_port_state).
const (
	PortStateNOP         = verbs.PortNOP
	PortStateDown        = verbs.PortDown
	PortStateInit        = verbs.PortInit
	PortStateArmed       = verbs.PortArmed
	PortStateActive      = verbs.PortActive
	PortStateActiveDefer = verbs.PortActiveDefer
)

// Physical port states (kernel enum ib_port_phys_state).
const (
	PhysStateNOP       = verbs.PhysStateNOP
	PhysStateSleep     = verbs.PhysStateSleep
	PhysStatePolling   = verbs.PhysStatePolling
	PhysStateDisabled  = verbs.PhysStateDisabled
	PhysStateArmed     = verbs.PhysStateArmed
	PhysStateLinkUp    = verbs.PhysStateLinkUp
	PhysStateLinkError = verbs.PhysStateLinkError
	PhysStatePHYTest   = verbs.PhysStatePHYTest
)

// DriverID identifies the kernel driver behind a uverbs device (enum
// rdma_driver_id); providers are chosen by it.
type DriverID uint32

// Driver IDs used by goverbs' providers; any other value of enum
// rdma_driver_id may appear.
const (
	DriverUnknown = DriverID(abi.RDMA_DRIVER_UNKNOWN)
	DriverMLX5    = DriverID(abi.RDMA_DRIVER_MLX5)
	DriverRXE     = DriverID(abi.RDMA_DRIVER_RXE)
	DriverSIW     = DriverID(abi.RDMA_DRIVER_SIW)
)

var driverNames = map[DriverID]string{
	DriverUnknown:                        "unknown",
	DriverMLX5:                           "mlx5",
	DriverID(abi.RDMA_DRIVER_MLX4):       "mlx4",
	DriverID(abi.RDMA_DRIVER_CXGB3):      "cxgb3",
	DriverID(abi.RDMA_DRIVER_CXGB4):      "cxgb4",
	DriverID(abi.RDMA_DRIVER_MTHCA):      "mthca",
	DriverID(abi.RDMA_DRIVER_BNXT_RE):    "bnxt_re",
	DriverID(abi.RDMA_DRIVER_OCRDMA):     "ocrdma",
	DriverID(abi.RDMA_DRIVER_NES):        "nes",
	DriverID(abi.RDMA_DRIVER_IRDMA):      "irdma",
	DriverID(abi.RDMA_DRIVER_VMW_PVRDMA): "vmw_pvrdma",
	DriverID(abi.RDMA_DRIVER_QEDR):       "qedr",
	DriverID(abi.RDMA_DRIVER_HNS):        "hns",
	DriverID(abi.RDMA_DRIVER_USNIC):      "usnic",
	DriverRXE:                            "rxe",
	DriverID(abi.RDMA_DRIVER_HFI1):       "hfi1",
	DriverID(abi.RDMA_DRIVER_QIB):        "qib",
	DriverID(abi.RDMA_DRIVER_EFA):        "efa",
	DriverSIW:                            "siw",
	DriverID(abi.RDMA_DRIVER_ERDMA):      "erdma",
}

// String returns the driver's short name ("rxe", "mlx5") or "driver(N)".
func (d DriverID) String() string {
	if n, ok := driverNames[d]; ok {
		return n
	}
	return fmt.Sprintf("driver(%d)", uint32(d))
}
