package rxe_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/providers/rxe"
	"golang.org/x/sys/unix"
)

// Data-path errors name the operation and the reason and match the errno rdma-core returns, so callers test
// them with errors.Is: ENOMEM means the queue is full (reap completions and post the rest).
func ExampleError() {
	var err error = &rxe.Error{Op: "post send", Reason: "send queue full", Err: unix.ENOMEM}
	fmt.Println(err)
	fmt.Println(errors.Is(err, unix.ENOMEM))
	// Output:
	// rxe: post send: send queue full: cannot allocate memory
	// true
}
