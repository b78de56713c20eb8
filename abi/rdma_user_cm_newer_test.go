//go:build linux

package abi

import (
	"testing"
	"unsafe"
)

// Sizes and offsets of the rdma_cm structs newer than 6.1 (rdma_user_cm_newer.go): the values gcc 12.2
// computed on x86-64 against Linux 7.3.4's include/uapi/rdma/rdma_user_cm.h and ib_user_sa.h (not read from
// the Go code), and the command numbers of the same header.
func TestSizesRdmaCMNewer(t *testing.T) {
	var we RdmaUcmWriteCmEvent
	var ibs RdmaUcmIbService
	var ris RdmaUcmResolveIbService
	var sr IbUserServiceRec
	checkLayouts(t, []layout{
		{"RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE", RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, 23},
		{"RDMA_USER_CM_CMD_WRITE_CM_EVENT", RDMA_USER_CM_CMD_WRITE_CM_EVENT, 24},
		{"RDMA_USER_CM_QUERY_IB_SERVICE", RDMA_USER_CM_QUERY_IB_SERVICE, 3},
		{"RDMA_USER_CM_IB_SERVICE_FLAG_ID", RDMA_USER_CM_IB_SERVICE_FLAG_ID, 1},
		{"RDMA_USER_CM_IB_SERVICE_FLAG_NAME", RDMA_USER_CM_IB_SERVICE_FLAG_NAME, 2},
		{"RDMA_USER_CM_IB_SERVICE_NAME_SIZE", RDMA_USER_CM_IB_SERVICE_NAME_SIZE, 64},
		{"RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE follows JOIN_MCAST", RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, RDMA_USER_CM_CMD_JOIN_MCAST + 1},

		{"sizeof(rdma_ucm_write_cm_event)", unsafe.Sizeof(we), 320},
		{"alignof(rdma_ucm_write_cm_event)", unsafe.Alignof(we), 8},
		{"offsetof(rdma_ucm_write_cm_event, event)", unsafe.Offsetof(we.Event), 8},
		{"offsetof(rdma_ucm_write_cm_event, status)", unsafe.Offsetof(we.Status), 12},
		{"offsetof(rdma_ucm_write_cm_event, param)", unsafe.Offsetof(we.Param), 16},
		{"sizeof(rdma_ucm_write_cm_event.param)", unsafe.Sizeof(we.Param), unsafe.Sizeof(RdmaUcmUdParam{})},
		{"sizeof(rdma_ucm_ib_service)", unsafe.Sizeof(ibs), 80},
		{"offsetof(rdma_ucm_ib_service, service_name)", unsafe.Offsetof(ibs.ServiceName), 8},
		{"offsetof(rdma_ucm_ib_service, flags)", unsafe.Offsetof(ibs.Flags), 72},
		{"sizeof(rdma_ucm_resolve_ib_service)", unsafe.Sizeof(ris), 88},
		{"offsetof(rdma_ucm_resolve_ib_service, ibs)", unsafe.Offsetof(ris.Ibs), 8},
		{"sizeof(rdma_ucm_query_ib_service_resp)", unsafe.Sizeof(RdmaUcmQueryIbServiceResp{}), 8},
		{"sizeof(ib_user_service_rec)", unsafe.Sizeof(sr), 176},
		{"offsetof(ib_user_service_rec, gid)", unsafe.Offsetof(sr.Gid), 8},
		{"offsetof(ib_user_service_rec, pkey)", unsafe.Offsetof(sr.Pkey), 24},
		{"offsetof(ib_user_service_rec, lease)", unsafe.Offsetof(sr.Lease), 28},
		{"offsetof(ib_user_service_rec, key)", unsafe.Offsetof(sr.Key), 32},
		{"offsetof(ib_user_service_rec, name)", unsafe.Offsetof(sr.Name), 48},
		{"offsetof(ib_user_service_rec, data_8)", unsafe.Offsetof(sr.Data8), 112},
		{"offsetof(ib_user_service_rec, data_16)", unsafe.Offsetof(sr.Data16), 128},
		{"offsetof(ib_user_service_rec, data_32)", unsafe.Offsetof(sr.Data32), 144},
		{"offsetof(ib_user_service_rec, data_64)", unsafe.Offsetof(sr.Data64), 160},
	})
}
