package limit_test

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cgroup/limit"
)

func ExampleCharge() {
	// What the verbs core does with the errno of a create CQ command.
	err := limit.Charge(fmt.Errorf("create CQ on rxe0: %w", unix.EAGAIN), "rxe0", limit.HCAObject)
	var le *limit.Error
	fmt.Println(errors.Is(err, limit.ErrReached), errors.Is(err, unix.EAGAIN), errors.As(err, &le) && le.Resource == limit.HCAObject)
	fmt.Println(err)
	// Any other error passes through unchanged.
	fmt.Println(limit.Charge(unix.EINVAL, "rxe0", limit.HCAObject) == unix.EINVAL)
	// Output:
	// true true true
	// rdma cgroup limit reached: hca_object on rxe0: create CQ on rxe0: resource temporarily unavailable
	// true
}
