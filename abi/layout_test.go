//go:build linux

package abi

import (
	"testing"
	"unsafe"
)

// The expected values in this file are not read from the generated code:
// they are the sizes and offsets gcc computed against the 6.1 uAPI headers
// on x86-64, as recorded in ../shared/reference/rdma-core-abi.md (§1.2,
// §1.10, §3.3-§3.4, §4.1-§4.5, §5).

type layout struct {
	name      string
	got, want uintptr
}

func checkLayouts(t *testing.T, ls []layout) {
	t.Helper()
	for _, l := range ls {
		if l.got != l.want {
			t.Errorf("%s = %d, want %d", l.name, l.got, l.want)
		}
	}
}

func TestSizesUverbs(t *testing.T) {
	checkLayouts(t, []layout{
		{"sizeof(ib_uverbs_ioctl_hdr)", unsafe.Sizeof(IbUverbsIoctlHdr{}), 24},
		{"sizeof(ib_uverbs_attr)", unsafe.Sizeof(IbUverbsAttr{}), 16},
		{"sizeof(ib_uverbs_cmd_hdr)", unsafe.Sizeof(IbUverbsCmdHdr{}), 8},
		{"sizeof(ib_uverbs_ex_cmd_hdr)", unsafe.Sizeof(IbUverbsExCmdHdr{}), 16},
		{"sizeof(ib_uverbs_get_context)", unsafe.Sizeof(IbUverbsGetContext{}), 8},
		{"sizeof(ib_uverbs_get_context_resp)", unsafe.Sizeof(IbUverbsGetContextResp{}), 8},
		{"sizeof(ib_uverbs_query_device)", unsafe.Sizeof(IbUverbsQueryDevice{}), 8},
		{"sizeof(ib_uverbs_query_device_resp)", unsafe.Sizeof(IbUverbsQueryDeviceResp{}), 176},
		{"sizeof(ib_uverbs_ex_query_device)", unsafe.Sizeof(IbUverbsExQueryDevice{}), 8},
		{"sizeof(ib_uverbs_ex_query_device_resp)", unsafe.Sizeof(IbUverbsExQueryDeviceResp{}), 304},
		{"sizeof(ib_uverbs_query_port)", unsafe.Sizeof(IbUverbsQueryPort{}), 16},
		{"sizeof(ib_uverbs_query_port_resp)", unsafe.Sizeof(IbUverbsQueryPortResp{}), 40},
		{"sizeof(ib_uverbs_query_port_resp_ex)", unsafe.Sizeof(IbUverbsQueryPortRespEx{}), 48},
		{"sizeof(ib_uverbs_alloc_pd)", unsafe.Sizeof(IbUverbsAllocPd{}), 8},
		{"sizeof(ib_uverbs_alloc_pd_resp)", unsafe.Sizeof(IbUverbsAllocPdResp{}), 4},
		{"sizeof(ib_uverbs_dealloc_pd)", unsafe.Sizeof(IbUverbsDeallocPd{}), 4},
		{"sizeof(ib_uverbs_reg_mr)", unsafe.Sizeof(IbUverbsRegMr{}), 40},
		{"sizeof(ib_uverbs_reg_mr_resp)", unsafe.Sizeof(IbUverbsRegMrResp{}), 12},
		{"sizeof(ib_uverbs_rereg_mr)", unsafe.Sizeof(IbUverbsReregMr{}), 48},
		{"sizeof(ib_uverbs_rereg_mr_resp)", unsafe.Sizeof(IbUverbsReregMrResp{}), 8},
		{"sizeof(ib_uverbs_dereg_mr)", unsafe.Sizeof(IbUverbsDeregMr{}), 4},
		{"sizeof(ib_uverbs_alloc_mw)", unsafe.Sizeof(IbUverbsAllocMw{}), 16},
		{"sizeof(ib_uverbs_alloc_mw_resp)", unsafe.Sizeof(IbUverbsAllocMwResp{}), 8},
		{"sizeof(ib_uverbs_dealloc_mw)", unsafe.Sizeof(IbUverbsDeallocMw{}), 4},
		{"sizeof(ib_uverbs_create_comp_channel)", unsafe.Sizeof(IbUverbsCreateCompChannel{}), 8},
		{"sizeof(ib_uverbs_create_comp_channel_resp)", unsafe.Sizeof(IbUverbsCreateCompChannelResp{}), 4},
		{"sizeof(ib_uverbs_create_cq)", unsafe.Sizeof(IbUverbsCreateCq{}), 32},
		{"sizeof(ib_uverbs_create_cq_resp)", unsafe.Sizeof(IbUverbsCreateCqResp{}), 8},
		{"sizeof(ib_uverbs_ex_create_cq)", unsafe.Sizeof(IbUverbsExCreateCq{}), 32},
		{"sizeof(ib_uverbs_ex_create_cq_resp)", unsafe.Sizeof(IbUverbsExCreateCqResp{}), 16},
		{"sizeof(ib_uverbs_resize_cq)", unsafe.Sizeof(IbUverbsResizeCq{}), 16},
		{"sizeof(ib_uverbs_resize_cq_resp)", unsafe.Sizeof(IbUverbsResizeCqResp{}), 8},
		{"sizeof(ib_uverbs_req_notify_cq)", unsafe.Sizeof(IbUverbsReqNotifyCq{}), 8},
		{"sizeof(ib_uverbs_destroy_cq)", unsafe.Sizeof(IbUverbsDestroyCq{}), 16},
		{"sizeof(ib_uverbs_destroy_cq_resp)", unsafe.Sizeof(IbUverbsDestroyCqResp{}), 8},
		{"sizeof(ib_uverbs_poll_cq)", unsafe.Sizeof(IbUverbsPollCq{}), 16},
		{"sizeof(ib_uverbs_poll_cq_resp)", unsafe.Sizeof(IbUverbsPollCqResp{}), 8},
		{"sizeof(ib_uverbs_wc)", unsafe.Sizeof(IbUverbsWc{}), 48},
		{"sizeof(ib_uverbs_create_qp)", unsafe.Sizeof(IbUverbsCreateQp{}), 56},
		{"sizeof(ib_uverbs_create_qp_resp)", unsafe.Sizeof(IbUverbsCreateQpResp{}), 32},
		{"sizeof(ib_uverbs_ex_create_qp)", unsafe.Sizeof(IbUverbsExCreateQp{}), 64},
		{"sizeof(ib_uverbs_ex_create_qp_resp)", unsafe.Sizeof(IbUverbsExCreateQpResp{}), 40},
		{"sizeof(ib_uverbs_qp_cap)", unsafe.Sizeof(IbUverbsQpCap{}), 20},
		{"sizeof(ib_uverbs_query_qp)", unsafe.Sizeof(IbUverbsQueryQp{}), 16},
		{"sizeof(ib_uverbs_query_qp_resp)", unsafe.Sizeof(IbUverbsQueryQpResp{}), 128},
		{"sizeof(ib_uverbs_modify_qp)", unsafe.Sizeof(IbUverbsModifyQp{}), 112},
		{"sizeof(ib_uverbs_ex_modify_qp)", unsafe.Sizeof(IbUverbsExModifyQp{}), 120},
		{"sizeof(ib_uverbs_ex_modify_qp_resp)", unsafe.Sizeof(IbUverbsExModifyQpResp{}), 8},
		{"sizeof(ib_uverbs_qp_dest)", unsafe.Sizeof(IbUverbsQpDest{}), 32},
		{"sizeof(ib_uverbs_destroy_qp)", unsafe.Sizeof(IbUverbsDestroyQp{}), 16},
		{"sizeof(ib_uverbs_destroy_qp_resp)", unsafe.Sizeof(IbUverbsDestroyQpResp{}), 4},
		{"sizeof(ib_uverbs_post_send)", unsafe.Sizeof(IbUverbsPostSend{}), 24},
		{"sizeof(ib_uverbs_post_send_resp)", unsafe.Sizeof(IbUverbsPostSendResp{}), 4},
		{"sizeof(ib_uverbs_send_wr)", unsafe.Sizeof(IbUverbsSendWr{}), 56},
		{"sizeof(ib_uverbs_sge)", unsafe.Sizeof(IbUverbsSge{}), 16},
		{"sizeof(ib_uverbs_post_recv)", unsafe.Sizeof(IbUverbsPostRecv{}), 24},
		{"sizeof(ib_uverbs_post_recv_resp)", unsafe.Sizeof(IbUverbsPostRecvResp{}), 4},
		{"sizeof(ib_uverbs_recv_wr)", unsafe.Sizeof(IbUverbsRecvWr{}), 16},
		{"sizeof(ib_uverbs_post_srq_recv)", unsafe.Sizeof(IbUverbsPostSrqRecv{}), 24},
		{"sizeof(ib_uverbs_create_srq)", unsafe.Sizeof(IbUverbsCreateSrq{}), 32},
		{"sizeof(ib_uverbs_create_xsrq)", unsafe.Sizeof(IbUverbsCreateXsrq{}), 48},
		{"sizeof(ib_uverbs_create_srq_resp)", unsafe.Sizeof(IbUverbsCreateSrqResp{}), 16},
		{"sizeof(ib_uverbs_modify_srq)", unsafe.Sizeof(IbUverbsModifySrq{}), 16},
		{"sizeof(ib_uverbs_query_srq)", unsafe.Sizeof(IbUverbsQuerySrq{}), 16},
		{"sizeof(ib_uverbs_query_srq_resp)", unsafe.Sizeof(IbUverbsQuerySrqResp{}), 16},
		{"sizeof(ib_uverbs_destroy_srq)", unsafe.Sizeof(IbUverbsDestroySrq{}), 16},
		{"sizeof(ib_uverbs_destroy_srq_resp)", unsafe.Sizeof(IbUverbsDestroySrqResp{}), 4},
		{"sizeof(ib_uverbs_open_xrcd)", unsafe.Sizeof(IbUverbsOpenXrcd{}), 16},
		{"sizeof(ib_uverbs_open_xrcd_resp)", unsafe.Sizeof(IbUverbsOpenXrcdResp{}), 4},
		{"sizeof(ib_uverbs_close_xrcd)", unsafe.Sizeof(IbUverbsCloseXrcd{}), 4},
		{"sizeof(ib_uverbs_create_ah)", unsafe.Sizeof(IbUverbsCreateAh{}), 56},
		{"sizeof(ib_uverbs_create_ah_resp)", unsafe.Sizeof(IbUverbsCreateAhResp{}), 4},
		{"sizeof(ib_uverbs_destroy_ah)", unsafe.Sizeof(IbUverbsDestroyAh{}), 4},
		{"sizeof(ib_uverbs_attach_mcast)", unsafe.Sizeof(IbUverbsAttachMcast{}), 24},
		{"sizeof(ib_uverbs_detach_mcast)", unsafe.Sizeof(IbUverbsDetachMcast{}), 24},
		{"sizeof(ib_uverbs_comp_event_desc)", unsafe.Sizeof(IbUverbsCompEventDesc{}), 8},
		{"sizeof(ib_uverbs_async_event_desc)", unsafe.Sizeof(IbUverbsAsyncEventDesc{}), 16},
		{"sizeof(ib_uverbs_gid_entry)", unsafe.Sizeof(IbUverbsGidEntry{}), 32},
	})
}

