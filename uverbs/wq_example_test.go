package uverbs_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
)

// Receive-side scaling: four receive WQs on one CQ, each moved to READY and given receive buffers, listed in
// an indirection table (which a raw packet QP's hash then spreads packets over). On mlx5 the WQs are libmlx5's;
// rxe and siw have no work queues (ErrNotSupported, as libibverbs answers there).
func ExamplePD_CreateWQ() {
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
	cq, err := ctx.CreateCQ(uverbs.CQAttr{CQE: 256})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cq.Close()
	buf, err := uverbs.AllocBuffer(4 * 64 * 2048)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()

	wqs := make([]*uverbs.WQ, 4)
	for i := range wqs {
		wq, err := pd.CreateWQ(uverbs.WQInitAttr{Type: uverbs.WQTypeRQ, MaxWR: 64, MaxSGE: 1, CQ: cq})
		if errors.Is(err, uverbs.ErrNotSupported) {
			fmt.Println("no work queues here:", err)
			return
		} else if err != nil {
			fmt.Println(err)
			return
		}
		defer wq.Close() // after the table (defers run last first)
		if err := wq.Modify(uverbs.WQAttr{State: uverbs.WQStateReady}, uverbs.WQAttrState); err != nil {
			fmt.Println(err)
			return
		}
		wrs := make([]uverbs.RecvWR, 64)
		for j := range wrs {
			off := (i*64 + j) * 2048
			wrs[j] = uverbs.RecvWR{WRID: uint64(i<<16 | j),
				SGL: []uverbs.SGE{{Addr: mr.Addr() + uint64(off), Length: 2048, LKey: mr.LKey()}}}
		}
		if _, err := wq.PostRecv(wrs); err != nil {
			fmt.Println(err)
			return
		}
		wqs[i] = wq
	}
	tbl, err := ctx.CreateRWQIndTable(wqs)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tbl.Close()
	fmt.Println(tbl)
}
