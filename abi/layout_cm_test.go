//go:build linux

package abi

import (
	"testing"
	"unsafe"
)

// Sizes and offsets of <rdma/rdma_user_cm.h> and <rdma/ib_user_sa.h>: the
// values gcc computed on x86-64 against the 6.1 headers, as recorded in
// ../shared/reference/rdma-cm.md §1.3-§1.4 (not read from the generated code).
func TestSizesRdmaCM(t *testing.T) {
	var ev RdmaUcmEventResp
	var cp RdmaUcmConnParam
	var ud RdmaUcmUdParam
	var qa IbUverbsQpAttr
	var ac RdmaUcmAccept
	var co RdmaUcmConnect
	var rj RdmaUcmReject
	var qr RdmaUcmQueryAddrResp
	var ra RdmaUcmResolveAddr
	var jm RdmaUcmJoinMcast
	var so RdmaUcmSetOption
	var up IbUserPathRec
	checkLayouts(t, []layout{
		{"sizeof(rdma_ucm_cmd_hdr)", unsafe.Sizeof(RdmaUcmCmdHdr{}), 8},
		{"sizeof(rdma_ucm_create_id)", unsafe.Sizeof(RdmaUcmCreateId{}), 24},
		{"sizeof(rdma_ucm_destroy_id)", unsafe.Sizeof(RdmaUcmDestroyId{}), 16},
		{"sizeof(rdma_ucm_bind_ip)", unsafe.Sizeof(RdmaUcmBindIp{}), 40},
		{"sizeof(rdma_ucm_resolve_ip)", unsafe.Sizeof(RdmaUcmResolveIp{}), 64},
		{"sizeof(rdma_ucm_resolve_route)", unsafe.Sizeof(RdmaUcmResolveRoute{}), 8},
		{"sizeof(rdma_ucm_query)", unsafe.Sizeof(RdmaUcmQuery{}), 16},
		{"sizeof(rdma_ucm_query_route_resp)", unsafe.Sizeof(RdmaUcmQueryRouteResp{}), 208},
		{"sizeof(rdma_ucm_query_addr_resp)", unsafe.Sizeof(qr), 280},
		{"sizeof(rdma_ucm_query_path_resp)", unsafe.Sizeof(RdmaUcmQueryPathResp{}), 8},
		{"sizeof(rdma_ucm_conn_param)", unsafe.Sizeof(cp), 272},
		{"sizeof(rdma_ucm_ud_param)", unsafe.Sizeof(ud), 304},
		{"sizeof(rdma_ucm_connect)", unsafe.Sizeof(co), 288},
		{"sizeof(rdma_ucm_listen)", unsafe.Sizeof(RdmaUcmListen{}), 8},
		{"sizeof(rdma_ucm_accept)", unsafe.Sizeof(ac), 296},
		{"sizeof(rdma_ucm_reject)", unsafe.Sizeof(rj), 264},
		{"sizeof(rdma_ucm_disconnect)", unsafe.Sizeof(RdmaUcmDisconnect{}), 4},
		{"sizeof(rdma_ucm_init_qp_attr)", unsafe.Sizeof(RdmaUcmInitQpAttr{}), 16},
		{"sizeof(rdma_ucm_notify)", unsafe.Sizeof(RdmaUcmNotify{}), 8},
		{"sizeof(rdma_ucm_join_ip_mcast)", unsafe.Sizeof(RdmaUcmJoinIpMcast{}), 48},
		{"sizeof(rdma_ucm_join_mcast)", unsafe.Sizeof(jm), 152},
		{"sizeof(rdma_ucm_get_event)", unsafe.Sizeof(RdmaUcmGetEvent{}), 8},
		{"sizeof(rdma_ucm_event_resp)", unsafe.Sizeof(ev), 336},
		{"sizeof(rdma_ucm_set_option)", unsafe.Sizeof(so), 24},
		{"sizeof(rdma_ucm_migrate_id)", unsafe.Sizeof(RdmaUcmMigrateId{}), 16},
		{"sizeof(rdma_ucm_bind)", unsafe.Sizeof(RdmaUcmBind{}), 136},
		{"sizeof(rdma_ucm_resolve_addr)", unsafe.Sizeof(ra), 272},
		{"sizeof(ib_uverbs_qp_attr)", unsafe.Sizeof(qa), 144},
		{"sizeof(ib_uverbs_ah_attr)", unsafe.Sizeof(IbUverbsAhAttr{}), 32},
		{"sizeof(ib_user_path_rec)", unsafe.Sizeof(up), 64},
		{"sizeof(ib_path_rec_data)", unsafe.Sizeof(IbPathRecData{}), 72},
		{"sizeof(__kernel_sockaddr_storage)", unsafe.Sizeof(KernelSockaddrStorage{}), 128},
		{"alignof(__kernel_sockaddr_storage)", unsafe.Alignof(KernelSockaddrStorage{}), 8},

		{"offsetof(rdma_ucm_event_resp, status)", unsafe.Offsetof(ev.Status), 16},
		{"offsetof(rdma_ucm_event_resp, param)", unsafe.Offsetof(ev.Param), 20},
		{"offsetof(rdma_ucm_event_resp, reserved)", unsafe.Offsetof(ev.Reserved), 324},
		{"offsetof(rdma_ucm_event_resp, ece)", unsafe.Offsetof(ev.Ece), 328},
		{"offsetof(rdma_ucm_conn_param, private_data_len)", unsafe.Offsetof(cp.PrivateDataLen), 264},
		{"offsetof(rdma_ucm_conn_param, valid)", unsafe.Offsetof(cp.Valid), 271},
		{"offsetof(rdma_ucm_ud_param, ah_attr)", unsafe.Offsetof(ud.AhAttr), 8},
		{"offsetof(rdma_ucm_ud_param, private_data_len)", unsafe.Offsetof(ud.PrivateDataLen), 296},
		{"offsetof(rdma_ucm_connect, id)", unsafe.Offsetof(co.Id), 272},
		{"offsetof(rdma_ucm_connect, ece)", unsafe.Offsetof(co.Ece), 280},
		{"offsetof(rdma_ucm_accept, conn_param)", unsafe.Offsetof(ac.ConnParam), 8},
		{"offsetof(rdma_ucm_accept, id)", unsafe.Offsetof(ac.Id), 280},
		{"offsetof(rdma_ucm_accept, ece)", unsafe.Offsetof(ac.Ece), 288},
		{"offsetof(rdma_ucm_reject, private_data)", unsafe.Offsetof(rj.PrivateData), 8},
		{"offsetof(rdma_ucm_query_addr_resp, pkey)", unsafe.Offsetof(qr.Pkey), 10},
		{"offsetof(rdma_ucm_query_addr_resp, src_addr)", unsafe.Offsetof(qr.SrcAddr), 16},
		{"offsetof(rdma_ucm_query_addr_resp, dst_addr)", unsafe.Offsetof(qr.DstAddr), 144},
		{"offsetof(rdma_ucm_query_addr_resp, ibdev_index)", unsafe.Offsetof(qr.IbdevIndex), 272},
		{"offsetof(rdma_ucm_resolve_addr, src_addr)", unsafe.Offsetof(ra.SrcAddr), 16},
		{"offsetof(rdma_ucm_resolve_addr, dst_addr)", unsafe.Offsetof(ra.DstAddr), 144},
		{"offsetof(rdma_ucm_join_mcast, addr)", unsafe.Offsetof(jm.Addr), 24},
		{"offsetof(rdma_ucm_set_option, optlen)", unsafe.Offsetof(so.Optlen), 20},
		{"offsetof(ib_uverbs_qp_attr, ah_attr)", unsafe.Offsetof(qa.AhAttr), 40},
		{"offsetof(ib_uverbs_qp_attr, max_send_wr)", unsafe.Offsetof(qa.MaxSendWr), 104},
		{"offsetof(ib_uverbs_qp_attr, pkey_index)", unsafe.Offsetof(qa.PkeyIndex), 124},
		{"offsetof(ib_uverbs_qp_attr, max_rd_atomic)", unsafe.Offsetof(qa.MaxRdAtomic), 130},
		{"offsetof(ib_uverbs_qp_attr, alt_timeout)", unsafe.Offsetof(qa.AltTimeout), 138},
		{"offsetof(ib_user_path_rec, pkey)", unsafe.Offsetof(up.Pkey), 52},
		{"offsetof(ib_user_path_rec, preference)", unsafe.Offsetof(up.Preference), 63},
	})
	consts := []layout{
		{"RDMA_USER_CM_ABI_VERSION", RDMA_USER_CM_ABI_VERSION, 4},
		{"RDMA_MAX_PRIVATE_DATA", RDMA_MAX_PRIVATE_DATA, 256},
		{"RDMA_USER_CM_CMD_GET_EVENT", RDMA_USER_CM_CMD_GET_EVENT, 12},
		{"RDMA_USER_CM_CMD_QUERY", RDMA_USER_CM_CMD_QUERY, 19},
		{"RDMA_USER_CM_CMD_JOIN_MCAST", RDMA_USER_CM_CMD_JOIN_MCAST, 22},
		{"RDMA_PS_IPOIB", RDMA_PS_IPOIB, 0x0002},
		{"RDMA_PS_IB", RDMA_PS_IB, 0x013F},
		{"RDMA_PS_TCP", RDMA_PS_TCP, 0x0106},
		{"RDMA_PS_UDP", RDMA_PS_UDP, 0x0111},
		{"RDMA_OPTION_ID_ACK_TIMEOUT", RDMA_OPTION_ID_ACK_TIMEOUT, 3},
		{"RDMA_OPTION_IB_PATH", RDMA_OPTION_IB_PATH, 1},
		{"IB_PATH_BIDIRECTIONAL", IB_PATH_BIDIRECTIONAL, 0x28},
	}
	checkLayouts(t, consts)
}