func TestOffsetsUverbs(t *testing.T) {
	var h IbUverbsIoctlHdr
	var a IbUverbsAttr
	var x IbUverbsExCmdHdr
	var m IbUverbsModifyQp
	var d IbUverbsQpDest
	var c IbUverbsCreateQp
	var w IbUverbsWc
	var p IbUverbsQueryPortRespEx
	var q IbUverbsExQueryDeviceResp
	checkLayouts(t, []layout{
		{"ib_uverbs_ioctl_hdr.length", unsafe.Offsetof(h.Length), 0},
		{"ib_uverbs_ioctl_hdr.object_id", unsafe.Offsetof(h.ObjectId), 2},
		{"ib_uverbs_ioctl_hdr.method_id", unsafe.Offsetof(h.MethodId), 4},
		{"ib_uverbs_ioctl_hdr.num_attrs", unsafe.Offsetof(h.NumAttrs), 6},
		{"ib_uverbs_ioctl_hdr.reserved1", unsafe.Offsetof(h.Reserved1), 8},
		{"ib_uverbs_ioctl_hdr.driver_id", unsafe.Offsetof(h.DriverId), 16},
		{"ib_uverbs_ioctl_hdr.reserved2", unsafe.Offsetof(h.Reserved2), 20},

		{"ib_uverbs_attr.attr_id", unsafe.Offsetof(a.AttrId), 0},
		{"ib_uverbs_attr.len", unsafe.Offsetof(a.Len), 2},
		{"ib_uverbs_attr.flags", unsafe.Offsetof(a.Flags), 4},
		{"ib_uverbs_attr.attr_data", unsafe.Offsetof(a.AttrData), 6},
		{"ib_uverbs_attr.data", unsafe.Offsetof(a.Data), 8},
		{"ib_uverbs_attr.attr_data.enum_data.elem_id", ptrOff(&a, &a.EnumData().ElemId), 6},
		{"ib_uverbs_attr.attr_data.enum_data.reserved", ptrOff(&a, &a.EnumData().Reserved), 7},
		{"ib_uverbs_attr.data_s64", ptrOff(&a, a.DataS64()), 8},

		{"ib_uverbs_ex_cmd_hdr.response", unsafe.Offsetof(x.Response), 0},
		{"ib_uverbs_ex_cmd_hdr.provider_in_words", unsafe.Offsetof(x.ProviderInWords), 8},
		{"ib_uverbs_ex_cmd_hdr.provider_out_words", unsafe.Offsetof(x.ProviderOutWords), 10},
		{"ib_uverbs_ex_cmd_hdr.cmd_hdr_reserved", unsafe.Offsetof(x.CmdHdrReserved), 12},

		{"ib_uverbs_modify_qp.dest", unsafe.Offsetof(m.Dest), 0},
		{"ib_uverbs_modify_qp.alt_dest", unsafe.Offsetof(m.AltDest), 32},
		{"ib_uverbs_modify_qp.qp_handle", unsafe.Offsetof(m.QpHandle), 64},
		{"ib_uverbs_modify_qp.attr_mask", unsafe.Offsetof(m.AttrMask), 68},
		{"ib_uverbs_modify_qp.qkey", unsafe.Offsetof(m.Qkey), 72},
		{"ib_uverbs_modify_qp.rq_psn", unsafe.Offsetof(m.RqPsn), 76},
		{"ib_uverbs_modify_qp.sq_psn", unsafe.Offsetof(m.SqPsn), 80},
		{"ib_uverbs_modify_qp.dest_qp_num", unsafe.Offsetof(m.DestQpNum), 84},
		{"ib_uverbs_modify_qp.qp_access_flags", unsafe.Offsetof(m.QpAccessFlags), 88},
		{"ib_uverbs_modify_qp.pkey_index", unsafe.Offsetof(m.PkeyIndex), 92},
		{"ib_uverbs_modify_qp.alt_pkey_index", unsafe.Offsetof(m.AltPkeyIndex), 94},
		{"ib_uverbs_modify_qp.qp_state", unsafe.Offsetof(m.QpState), 96},
		{"ib_uverbs_modify_qp.port_num", unsafe.Offsetof(m.PortNum), 104},
		{"ib_uverbs_modify_qp.alt_timeout", unsafe.Offsetof(m.AltTimeout), 109},

		{"ib_uverbs_qp_dest.dgid", unsafe.Offsetof(d.Dgid), 0},
		{"ib_uverbs_qp_dest.flow_label", unsafe.Offsetof(d.FlowLabel), 16},
		{"ib_uverbs_qp_dest.dlid", unsafe.Offsetof(d.Dlid), 20},
		{"ib_uverbs_qp_dest.sgid_index", unsafe.Offsetof(d.SgidIndex), 24},
		{"ib_uverbs_qp_dest.port_num", unsafe.Offsetof(d.PortNum), 31},

		{"ib_uverbs_create_qp.pd_handle", unsafe.Offsetof(c.PdHandle), 16},
		{"ib_uverbs_create_qp.max_send_wr", unsafe.Offsetof(c.MaxSendWr), 32},
		{"ib_uverbs_create_qp.sq_sig_all", unsafe.Offsetof(c.SqSigAll), 52},
		{"ib_uverbs_create_qp.qp_type", unsafe.Offsetof(c.QpType), 53},
		{"ib_uverbs_create_qp.is_srq", unsafe.Offsetof(c.IsSrq), 54},

		{"ib_uverbs_wc.wr_id", unsafe.Offsetof(w.WrId), 0},
		{"ib_uverbs_wc.status", unsafe.Offsetof(w.Status), 8},
		{"ib_uverbs_wc.opcode", unsafe.Offsetof(w.Opcode), 12},
		{"ib_uverbs_wc.vendor_err", unsafe.Offsetof(w.VendorErr), 16},
		{"ib_uverbs_wc.byte_len", unsafe.Offsetof(w.ByteLen), 20},
		{"ib_uverbs_wc.ex", unsafe.Offsetof(w.Ex), 24},
		{"ib_uverbs_wc.ex.imm_data", ptrOff(&w, w.ImmData()), 24},
		{"ib_uverbs_wc.ex.invalidate_rkey", ptrOff(&w, w.InvalidateRkey()), 24},
		{"ib_uverbs_wc.qp_num", unsafe.Offsetof(w.QpNum), 28},
		{"ib_uverbs_wc.src_qp", unsafe.Offsetof(w.SrcQp), 32},
		{"ib_uverbs_wc.wc_flags", unsafe.Offsetof(w.WcFlags), 36},
		{"ib_uverbs_wc.pkey_index", unsafe.Offsetof(w.PkeyIndex), 40},
		{"ib_uverbs_wc.slid", unsafe.Offsetof(w.Slid), 42},
		{"ib_uverbs_wc.sl", unsafe.Offsetof(w.Sl), 44},
		{"ib_uverbs_wc.dlid_path_bits", unsafe.Offsetof(w.DlidPathBits), 45},
		{"ib_uverbs_wc.port_num", unsafe.Offsetof(w.PortNum), 46},

		{"ib_uverbs_query_port_resp_ex.port_cap_flags2", unsafe.Offsetof(p.PortCapFlags2), 40},

		{"ib_uverbs_ex_query_device_resp.odp_caps.general_caps", unsafe.Offsetof(q.OdpCaps) + unsafe.Offsetof(q.OdpCaps.GeneralCaps), 184},
		{"ib_uverbs_ex_query_device_resp.odp_caps.per_transport_caps.rc_odp_caps", ptrOff(&q, &q.OdpCaps.PerTransportCaps.RcOdpCaps), 192},
		{"ib_uverbs_ex_query_device_resp.odp_caps.per_transport_caps.uc_odp_caps", ptrOff(&q, &q.OdpCaps.PerTransportCaps.UcOdpCaps), 196},
		{"ib_uverbs_ex_query_device_resp.odp_caps.per_transport_caps.ud_odp_caps", ptrOff(&q, &q.OdpCaps.PerTransportCaps.UdOdpCaps), 200},
		{"ib_uverbs_ex_query_device_resp.xrc_odp_caps", unsafe.Offsetof(q.XrcOdpCaps), 296},
	})
}

