package rxe_test

import (
	"fmt"
	"log"

	"github.com/goverbs/goverbs/uverbs"
)

// Programs reach the provider through package uverbs, which links it in: Open picks it by the device's driver
// id, and every verb on the context then runs rxe's data path (its queues are rings in memory shared with the
// kernel, mapped from the uverbs file).
func Example() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	fmt.Println(ctx.DriverID() == uverbs.DriverRXE, ctx.DriverID())
}
