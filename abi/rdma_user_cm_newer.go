//go:build linux

package abi

import (
	"structs"
	"unsafe"
)

// rdma_cm (ucma) values and structs newer than the uAPI headers the generator reads (linux-libc-dev 6.1).
// Values and layouts from include/uapi/rdma/rdma_user_cm.h and ib_user_sa.h of Linux 7.3.4 (Debian's
// linux-headers-7.3.4+deb13-common); the command enum grows only at its end, so the numbers hold on every
// kernel that has them. Kernels without them (the lab's 6.1 and 6.12) answer the commands EINVAL: ucma_write
// refuses a command number past its table.
const (
	RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE = 0x17 // resolve an IB service record through the SA
	RDMA_USER_CM_CMD_WRITE_CM_EVENT     = 0x18 // queue an event on the id's channel

	RDMA_USER_CM_QUERY_IB_SERVICE = 0x3 // QUERY option: the service records RESOLVE_IB_SERVICE found

	RDMA_USER_CM_IB_SERVICE_FLAG_ID   = 0x1 // rdma_ucm_ib_service: match service_id
	RDMA_USER_CM_IB_SERVICE_FLAG_NAME = 0x2 // rdma_ucm_ib_service: match service_name

	RDMA_USER_CM_IB_SERVICE_NAME_SIZE = 64
)

// enum rdma_cm_event_type past RDMA_CM_EVENT_TIMEWAIT_EXIT (include/rdma/rdma_cm.h; librdmacm's rdma_cma.h
// numbers them the same).
const (
	RDMA_CM_EVENT_ADDRINFO_RESOLVED = 0x10
	RDMA_CM_EVENT_ADDRINFO_ERROR    = 0x11
	RDMA_CM_EVENT_USER              = 0x12 // written by WRITE_CM_EVENT
	RDMA_CM_EVENT_INTERNAL          = 0x13 // written by WRITE_CM_EVENT; librdmacm's own
)

// RdmaUcmWriteCmEvent is struct rdma_ucm_write_cm_event.
//
// The union param is rendered as a byte array of its size (conn, ud, or the 64-bit arg at its start); Arg
// reaches the last.
type RdmaUcmWriteCmEvent struct {
	_        structs.HostLayout
	_        [0]uint64 // the union's __u64 aligns the struct to 8
	Id       uint32
	Reserved uint32
	Event    uint32
	Status   uint32
	Param    [304]byte
}

// Arg returns a pointer to the param union as arg.
func (s *RdmaUcmWriteCmEvent) Arg() *uint64 { return (*uint64)(unsafe.Pointer(&s.Param)) }

// RdmaUcmIbService is struct rdma_ucm_ib_service.
type RdmaUcmIbService struct {
	_           structs.HostLayout
	ServiceId   uint64
	ServiceName [RDMA_USER_CM_IB_SERVICE_NAME_SIZE]uint8
	Flags       uint32
	Reserved    uint32
}

// RdmaUcmResolveIbService is struct rdma_ucm_resolve_ib_service.
type RdmaUcmResolveIbService struct {
	_        structs.HostLayout
	Id       uint32
	Reserved uint32
	Ibs      RdmaUcmIbService
}

// RdmaUcmQueryIbServiceResp is struct rdma_ucm_query_ib_service_resp without its flexible array of
// IbUserServiceRec, which follows it.
type RdmaUcmQueryIbServiceResp struct {
	_              structs.HostLayout
	NumServiceRecs uint32
	Reserved       uint32
}

// IbUserServiceRec is struct ib_user_service_rec (ib_user_sa.h): an SA service record, big-endian fields
// as the kernel copies them.
type IbUserServiceRec struct {
	_        structs.HostLayout
	Id       uint64
	Gid      [16]uint8
	Pkey     uint16
	Reserved [2]uint8
	Lease    uint32
	Key      [16]uint8
	Name     [64]uint8
	Data8    [16]uint8
	Data16   [8]uint16
	Data32   [4]uint32
	Data64   [2]uint64
}
