package siw_test

import (
	"fmt"
	"log"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/uverbs"
)

// Programs reach the provider through package uverbs, which links it in: Open picks it by the device's driver
// id (RDMA_DRIVER_SIW), and every verb on the context then runs siw's data path (its queues are arrays in
// memory shared with the kernel, mapped from the uverbs file). A siw device is made with
// "rdma link add siw0 type siw netdev eth0".
func Example() {
	ctx, err := uverbs.Open("siw0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	fmt.Println(ctx.DriverID() == netlinkrdma.DriverSIW, ctx.DriverID())
}
