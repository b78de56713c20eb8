package hw_test

import (
	"fmt"

	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
)

// Example drives a send queue over plain memory, as a test or an emulated device would: post one RDMA write,
// then look at the doorbell record and the 8-byte doorbell the register received.
func Example() {
	ring := make([]uint64, 8*64/8) // 8 basic blocks, 8-byte aligned
	ringBytes := asBytes(ring)
	dbr, _ := hw.NewDoorbellRecord(asBytes(make([]uint64, 1)))
	uar := make([]uint64, 1)
	reg, _ := mmio.RegFromBytes(asBytes(uar))
	bf, _ := hw.NewBFReg(reg, 0, false) // no BlueFlame: 8-byte doorbells only
	sq, err := hw.NewSendQueue(hw.SendQueueConfig{Buf: ringBytes, WQECount: 8, MaxPost: 8, MaxSGE: 1,
		QPN: 0x1234, Type: hw.QPTypeRC, DBR: dbr, BF: bf})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, st := sq.PostSend([]hw.SendWR{{WRID: 7, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		RemoteAddr: 0x10000, RKey: 0x42, SGL: []hw.SGE{{Addr: 0x20000, Length: 64, LKey: 0x99}}}})
	fmt.Println(n, st.Err())
	fmt.Printf("ctrl: % x\n", ringBytes[:16])
	fmt.Printf("doorbell: % x\n", asBytes(uar))
	// Output:
	// 1 <nil>
	// ctrl: 00 00 00 08 00 12 34 03 00 00 00 08 00 00 00 00
	// doorbell: 00 00 00 08 00 12 34 03
}
