package uverbs_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/goverbs/goverbs/uverbs"
)

// Memory another driver exported as a dma-buf (here a file descriptor passed in by the program that made it:
// a GPU's memory, a dma-buf heap's) registered as an MR at an I/O virtual address of the caller's choice; SGEs
// and the peer's remote addresses are in that space. mlx5 registers dma-bufs, as libmlx5; rxe and siw do not
// (ErrNotSupported, as libibverbs answers there).
func ExamplePD_RegDmabufMR() {
	dmabuf, err := os.Open("/proc/self/fd/3") // the dma-buf, however this process received it
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dmabuf.Close()
	ctx, err := uverbs.Open("mlx5_0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pd.Close()
	const iova = 0x10000000
	mr, err := pd.RegDmabufMR(0, 1<<20, iova, int(dmabuf.Fd()), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	if errors.Is(err, uverbs.ErrNotSupported) {
		fmt.Println("no dma-buf registration here:", err)
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	// A receive into the first 4 KiB: SGE{Addr: iova, Length: 4096, LKey: mr.LKey()}, or mr.SGE(0, 4096).
	fmt.Printf("rkey %#x, iova %#x\n", mr.RKey(), mr.IOVA())
}
