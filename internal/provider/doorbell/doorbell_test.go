package doorbell

import (
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

// The doorbell is the 32-byte legacy POST_SEND command rdma-core's rxe and siw write: header, then
// ib_uverbs_post_send with no work requests, the response pointing at the doorbell's own 4-byte response.
func TestEncoding(t *testing.T) {
	db := New(0xabcd)
	b := db.Bytes()
	if len(b) != 32 {
		t.Fatalf("doorbell is %d bytes, want 32", len(b))
	}
	hdr := (*abi.IbUverbsCmdHdr)(unsafe.Pointer(&b[0]))
	cmd := (*abi.IbUverbsPostSend)(unsafe.Pointer(&b[abi.SizeofIbUverbsCmdHdr]))
	if hdr.Command != abi.IB_USER_VERBS_CMD_POST_SEND || hdr.InWords != 8 || hdr.OutWords != 1 {
		t.Errorf("header = %+v, want command %d in_words 8 out_words 1", *hdr, abi.IB_USER_VERBS_CMD_POST_SEND)
	}
	if cmd.QpHandle != 0xabcd || cmd.WrCount != 0 || cmd.SgeCount != 0 {
		t.Errorf("command = %+v, want qp_handle 0xabcd and no work requests", *cmd)
	}
	if cmd.WqeSize < abi.SizeofIbUverbsSendWr {
		t.Errorf("wqe_size %d < sizeof(ib_uverbs_send_wr) %d: the kernel refuses it", cmd.WqeSize, abi.SizeofIbUverbsSendWr)
	}
	if cmd.Response != uint64(uintptr(unsafe.Pointer(&db.resp))) {
		t.Errorf("response %#x does not point at the doorbell's response %p", cmd.Response, &db.resp)
	}
}
