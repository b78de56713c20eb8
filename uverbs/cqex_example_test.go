package uverbs_test

import (
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
)

// Reading an extended CQ's completions in place, as ibv_start_poll / ibv_next_poll / ibv_end_poll do.
func ExampleCQ_StartPoll() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		return
	}
	defer ctx.Close()
	cq, err := ctx.CreateCQEx(uverbs.CQExAttr{CQE: 256, WCFlags: uverbs.WCStandardFlags, Flags: uverbs.CQSingleThreaded})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cq.Close()
	// ... create QPs on cq and post work requests ...
	wc, err := cq.StartPoll()
	if err != nil || wc == nil { // a failed poll, or an empty CQ: no poll in progress
		return
	}
	for ; wc != nil; wc, err = cq.NextPoll() {
		fmt.Println(wc.WRID, wc.Status, wc.Opcode, wc.ByteLen, wc.QPNum)
	}
	cq.EndPoll()
	if err != nil {
		fmt.Println(err)
	}
}

// The completion fields and creation flags print as libibverbs names them.
func ExampleWCExFlags() {
	fmt.Println(uverbs.WCStandardFlags)
	fmt.Println(uverbs.WCExWithCompletionTimestamp | uverbs.WCExWithFlowTag)
	fmt.Println(uverbs.CQSingleThreaded | uverbs.CQIgnoreOverrun)
	// Output:
	// BYTE_LEN|IMM|QP_NUM|SRC_QP|SLID|SL|DLID_PATH_BITS
	// COMPLETION_TIMESTAMP|FLOW_TAG
	// SINGLE_THREADED|IGNORE_OVERRUN
}
