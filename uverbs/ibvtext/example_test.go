package ibvtext_test

import (
	"fmt"

	"github.com/goverbs/goverbs/uverbs/ibvtext"
	"github.com/goverbs/goverbs/verbs"
)

// A completion's status as ibv_rc_pingpong reports it, beside goverbs' canonical name.
func ExampleWCStatus() {
	st := verbs.WCRetryExcErr
	fmt.Printf("Failed status %s (%d)\n", ibvtext.WCStatus(st), st)
	fmt.Println(st)
	// Output:
	// Failed status transport retry counter exceeded (12)
	// RETRY_EXC_ERR
}
