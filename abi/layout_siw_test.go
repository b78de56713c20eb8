//go:build linux

package abi

import (
	"testing"
	"unsafe"
)

// The expected values are gcc's sizeof and offsetof on the 6.1 <rdma/siw-abi.h> on x86-64 (a C program
// printing them, not the generated code); they agree with rdma-core's kernel-headers/rdma/siw-abi.h.
func TestLayoutSiw(t *testing.T) {
	var sqe SiwSqe
	var rqe SiwRqe
	var cqe SiwCqe
	var sge SiwSge
	var cq SiwUrespCreateCq
	var qp SiwUrespCreateQp
	var srq SiwUrespCreateSrq
	checkLayouts(t, []layout{
		{"sizeof(siw_uresp_create_cq)", unsafe.Sizeof(cq), 16},
		{"sizeof(siw_uresp_create_qp)", unsafe.Sizeof(qp), 32},
		{"sizeof(siw_uresp_create_srq)", unsafe.Sizeof(srq), 16},
		{"sizeof(siw_uresp_alloc_ctx)", unsafe.Sizeof(SiwUrespAllocCtx{}), 8},
		{"sizeof(siw_ureq_reg_mr)", unsafe.Sizeof(SiwUreqRegMr{}), 8},
		{"sizeof(siw_uresp_reg_mr)", unsafe.Sizeof(SiwUrespRegMr{}), 8},
		{"sizeof(siw_sge)", unsafe.Sizeof(sge), 16},
		{"sizeof(siw_sqe)", unsafe.Sizeof(sqe), 120},
		{"sizeof(siw_rqe)", unsafe.Sizeof(rqe), 112},
		{"sizeof(siw_cqe)", unsafe.Sizeof(cqe), 32},
		{"sizeof(siw_cq_ctrl)", unsafe.Sizeof(SiwCqCtrl{}), 8},

		{"siw_uresp_create_cq.cq_id", unsafe.Offsetof(cq.CqId), 0},
		{"siw_uresp_create_cq.num_cqe", unsafe.Offsetof(cq.NumCqe), 4},
		{"siw_uresp_create_cq.cq_key", unsafe.Offsetof(cq.CqKey), 8},
		{"siw_uresp_create_qp.qp_id", unsafe.Offsetof(qp.QpId), 0},
		{"siw_uresp_create_qp.num_sqe", unsafe.Offsetof(qp.NumSqe), 4},
		{"siw_uresp_create_qp.num_rqe", unsafe.Offsetof(qp.NumRqe), 8},
		{"siw_uresp_create_qp.sq_key", unsafe.Offsetof(qp.SqKey), 16},
		{"siw_uresp_create_qp.rq_key", unsafe.Offsetof(qp.RqKey), 24},
		{"siw_uresp_create_srq.num_rqe", unsafe.Offsetof(srq.NumRqe), 0},
		{"siw_uresp_create_srq.srq_key", unsafe.Offsetof(srq.SrqKey), 8},

		{"siw_sge.laddr", unsafe.Offsetof(sge.Laddr), 0},
		{"siw_sge.length", unsafe.Offsetof(sge.Length), 8},
		{"siw_sge.lkey", unsafe.Offsetof(sge.Lkey), 12},

		{"siw_sqe.id", unsafe.Offsetof(sqe.Id), 0},
		{"siw_sqe.flags", unsafe.Offsetof(sqe.Flags), 8},
		{"siw_sqe.num_sge", unsafe.Offsetof(sqe.NumSge), 10},
		{"siw_sqe.opcode", unsafe.Offsetof(sqe.Opcode), 11},
		{"siw_sqe.rkey", unsafe.Offsetof(sqe.Rkey), 12},
		{"siw_sqe.raddr", unsafe.Offsetof(sqe.Raddr), 16},
		{"siw_sqe.base_mr", ptrOff(&sqe, sqe.BaseMr()), 16},
		{"siw_sqe.sge", unsafe.Offsetof(sqe.Sge), 24},
		{"siw_sqe.access", ptrOff(&sqe, sqe.Access()), 24},

		{"siw_rqe.id", unsafe.Offsetof(rqe.Id), 0},
		{"siw_rqe.flags", unsafe.Offsetof(rqe.Flags), 8},
		{"siw_rqe.num_sge", unsafe.Offsetof(rqe.NumSge), 10},
		{"siw_rqe.opcode", unsafe.Offsetof(rqe.Opcode), 11},
		{"siw_rqe.sge", unsafe.Offsetof(rqe.Sge), 16},

		{"siw_cqe.id", unsafe.Offsetof(cqe.Id), 0},
		{"siw_cqe.flags", unsafe.Offsetof(cqe.Flags), 8},
		{"siw_cqe.opcode", unsafe.Offsetof(cqe.Opcode), 9},
		{"siw_cqe.status", unsafe.Offsetof(cqe.Status), 10},
		{"siw_cqe.bytes", unsafe.Offsetof(cqe.Bytes), 12},
		{"siw_cqe.imm_data", unsafe.Offsetof(cqe.ImmData), 16},
		{"siw_cqe.inval_stag", ptrOff(&cqe, cqe.InvalStag()), 16},
		{"siw_cqe.base_qp", unsafe.Offsetof(cqe.BaseQp), 24},
		{"siw_cqe.qp_id", ptrOff(&cqe, cqe.QpId()), 24},

		{"siw_cq_ctrl.flags", unsafe.Offsetof(SiwCqCtrl{}.Flags), 0},
	})
	if SIW_MAX_INLINE != 80 || SIW_MAX_SGE != 6 || SIW_ABI_VERSION != 1 || SIW_INVAL_UOBJ_KEY != 0x90000 {
		t.Errorf("SIW_MAX_INLINE %d SIW_MAX_SGE %d SIW_ABI_VERSION %d SIW_INVAL_UOBJ_KEY %#x, want 80, 6, 1, 0x90000",
			SIW_MAX_INLINE, SIW_MAX_SGE, SIW_ABI_VERSION, SIW_INVAL_UOBJ_KEY)
	}
}
