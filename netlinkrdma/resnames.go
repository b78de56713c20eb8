package netlinkrdma

import "github.com/goverbs/goverbs/uverbs/abi"

// QPType is a QP's transport type as RDMA netlink reports it (kernel enum
// ib_qp_type, reserved types excluded).
type QPType uint8

var qpTypeNames = [...]string{"SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE",
	"UNKNOWN", "RAW_PACKET", "XRC_INI", "XRC_TGT"}

// QPTypeDriver is IB_QPT_DRIVER, a driver-private QP type.
const QPTypeDriver QPType = 0xff

// String returns iproute2's name ("RC", "UD", "GSI", ...).
func (t QPType) String() string {
	if int(t) < len(qpTypeNames) {
		return qpTypeNames[t]
	}
	if t == QPTypeDriver {
		return "DRIVER"
	}
	return "UNKNOWN"
}

// QPState is a QP's state (kernel enum ib_qp_state).
type QPState uint8

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// String returns iproute2's name ("RTS", ...; "UNKNOWN" otherwise).
func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "UNKNOWN"
}

// PathMigState is a QP's path migration state (enum ib_mig_state).
type PathMigState uint8

var pathMigNames = [...]string{"MIGRATED", "REARM", "ARMED"}

// String returns iproute2's name ("MIGRATED", ...; "UNKNOWN" otherwise).
func (s PathMigState) String() string {
	if int(s) < len(pathMigNames) {
		return pathMigNames[s]
	}
	return "UNKNOWN"
}

// PollCtx is how a kernel CQ is polled (enum ib_poll_context).
type PollCtx uint8

var pollCtxNames = [...]string{"DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE"}

// String returns iproute2's name ("DIRECT", ...; "UNKNOWN" otherwise).
func (p PollCtx) String() string {
	if int(p) < len(pollCtxNames) {
		return pollCtxNames[p]
	}
	return "UNKNOWN"
}

// CMState is an rdma_cm ID's state (kernel enum rdma_cm_state).
type CMState uint8

var cmStateNames = [...]string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY",
	"ROUTE_RESOLVED", "CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}

// String returns iproute2's name ("LISTEN", ...; "UNKNOWN" otherwise).
func (s CMState) String() string {
	if int(s) < len(cmStateNames) {
		return cmStateNames[s]
	}
	return "UNKNOWN"
}

// PortSpace is an rdma_cm port space (enum rdma_port_space).
type PortSpace uint32

// Port spaces of <rdma/rdma_user_cm.h> (enum rdma_ucm_port_space), from the
// generated uverbs/abi.
const (
	PortSpaceIPoIB PortSpace = abi.RDMA_PS_IPOIB
	PortSpaceIB    PortSpace = abi.RDMA_PS_IB
	PortSpaceTCP   PortSpace = abi.RDMA_PS_TCP
	PortSpaceUDP   PortSpace = abi.RDMA_PS_UDP
)

// String returns iproute2's name: "IPoIB" (for both IPoIB and IB, as
// iproute2 prints them), "TCP", "UDP", or "---".
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceIPoIB, PortSpaceIB:
		return "IPoIB"
	case PortSpaceTCP:
		return "TCP"
	case PortSpaceUDP:
		return "UDP"
	}
	return "---"
}

// SRQType is a shared receive queue's type (enum ib_srq_type).
type SRQType uint8

var srqTypeNames = [...]string{"BASIC", "XRC", "TM"}

// String returns iproute2's name ("BASIC", "XRC", "TM"; "UNKNOWN" otherwise).
func (t SRQType) String() string {
	if int(t) < len(srqTypeNames) {
		return srqTypeNames[t]
	}
	return "UNKNOWN"
}
