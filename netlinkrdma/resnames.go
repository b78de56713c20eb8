package netlinkrdma

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/verbs"
)

// QPType (a QP's transport type, kernel enum ib_qp_type) and QPState (kernel enum ib_qp_state) are package
// verbs' types, which the verbs core reports too. Their String gives the verbs name ("RC", "RTS",
// "XRC_SEND"); iproute2 prints the kernel's XRC_INI and XRC_TGT for XRC_SEND and XRC_RECV, and "UNKNOWN" for a
// value without a name.
type (
	QPType  = verbs.QPType
	QPState = verbs.QPState
)

// QPTypeDriver is IB_QPT_DRIVER, a driver-private QP type.
const QPTypeDriver = verbs.QPTypeDriver

// PathMigState is a QP's path migration state (enum ib_mig_state).
type PathMigState uint8

var pathMigNames = [...]string{"MIGRATED", "REARM", "ARMED"}

// String returns iproute2's name ("MIGRATED", ...; "UNKNOWN" otherwise).
func (s PathMigState) String() string {
	return iprouteName(pathMigNames[:], uint64(s))
}

// PollCtx is how a kernel CQ is polled (enum ib_poll_context).
type PollCtx uint8

var pollCtxNames = [...]string{"DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE"}

// String returns iproute2's name ("DIRECT", ...; "UNKNOWN" otherwise).
func (p PollCtx) String() string {
	return iprouteName(pollCtxNames[:], uint64(p))
}

// CMState is an rdma_cm ID's state (kernel enum rdma_cm_state).
type CMState uint8

var cmStateNames = [...]string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY",
	"ROUTE_RESOLVED", "CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}

// String returns iproute2's name ("LISTEN", ...; "UNKNOWN" otherwise).
func (s CMState) String() string {
	return iprouteName(cmStateNames[:], uint64(s))
}

// PortSpace is an rdma_cm port space (enum rdma_ucm_port_space: 16 bits in rdma_cm's commands, 32 in RDMA
// netlink's attribute). It is defined here, below both of its users: rdmacm.PortSpace is this type.
type PortSpace uint16

// Port spaces of <rdma/rdma_user_cm.h> (enum rdma_ucm_port_space), from the
// generated abi.
const (
	PortSpaceIPoIB PortSpace = abi.RDMA_PS_IPOIB
	PortSpaceIB    PortSpace = abi.RDMA_PS_IB
	PortSpaceTCP   PortSpace = abi.RDMA_PS_TCP
	PortSpaceUDP   PortSpace = abi.RDMA_PS_UDP
)

// String returns the port space's name ("TCP", "UDP", "IB", "IPoIB"), or "PortSpace(0x...)" for another value.
// iproute2 prints IB as "IPoIB" and other values as "---".
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceTCP:
		return "TCP"
	case PortSpaceUDP:
		return "UDP"
	case PortSpaceIB:
		return "IB"
	case PortSpaceIPoIB:
		return "IPoIB"
	}
	return fmt.Sprintf("PortSpace(%#x)", uint16(ps))
}

// SRQType is a shared receive queue's type (enum ib_srq_type).
type SRQType uint8

var srqTypeNames = [...]string{"BASIC", "XRC", "TM"}

// String returns iproute2's name ("BASIC", "XRC", "TM"; "UNKNOWN" otherwise).
func (t SRQType) String() string {
	return iprouteName(srqTypeNames[:], uint64(t))
}

// iprouteName is names[v], or "UNKNOWN" (iproute2's word) for a value
// without a name.
func iprouteName(names []string, v uint64) string {
	if v < uint64(len(names)) {
		return names[v]
	}
	return "UNKNOWN"
}
