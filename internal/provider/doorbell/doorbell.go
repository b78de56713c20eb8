// Package doorbell is the send doorbell of the software providers (rxe, siw): the legacy POST_SEND write()
// command with no work requests, which makes the kernel look at a QP's send ring (rdma-core's rxe and siw write
// the same 32 bytes). One per QP, built at creation; ringing it allocates nothing.
package doorbell

import (
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/ioctl"
)

// Doorbell is struct ib_uverbs_cmd_hdr, struct ib_uverbs_post_send and the response the kernel writes. It lives
// on the heap for the QP's lifetime (the kernel writes the response through a pointer) and is never modified
// after New, so concurrent rings may share it.
type Doorbell struct {
	hdr  abi.IbUverbsCmdHdr
	cmd  abi.IbUverbsPostSend
	resp abi.IbUverbsPostSendResp
}

// Len is the size of the doorbell write: header and command, contiguous in Doorbell.
const Len = abi.SizeofIbUverbsCmdHdr + abi.SizeofIbUverbsPostSend

var _ [unsafe.Offsetof(Doorbell{}.cmd) - abi.SizeofIbUverbsCmdHdr]struct{}
var _ [abi.SizeofIbUverbsCmdHdr - unsafe.Offsetof(Doorbell{}.cmd)]struct{}

// New is the doorbell of the QP with kernel handle qpHandle.
func New(qpHandle uint32) *Doorbell {
	db := new(Doorbell)
	db.hdr = abi.IbUverbsCmdHdr{
		Command:  abi.IB_USER_VERBS_CMD_POST_SEND,
		InWords:  Len / 4,
		OutWords: abi.SizeofIbUverbsPostSendResp / 4,
	}
	db.cmd = abi.IbUverbsPostSend{
		Response: uint64(uintptr(unsafe.Pointer(&db.resp))),
		QpHandle: qpHandle,
		WqeSize:  abi.SizeofIbUverbsSendWr, // the kernel requires at least this even with no work requests
	}
	return db
}

// Ring writes the doorbell to the command fd. The kernel only schedules the QP's send processing and returns,
// so a raw system call (no scheduler hand-off) fits.
func (db *Doorbell) Ring(fd int) error {
	return ioctl.WriteRaw(fd, unsafe.Pointer(&db.hdr), Len)
}

// Bytes are the Len bytes Ring writes (for tests that check what a fake kernel read).
func (db *Doorbell) Bytes() []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&db.hdr)), Len) }
