package rxe

import (
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
)

// Poll copies struct ib_uverbs_wc into verbs.WC and posting copies verbs.SGE into struct rxe_sge as
// blocks: their layouts must agree field by field.
func TestLayouts(t *testing.T) {
	// A field of ours (offset got, size gsz) against the ABI's (offset off, size asz).
	type field struct {
		name     string
		got, off uintptr
		gsz, asz uintptr
	}
	var w verbs.WC
	var a abi.IbUverbsWc
	wc := []field{
		{"wr_id", unsafe.Offsetof(w.WRID), unsafe.Offsetof(a.WrId), unsafe.Sizeof(w.WRID), unsafe.Sizeof(a.WrId)},
		{"status", unsafe.Offsetof(w.Status), unsafe.Offsetof(a.Status), unsafe.Sizeof(w.Status), unsafe.Sizeof(a.Status)},
		{"opcode", unsafe.Offsetof(w.Opcode), unsafe.Offsetof(a.Opcode), unsafe.Sizeof(w.Opcode), unsafe.Sizeof(a.Opcode)},
		{"vendor_err", unsafe.Offsetof(w.VendorErr), unsafe.Offsetof(a.VendorErr), unsafe.Sizeof(w.VendorErr), unsafe.Sizeof(a.VendorErr)},
		{"byte_len", unsafe.Offsetof(w.ByteLen), unsafe.Offsetof(a.ByteLen), unsafe.Sizeof(w.ByteLen), unsafe.Sizeof(a.ByteLen)},
		{"ex", unsafe.Offsetof(w.Imm), unsafe.Offsetof(a.Ex), unsafe.Sizeof(w.Imm), unsafe.Sizeof(a.Ex)},
		{"qp_num", unsafe.Offsetof(w.QPNum), unsafe.Offsetof(a.QpNum), unsafe.Sizeof(w.QPNum), unsafe.Sizeof(a.QpNum)},
		{"src_qp", unsafe.Offsetof(w.SrcQP), unsafe.Offsetof(a.SrcQp), unsafe.Sizeof(w.SrcQP), unsafe.Sizeof(a.SrcQp)},
		{"wc_flags", unsafe.Offsetof(w.Flags), unsafe.Offsetof(a.WcFlags), unsafe.Sizeof(w.Flags), unsafe.Sizeof(a.WcFlags)},
		{"pkey_index", unsafe.Offsetof(w.PKeyIndex), unsafe.Offsetof(a.PkeyIndex), unsafe.Sizeof(w.PKeyIndex), unsafe.Sizeof(a.PkeyIndex)},
		{"slid", unsafe.Offsetof(w.SLID), unsafe.Offsetof(a.Slid), unsafe.Sizeof(w.SLID), unsafe.Sizeof(a.Slid)},
		{"sl", unsafe.Offsetof(w.SL), unsafe.Offsetof(a.Sl), unsafe.Sizeof(w.SL), unsafe.Sizeof(a.Sl)},
		{"dlid_path_bits", unsafe.Offsetof(w.DLIDPathBits), unsafe.Offsetof(a.DlidPathBits), unsafe.Sizeof(w.DLIDPathBits), unsafe.Sizeof(a.DlidPathBits)},
		{"port_num", unsafe.Offsetof(w.PortNum), unsafe.Offsetof(a.PortNum), unsafe.Sizeof(w.PortNum), unsafe.Sizeof(a.PortNum)},
		{"sizeof", 0, 0, unsafe.Sizeof(w), unsafe.Sizeof(a)},
	}
	var s verbs.SGE
	var r abi.RxeSge
	sge := []field{
		{"addr", unsafe.Offsetof(s.Addr), unsafe.Offsetof(r.Addr), unsafe.Sizeof(s.Addr), unsafe.Sizeof(r.Addr)},
		{"length", unsafe.Offsetof(s.Length), unsafe.Offsetof(r.Length), unsafe.Sizeof(s.Length), unsafe.Sizeof(r.Length)},
		{"lkey", unsafe.Offsetof(s.LKey), unsafe.Offsetof(r.Lkey), unsafe.Sizeof(s.LKey), unsafe.Sizeof(r.Lkey)},
		{"sizeof", 0, 0, unsafe.Sizeof(s), unsafe.Sizeof(r)},
	}
	for _, f := range append(wc, sge...) {
		if f.got != f.off || f.gsz != f.asz {
			t.Errorf("%s: goverbs offset %d size %d, kernel offset %d size %d", f.name, f.got, f.gsz, f.off, f.asz)
		}
	}
	// The payload of a send WQE starts right after struct rxe_send_wqe (dma.sge[] / dma.inline_data[]).
	if got := unsafe.Offsetof(abi.RxeSendWqe{}.Dma) + abi.SizeofRxeDmaInfo; got != abi.SizeofRxeSendWqe {
		t.Errorf("send WQE payload at %d, struct ends at %d", got, abi.SizeofRxeSendWqe)
	}
	if got := unsafe.Offsetof(abi.RxeRecvWqe{}.Dma) + abi.SizeofRxeDmaInfo; got != abi.SizeofRxeRecvWqe {
		t.Errorf("recv WQE payload at %d, struct ends at %d", got, abi.SizeofRxeRecvWqe)
	}
}
