package verbs

import "github.com/goverbs/goverbs/internal/enumstr"

// QPType is a queue pair's transport type (enum ib_qp_type numbering, as enum ibv_qp_type). Both the verbs core
// and RDMA netlink (netlinkrdma.QP) report it; the kernel's own QPs add SMI, GSI and the raw types.
type QPType uint8

// QP types.
const (
	QPTypeSMI          QPType = 0 // the kernel's QP0 (subnet management)
	QPTypeGSI          QPType = 1 // the kernel's QP1 (general services)
	QPTypeRC           QPType = 2
	QPTypeUC           QPType = 3
	QPTypeUD           QPType = 4
	QPTypeRawIPv6      QPType = 5
	QPTypeRawEthertype QPType = 6
	QPTypeRawPacket    QPType = 8
	QPTypeXRCSend      QPType = 9
	QPTypeXRCRecv      QPType = 10
	QPTypeDriver       QPType = 0xff // a driver-private type (IB_QPT_DRIVER)
)

// String is the type's name ("RC", "UD", "XRC_SEND"); iproute2 prints XRC_SEND and XRC_RECV as the kernel
// names them, XRC_INI and XRC_TGT.
func (t QPType) String() string {
	switch t {
	case QPTypeSMI:
		return "SMI"
	case QPTypeGSI:
		return "GSI"
	case QPTypeRawIPv6:
		return "RAW_IPV6"
	case QPTypeRawEthertype:
		return "RAW_ETHERTYPE"
	case QPTypeDriver:
		return "DRIVER"
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	case QPTypeRawPacket:
		return "RAW_PACKET"
	case QPTypeXRCSend:
		return "XRC_SEND"
	case QPTypeXRCRecv:
		return "XRC_RECV"
	}
	return enumstr.Name(nil, uint64(t), "QPType")
}

// QPState is a queue pair's state (enum ibv_qp_state numbering).
type QPState uint8

// QP states.
const (
	QPStateReset QPState = iota
	QPStateInit
	QPStateRTR
	QPStateRTS
	QPStateSQD
	QPStateSQE
	QPStateErr
)

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// String is the state's name ("RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR").
func (s QPState) String() string { return enumstr.Name(qpStateNames[:], uint64(s), "QPState") }

// QPCap are a queue pair's queue capacities (struct ibv_qp_cap): requested at creation, granted by the kernel.
type QPCap struct {
	MaxSendWR     uint32 // send queue depth
	MaxRecvWR     uint32 // receive queue depth
	MaxSendSGE    uint32 // SGEs per send request
	MaxRecvSGE    uint32 // SGEs per receive request
	MaxInlineData uint32 // bytes a SendInline request may carry
}
