package abi

// Go forms of the function-like macros of <rdma/rdma_netlink.h>, which
// cgo -godefs cannot translate. An RDMA netlink message type packs a client
// (RDMA_NL_NLDEV, RDMA_NL_LS, ...) in bits 10-15 and the client's operation
// (RDMA_NLDEV_CMD_GET, ...) in bits 0-9.

// RdmaNlGetType is RDMA_NL_GET_TYPE(client, op): the nlmsg_type for op of
// client, e.g. RdmaNlGetType(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET) = 0x1401.
// client must be < 64 and op < 1024; higher bits are discarded.
func RdmaNlGetType(client, op uint16) uint16 {
	return (client&rdmaNlClientMask)<<rdmaNlClientShift | op&rdmaNlOpMask
}

// RdmaNlGetClient is RDMA_NL_GET_CLIENT(type): the client of a message type.
func RdmaNlGetClient(typ uint16) uint16 { return typ >> rdmaNlClientShift & rdmaNlClientMask }

// RdmaNlGetOp is RDMA_NL_GET_OP(type): the operation of a message type.
func RdmaNlGetOp(typ uint16) uint16 { return typ & rdmaNlOpMask }

const (
	rdmaNlClientShift = 10
	rdmaNlClientMask  = 1<<6 - 1
	rdmaNlOpMask      = 1<<10 - 1
)
