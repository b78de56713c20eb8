package verbs_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/verbs"
)

// Enums print their names.
func Example_names() {
	fmt.Println(verbs.QPTypeRC, verbs.QPStateRTS, verbs.WRSendWithImm, verbs.WCRecv)
	fmt.Println(verbs.SendSignaled|verbs.SendInline, verbs.WCWithImm)
	fmt.Println(verbs.WCRNRRetryExcErr, verbs.QPState(9))
	// Output:
	// RC RTS SEND_WITH_IMM RECV
	// SIGNALED|INLINE WITH_IMM
	// RNR_RETRY_EXC_ERR QPState(9)
}

// WC.Err turns a completion's status into an error that errors.Is and errors.As understand.
func ExampleWC_Err() {
	wcs := []verbs.WC{{WRID: 1}, {WRID: 2, Status: verbs.WCRetryExcErr}}
	for i := range wcs {
		err := wcs[i].Err()
		fmt.Println(wcs[i].WRID, err, errors.Is(err, verbs.WCRetryExcErr))
	}
	// Output:
	// 1 <nil> false
	// 2 RETRY_EXC_ERR true
}

// The rkey a memory window will have after its next bind: only the consumer's low byte moves.
func ExampleIncRKey() {
	fmt.Printf("%#x %#x\n", verbs.IncRKey(0x1234), verbs.IncRKey(0x12ff))
	// Output:
	// 0x1235 0x1200
}
