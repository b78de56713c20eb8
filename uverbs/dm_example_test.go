package uverbs_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
)

// A buffer in device memory: allocated, filled from the host in 4-byte words, registered as a zero-based MR
// (whose SGEs and remote addresses are offsets into it) and read back. On mlx5 it is MEMIC, as libmlx5's;
// rxe and siw have no device memory (ErrNotSupported, as libibverbs answers there).
func ExampleContext_AllocDM() {
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
	dm, err := ctx.AllocDM(uverbs.DMAttr{Length: 4096, LogAlign: 3})
	if errors.Is(err, uverbs.ErrNotSupported) {
		fmt.Println("no device memory here:", err)
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer dm.Close() // after the MR (defers run last first)
	if err := dm.CopyTo(0, []byte("a header the device sends often!")); err != nil {
		fmt.Println(err)
		return
	}
	mr, err := pd.RegDMMR(dm, 0, 4096, uverbs.AccessZeroBased|uverbs.AccessLocalWrite|uverbs.AccessRemoteRead)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	// A send of the header: SGE{Addr: 0, Length: 32, LKey: mr.LKey()}; a peer reads it with mr.RKey() at 0.
	back := make([]byte, 32)
	if err := dm.CopyFrom(back, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (lkey %#x)\n", back, mr.LKey())
}

// Device memory another process allocated on a shared command file (its fd received over a Unix socket, here
// as fd 3), imported by the handle that process sent along: copies work as on the exporter's DM, and Close only
// forgets it (the exporter frees it). mlx5 imports, as libmlx5; rxe and siw have no device memory.
func ExampleContext_ImportDM() {
	ctx, err := uverbs.ImportContext(3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	const handle = 0x41 // the exporter's DM.Handle()
	dm, err := ctx.ImportDM(handle)
	if errors.Is(err, uverbs.ErrNotSupported) {
		fmt.Println("no device memory import here:", err)
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer dm.Close()
	head := make([]byte, 32)
	if err := dm.CopyFrom(head, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes of device memory begin with %q\n", dm.Len(), head)
}