func TestLayoutRxe(t *testing.T) {
	var wr RxeSendWr
	var wqe RxeSendWqe
	var rwqe RxeRecvWqe
	var av RxeAv
	var qb RxeQueueBuf
	var mi Mminfo
	checkLayouts(t, []layout{
		{"sizeof(rxe_send_wr)", unsafe.Sizeof(wr), 144},
		{"sizeof(rxe_send_wqe)", unsafe.Sizeof(wqe), 208},
		{"sizeof(rxe_recv_wqe)", unsafe.Sizeof(rwqe), 40},
		{"sizeof(rxe_av)", unsafe.Sizeof(av), 88},
		{"sizeof(rxe_global_route)", unsafe.Sizeof(RxeGlobalRoute{}), 24},
		{"sizeof(rxe_sge)", unsafe.Sizeof(RxeSge{}), 16},
		{"sizeof(mminfo)", unsafe.Sizeof(mi), 16},
		{"sizeof(rxe_queue_buf)", unsafe.Sizeof(qb), 384},
		{"sizeof(rxe_create_cq_resp)", unsafe.Sizeof(RxeCreateCqResp{}), 16},
		{"sizeof(rxe_resize_cq_resp)", unsafe.Sizeof(RxeResizeCqResp{}), 16},
		{"sizeof(rxe_create_qp_resp)", unsafe.Sizeof(RxeCreateQpResp{}), 32},
		{"sizeof(rxe_create_srq_resp)", unsafe.Sizeof(RxeCreateSrqResp{}), 24},
		{"sizeof(rxe_modify_srq_cmd)", unsafe.Sizeof(RxeModifySrqCmd{}), 8},
		{"sizeof(rxe_create_ah_resp)", unsafe.Sizeof(RxeCreateAhResp{}), 8},

		{"rxe_send_wr.wr_id", unsafe.Offsetof(wr.WrId), 0},
		{"rxe_send_wr.reserved", unsafe.Offsetof(wr.Reserved), 8},
		{"rxe_send_wr.opcode", unsafe.Offsetof(wr.Opcode), 12},
		{"rxe_send_wr.send_flags", unsafe.Offsetof(wr.SendFlags), 16},
		{"rxe_send_wr.ex", unsafe.Offsetof(wr.Ex), 20},
		{"rxe_send_wr.ex.imm_data", ptrOff(&wr, wr.ImmData()), 20},
		{"rxe_send_wr.wr", unsafe.Offsetof(wr.Wr), 24},
		{"rxe_send_wr.wr.rdma.remote_addr", ptrOff(&wr, &wr.Rdma().RemoteAddr), 24},
		{"rxe_send_wr.wr.rdma.rkey", ptrOff(&wr, &wr.Rdma().Rkey), 32},
		{"rxe_send_wr.wr.atomic.remote_addr", ptrOff(&wr, &wr.Atomic().RemoteAddr), 24},
		{"rxe_send_wr.wr.atomic.compare_add", ptrOff(&wr, &wr.Atomic().CompareAdd), 32},
		{"rxe_send_wr.wr.atomic.swap", ptrOff(&wr, &wr.Atomic().Swap), 40},
		{"rxe_send_wr.wr.atomic.rkey", ptrOff(&wr, &wr.Atomic().Rkey), 48},
		{"rxe_send_wr.wr.ud.remote_qpn", ptrOff(&wr, &wr.Ud().RemoteQpn), 24},
		{"rxe_send_wr.wr.ud.remote_qkey", ptrOff(&wr, &wr.Ud().RemoteQkey), 28},
		{"rxe_send_wr.wr.ud.pkey_index", ptrOff(&wr, &wr.Ud().PkeyIndex), 32},
		{"rxe_send_wr.wr.ud.ah_num", ptrOff(&wr, &wr.Ud().AhNum), 36},
		{"rxe_send_wr.wr.ud.av", ptrOff(&wr, &wr.Ud().Av), 56},
		{"rxe_send_wr.wr.mw.addr", ptrOff(&wr, &wr.Mw().Addr), 24},
		{"rxe_send_wr.wr.mw.length", ptrOff(&wr, &wr.Mw().Length), 32},
		{"rxe_send_wr.wr.mw.mr_lkey", ptrOff(&wr, &wr.Mw().MrLkey), 40},
		{"rxe_send_wr.wr.mw.mw_rkey", ptrOff(&wr, &wr.Mw().MwRkey), 44},
		{"rxe_send_wr.wr.mw.rkey", ptrOff(&wr, &wr.Mw().Rkey), 48},
		{"rxe_send_wr.wr.mw.access", ptrOff(&wr, &wr.Mw().Access), 52},

		{"rxe_send_wqe.wr", unsafe.Offsetof(wqe.Wr), 0},
		{"rxe_send_wqe.status", unsafe.Offsetof(wqe.Status), 144},
		{"rxe_send_wqe.state", unsafe.Offsetof(wqe.State), 148},
		{"rxe_send_wqe.iova", unsafe.Offsetof(wqe.Iova), 152},
		{"rxe_send_wqe.mask", unsafe.Offsetof(wqe.Mask), 160},
		{"rxe_send_wqe.first_psn", unsafe.Offsetof(wqe.FirstPsn), 164},
		{"rxe_send_wqe.last_psn", unsafe.Offsetof(wqe.LastPsn), 168},
		{"rxe_send_wqe.ack_length", unsafe.Offsetof(wqe.AckLength), 172},
		{"rxe_send_wqe.ssn", unsafe.Offsetof(wqe.Ssn), 176},
		{"rxe_send_wqe.has_rd_atomic", unsafe.Offsetof(wqe.HasRdAtomic), 180},
		{"rxe_send_wqe.dma", unsafe.Offsetof(wqe.Dma), 184},
		{"rxe_send_wqe.dma.length", ptrOff(&wqe, &wqe.Dma.Length), 184},
		{"rxe_send_wqe.dma.resid", ptrOff(&wqe, &wqe.Dma.Resid), 188},
		{"rxe_send_wqe.dma.cur_sge", ptrOff(&wqe, &wqe.Dma.CurSge), 192},
		{"rxe_send_wqe.dma.num_sge", ptrOff(&wqe, &wqe.Dma.NumSge), 196},
		{"rxe_send_wqe.dma.sge_offset", ptrOff(&wqe, &wqe.Dma.SgeOffset), 200},
		{"rxe_send_wqe.dma.reserved", ptrOff(&wqe, &wqe.Dma.Reserved), 204},
		{"rxe_send_wqe.dma.sge[] (= sizeof)", SizeofRxeSendWqe, 208},

		{"rxe_recv_wqe.wr_id", unsafe.Offsetof(rwqe.WrId), 0},
		{"rxe_recv_wqe.dma", unsafe.Offsetof(rwqe.Dma), 16},
		{"rxe_recv_wqe.dma.sge[] (= sizeof)", SizeofRxeRecvWqe, 40},

		{"rxe_av.port_num", unsafe.Offsetof(av.PortNum), 0},
		{"rxe_av.network_type", unsafe.Offsetof(av.NetworkType), 1},
		{"rxe_av.dmac", unsafe.Offsetof(av.Dmac), 2},
		{"rxe_av.grh", unsafe.Offsetof(av.Grh), 8},
		{"rxe_av.sgid_addr", unsafe.Offsetof(av.SgidAddr), 32},
		{"rxe_av.sgid_addr._sockaddr_in6", ptrOff(&av, av.SgidAddrIn6()), 32},
		{"rxe_av.dgid_addr", unsafe.Offsetof(av.DgidAddr), 60},
		{"rxe_av.dgid_addr._sockaddr_in", ptrOff(&av, av.DgidAddrIn()), 60},

		{"rxe_queue_buf.log2_elem_size", unsafe.Offsetof(qb.Log2ElemSize), 0},
		{"rxe_queue_buf.index_mask", unsafe.Offsetof(qb.IndexMask), 4},
		{"rxe_queue_buf.producer_index", unsafe.Offsetof(qb.ProducerIndex), 128},
		{"rxe_queue_buf.consumer_index", unsafe.Offsetof(qb.ConsumerIndex), 256},
		{"rxe_queue_buf.data[] (= sizeof)", SizeofRxeQueueBuf, 384},

		{"mminfo.offset", unsafe.Offsetof(mi.Offset), 0},
		{"mminfo.size", unsafe.Offsetof(mi.Size), 8},
	})
}

