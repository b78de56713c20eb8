package mlx5_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/goverbs/goverbs/uverbs"
)

// Programs reach the provider through package uverbs, which links it in: Open picks it by the device's driver
// id. A verb the provider does not implement fails with the module's one not-supported error, never a panic.
// (mlx5 is proven against golden vectors, its emulator and libmlx5's own output; on hardware it is unproven.)
func Example() {
	ctx, err := uverbs.Open("mlx5_0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if errors.Is(err, uverbs.ErrNotSupported) {
		log.Fatal("this device lacks a verb goverbs' mlx5 provider needs: ", err)
	} else if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	fmt.Println(ctx.DriverID())
}