func TestLayoutMlx5(t *testing.T) {
	var req Mlx5IbAllocUcontextReqV2
	var resp Mlx5IbAllocUcontextResp
	var cq Mlx5IbCreateCq
	var qp Mlx5IbCreateQp
	var qpr Mlx5IbCreateQpResp
	checkLayouts(t, []layout{
		{"sizeof(mlx5_ib_alloc_ucontext_req_v2)", unsafe.Sizeof(req), 32},
		{"sizeof(mlx5_ib_alloc_ucontext_resp)", unsafe.Sizeof(resp), 72},
		{"sizeof(mlx5_ib_create_cq)", unsafe.Sizeof(cq), 32},
		{"sizeof(mlx5_ib_create_cq_resp)", unsafe.Sizeof(Mlx5IbCreateCqResp{}), 8},
		{"sizeof(mlx5_ib_create_qp)", unsafe.Sizeof(qp), 56},
		{"sizeof(mlx5_ib_create_qp_resp)", unsafe.Sizeof(qpr), 40},
		{"sizeof(mlx5_ib_create_srq)", unsafe.Sizeof(Mlx5IbCreateSrq{}), 32},
		{"sizeof(mlx5_ib_query_device_resp)", unsafe.Sizeof(Mlx5IbQueryDeviceResp{}), 104},
		{"sizeof(mlx5_ib_create_ah_resp)", unsafe.Sizeof(Mlx5IbCreateAhResp{}), 16},

		{"mlx5_ib_alloc_ucontext_req_v2.total_num_bfregs", unsafe.Offsetof(req.TotalNumBfregs), 0},
		{"mlx5_ib_alloc_ucontext_req_v2.num_low_latency_bfregs", unsafe.Offsetof(req.NumLowLatencyBfregs), 4},
		{"mlx5_ib_alloc_ucontext_req_v2.flags", unsafe.Offsetof(req.Flags), 8},
		{"mlx5_ib_alloc_ucontext_req_v2.comp_mask", unsafe.Offsetof(req.CompMask), 12},
		{"mlx5_ib_alloc_ucontext_req_v2.max_cqe_version", unsafe.Offsetof(req.MaxCqeVersion), 16},
		{"mlx5_ib_alloc_ucontext_req_v2.lib_caps", unsafe.Offsetof(req.LibCaps), 24},

		{"mlx5_ib_alloc_ucontext_resp.qp_tab_size", unsafe.Offsetof(resp.QpTabSize), 0},
		{"mlx5_ib_alloc_ucontext_resp.bf_reg_size", unsafe.Offsetof(resp.BfRegSize), 4},
		{"mlx5_ib_alloc_ucontext_resp.tot_bfregs", unsafe.Offsetof(resp.TotBfregs), 8},
		{"mlx5_ib_alloc_ucontext_resp.cache_line_size", unsafe.Offsetof(resp.CacheLineSize), 12},
		{"mlx5_ib_alloc_ucontext_resp.max_sq_desc_sz", unsafe.Offsetof(resp.MaxSqDescSz), 16},
		{"mlx5_ib_alloc_ucontext_resp.max_rq_desc_sz", unsafe.Offsetof(resp.MaxRqDescSz), 18},
		{"mlx5_ib_alloc_ucontext_resp.max_send_wqebb", unsafe.Offsetof(resp.MaxSendWqebb), 20},
		{"mlx5_ib_alloc_ucontext_resp.max_recv_wr", unsafe.Offsetof(resp.MaxRecvWr), 24},
		{"mlx5_ib_alloc_ucontext_resp.max_srq_recv_wr", unsafe.Offsetof(resp.MaxSrqRecvWr), 28},
		{"mlx5_ib_alloc_ucontext_resp.num_ports", unsafe.Offsetof(resp.NumPorts), 32},
		{"mlx5_ib_alloc_ucontext_resp.flow_action_flags", unsafe.Offsetof(resp.FlowActionFlags), 34},
		{"mlx5_ib_alloc_ucontext_resp.comp_mask", unsafe.Offsetof(resp.CompMask), 36},
		{"mlx5_ib_alloc_ucontext_resp.response_length", unsafe.Offsetof(resp.ResponseLength), 40},
		{"mlx5_ib_alloc_ucontext_resp.cqe_version", unsafe.Offsetof(resp.CqeVersion), 44},
		{"mlx5_ib_alloc_ucontext_resp.cmds_supp_uhw", unsafe.Offsetof(resp.CmdsSuppUhw), 45},
		{"mlx5_ib_alloc_ucontext_resp.eth_min_inline", unsafe.Offsetof(resp.EthMinInline), 46},
		{"mlx5_ib_alloc_ucontext_resp.clock_info_versions", unsafe.Offsetof(resp.ClockInfoVersions), 47},
		{"mlx5_ib_alloc_ucontext_resp.hca_core_clock_offset", unsafe.Offsetof(resp.HcaCoreClockOffset), 48},
		{"mlx5_ib_alloc_ucontext_resp.log_uar_size", unsafe.Offsetof(resp.LogUarSize), 56},
		{"mlx5_ib_alloc_ucontext_resp.num_uars_per_page", unsafe.Offsetof(resp.NumUarsPerPage), 60},
		{"mlx5_ib_alloc_ucontext_resp.num_dyn_bfregs", unsafe.Offsetof(resp.NumDynBfregs), 64},
		{"mlx5_ib_alloc_ucontext_resp.dump_fill_mkey", unsafe.Offsetof(resp.DumpFillMkey), 68},

		{"mlx5_ib_create_cq.buf_addr", unsafe.Offsetof(cq.BufAddr), 0},
		{"mlx5_ib_create_cq.db_addr", unsafe.Offsetof(cq.DbAddr), 8},
		{"mlx5_ib_create_cq.cqe_size", unsafe.Offsetof(cq.CqeSize), 16},
		{"mlx5_ib_create_cq.cqe_comp_en", unsafe.Offsetof(cq.CqeCompEn), 20},
		{"mlx5_ib_create_cq.cqe_comp_res_format", unsafe.Offsetof(cq.CqeCompResFormat), 21},
		{"mlx5_ib_create_cq.flags", unsafe.Offsetof(cq.Flags), 22},
		{"mlx5_ib_create_cq.uar_page_index", unsafe.Offsetof(cq.UarPageIndex), 24},

		{"mlx5_ib_create_qp.buf_addr", unsafe.Offsetof(qp.BufAddr), 0},
		{"mlx5_ib_create_qp.db_addr", unsafe.Offsetof(qp.DbAddr), 8},
		{"mlx5_ib_create_qp.sq_wqe_count", unsafe.Offsetof(qp.SqWqeCount), 16},
		{"mlx5_ib_create_qp.rq_wqe_count", unsafe.Offsetof(qp.RqWqeCount), 20},
		{"mlx5_ib_create_qp.rq_wqe_shift", unsafe.Offsetof(qp.RqWqeShift), 24},
		{"mlx5_ib_create_qp.flags", unsafe.Offsetof(qp.Flags), 28},
		{"mlx5_ib_create_qp.uidx", unsafe.Offsetof(qp.Uidx), 32},
		{"mlx5_ib_create_qp.bfreg_index", unsafe.Offsetof(qp.BfregIndex), 36},
		{"mlx5_ib_create_qp.sq_buf_addr", unsafe.Offsetof(qp.SqBufAddr), 40},
		{"mlx5_ib_create_qp.access_key", ptrOff(&qp, qp.AccessKey()), 40},
		{"mlx5_ib_create_qp.ece_options", unsafe.Offsetof(qp.EceOptions), 48},
		{"mlx5_ib_create_qp.dci_streams", unsafe.Offsetof(qp.DciStreams), 52},

		{"mlx5_ib_create_qp_resp.bfreg_index", unsafe.Offsetof(qpr.BfregIndex), 0},
		{"mlx5_ib_create_qp_resp.ece_options", unsafe.Offsetof(qpr.EceOptions), 4},
		{"mlx5_ib_create_qp_resp.comp_mask", unsafe.Offsetof(qpr.CompMask), 8},
		{"mlx5_ib_create_qp_resp.tirn", unsafe.Offsetof(qpr.Tirn), 12},
		{"mlx5_ib_create_qp_resp.tisn", unsafe.Offsetof(qpr.Tisn), 16},
		{"mlx5_ib_create_qp_resp.rqn", unsafe.Offsetof(qpr.Rqn), 20},
		{"mlx5_ib_create_qp_resp.sqn", unsafe.Offsetof(qpr.Sqn), 24},
		{"mlx5_ib_create_qp_resp.tir_icm_addr", unsafe.Offsetof(qpr.TirIcmAddr), 32},
	})
}

// ptrOff is the offset of field (reached through an accessor or a nested
// struct) from the start of its outermost struct.
func ptrOff[S, F any](s *S, field *F) uintptr {
	return uintptr(unsafe.Pointer(field)) - uintptr(unsafe.Pointer(s))
}

func TestConstants(t *testing.T) {
	// Values from rdma-core-abi.md §1.2-§1.10, §2.2 and §4.
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"RDMA_IOCTL_MAGIC", RDMA_IOCTL_MAGIC, 0x1b},
		{"RDMA_VERBS_IOCTL", RDMA_VERBS_IOCTL, 0xc0181b01},
		{"UVERBS_ATTR_F_MANDATORY", UVERBS_ATTR_F_MANDATORY, 1},
		{"UVERBS_ATTR_F_VALID_OUTPUT", UVERBS_ATTR_F_VALID_OUTPUT, 2},
		{"UVERBS_ID_NS_MASK", UVERBS_ID_NS_MASK, 0xf000},
		{"UVERBS_ID_NS_SHIFT", UVERBS_ID_NS_SHIFT, 12},
		{"UVERBS_ATTR_UHW_IN", UVERBS_ATTR_UHW_IN, 0x1000},
		{"UVERBS_ATTR_UHW_OUT", UVERBS_ATTR_UHW_OUT, 0x1001},
		{"UVERBS_OBJECT_DEVICE", UVERBS_OBJECT_DEVICE, 0},
		{"UVERBS_OBJECT_CQ", UVERBS_OBJECT_CQ, 3},
		{"UVERBS_OBJECT_QP", UVERBS_OBJECT_QP, 4},
		{"UVERBS_OBJECT_MR", UVERBS_OBJECT_MR, 7},
		{"UVERBS_OBJECT_ASYNC_EVENT", UVERBS_OBJECT_ASYNC_EVENT, 16},
		{"UVERBS_METHOD_INVOKE_WRITE", UVERBS_METHOD_INVOKE_WRITE, 0},
		{"UVERBS_METHOD_QUERY_PORT", UVERBS_METHOD_QUERY_PORT, 2},
		{"UVERBS_METHOD_GET_CONTEXT", UVERBS_METHOD_GET_CONTEXT, 3},
		{"UVERBS_METHOD_QUERY_GID_ENTRY", UVERBS_METHOD_QUERY_GID_ENTRY, 6},
		{"UVERBS_ATTR_WRITE_CMD", UVERBS_ATTR_WRITE_CMD, 2},
		{"UVERBS_ATTR_CREATE_QP_RESP_QP_NUM", UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, 14},
		{"UVERBS_ATTR_CREATE_CQ_EVENT_FD", UVERBS_ATTR_CREATE_CQ_EVENT_FD, 7},
		{"RDMA_DRIVER_MLX5", RDMA_DRIVER_MLX5, 1},
		{"RDMA_DRIVER_RXE", RDMA_DRIVER_RXE, 14},
		{"IB_UVERBS_ACCESS_ON_DEMAND", IB_UVERBS_ACCESS_ON_DEMAND, 1 << 6},
		{"IB_UVERBS_QP_CREATE_SQ_SIG_ALL", IB_UVERBS_QP_CREATE_SQ_SIG_ALL, 1 << 12},
		{"IB_USER_VERBS_ABI_VERSION", IB_USER_VERBS_ABI_VERSION, 6},
		{"IB_USER_VERBS_CMD_COMMAND_MASK", IB_USER_VERBS_CMD_COMMAND_MASK, 0xff},
		{"IB_USER_VERBS_CMD_FLAG_EXTENDED", IB_USER_VERBS_CMD_FLAG_EXTENDED, 0x80000000},
		{"IB_USER_VERBS_CMD_GET_CONTEXT", IB_USER_VERBS_CMD_GET_CONTEXT, 0},
		{"IB_USER_VERBS_CMD_REG_MR", IB_USER_VERBS_CMD_REG_MR, 9},
		{"IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL", IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, 17},
		{"IB_USER_VERBS_CMD_REQ_NOTIFY_CQ", IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, 23},
		{"IB_USER_VERBS_CMD_MODIFY_QP", IB_USER_VERBS_CMD_MODIFY_QP, 26},
		{"IB_USER_VERBS_CMD_POST_SEND", IB_USER_VERBS_CMD_POST_SEND, 28},
		{"IB_USER_VERBS_CMD_OPEN_QP", IB_USER_VERBS_CMD_OPEN_QP, 40},
		{"IB_USER_VERBS_EX_CMD_QUERY_DEVICE", IB_USER_VERBS_EX_CMD_QUERY_DEVICE, 1},
		{"IB_USER_VERBS_EX_CMD_MODIFY_CQ", IB_USER_VERBS_EX_CMD_MODIFY_CQ, 57},
		{"RDMA_NL_NLDEV", RDMA_NL_NLDEV, 5},
		{"RDMA_NLDEV_CMD_GET", RDMA_NLDEV_CMD_GET, 1},
		{"RDMA_NLDEV_CMD_SYS_GET", RDMA_NLDEV_CMD_SYS_GET, 6},
		{"RDMA_NLDEV_CMD_GET_CHARDEV", RDMA_NLDEV_CMD_GET_CHARDEV, 15},
		{"RDMA_NLDEV_ATTR_DEV_INDEX", RDMA_NLDEV_ATTR_DEV_INDEX, 1},
		{"RDMA_NLDEV_ATTR_DEV_NAME", RDMA_NLDEV_ATTR_DEV_NAME, 2},
		{"RDMA_NLDEV_ATTR_PORT_INDEX", RDMA_NLDEV_ATTR_PORT_INDEX, 3},
		{"RDMA_NLDEV_ATTR_NODE_GUID", RDMA_NLDEV_ATTR_NODE_GUID, 6},
		{"RDMA_NLDEV_ATTR_DEV_NODE_TYPE", RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 14},
		{"RDMA_NLDEV_ATTR_CHARDEV_TYPE", RDMA_NLDEV_ATTR_CHARDEV_TYPE, 69},
		{"RDMA_NLDEV_ATTR_CHARDEV_NAME", RDMA_NLDEV_ATTR_CHARDEV_NAME, 70},
		{"RDMA_NLDEV_ATTR_CHARDEV_ABI", RDMA_NLDEV_ATTR_CHARDEV_ABI, 71},
		{"RDMA_NLDEV_ATTR_CHARDEV", RDMA_NLDEV_ATTR_CHARDEV, 72},
		{"RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID", RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 73},
		{"RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK", RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 93},
		{"RDMA_NLA_F_MANDATORY", RDMA_NLA_F_MANDATORY, 1 << 13},
		{"RDMA_NLA_TYPE_MASK & 0xffff", RDMA_NLA_TYPE_MASK & 0xffff, 0x1fff},
		{"RDMA_NODE_IB_CA", RDMA_NODE_IB_CA, 1},
		{"RDMA_NODE_RNIC", RDMA_NODE_RNIC, 4},
		{"RXE_NETWORK_TYPE_IPV4", RXE_NETWORK_TYPE_IPV4, 1},
		{"RXE_NETWORK_TYPE_IPV6", RXE_NETWORK_TYPE_IPV6, 2},
		{"MLX5_IB_UVERBS_ABI_VERSION", MLX5_IB_UVERBS_ABI_VERSION, 1},
		{"MLX5_IB_ALLOC_UCTX_DEVX", MLX5_IB_ALLOC_UCTX_DEVX, 1},
		{"MLX5_LIB_CAP_4K_UAR", MLX5_LIB_CAP_4K_UAR, 1},
		{"MLX5_LIB_CAP_DYN_UAR", MLX5_LIB_CAP_DYN_UAR, 2},
		{"MLX5_QP_FLAG_SCATTER_CQE", MLX5_QP_FLAG_SCATTER_CQE, 2},
		{"MLX5_QP_FLAG_UAR_PAGE_INDEX", MLX5_QP_FLAG_UAR_PAGE_INDEX, 1 << 10},
		{"MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX", MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX, 2},
		{"MLX5_IB_OBJECT_UAR", MLX5_IB_OBJECT_UAR, 0x1008},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %#x, want %#x", tc.name, tc.got, tc.want)
		}
	}
}
