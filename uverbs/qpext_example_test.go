package uverbs_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
)

// ECE on an RC QP, as librdmacm uses it (package rdmacm does this itself for the QPs its IDs create): the
// peer's options are applied with the next Modify, and QueryECE then reports what the device agreed to. On a
// device without ECE (rxe, siw) both calls answer ErrNotSupported, which the caller may ignore.
func ExampleQP_SetECE() {
	ctx, err := uverbs.Open("mlx5_0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	cq, _ := ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	defer cq.Close()
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer qp.Close()
	local, err := qp.QueryECE() // what this side offers, to send in the REQ
	if errors.Is(err, uverbs.ErrNotSupported) {
		fmt.Println("no ECE on this device")
		return
	}
	peer := uverbs.ECE{VendorID: local.VendorID, Options: local.Options} // what the REP carried
	if err := qp.SetECE(peer); err != nil {
		fmt.Println(err)
		return
	}
	if err := qp.Modify(uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: 1}, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|
		uverbs.QPAttrPort|uverbs.QPAttrAccessFlags); err != nil {
		fmt.Println(err)
		return
	}
	agreed, _ := qp.QueryECE()
	fmt.Printf("ECE options %#x\n", agreed.Options)
}

// A send rate limit of 10 Gbit/s on a QP (packet pacing: mlx5; rxe and siw answer ErrNotSupported).
func ExampleQP_SetRateLimit() {
	var qp *uverbs.QP // an RC or UD QP in RTS
	if qp == nil {
		return
	}
	if err := qp.SetRateLimit(uverbs.RateLimit{Rate: 10_000_000}); err != nil {
		fmt.Println(err)
	}
}

// The device clock, converted to nanoseconds with the core clock frequency QueryDevice reports.
func ExampleContext_QueryRTValues() {
	ctx, err := uverbs.Open("mlx5_0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	attr, err := ctx.QueryDevice()
	if err != nil || attr.HCACoreClock == 0 {
		return
	}
	v, err := ctx.QueryRTValues()
	if err != nil {
		fmt.Println(err) // ErrNotSupported on rxe and siw
		return
	}
	fmt.Println("device time (ns):", v.RawClock*1_000_000/attr.HCACoreClock)
}

// A receive that discards the first 64 bytes of each message: its first SGE names the null MR, its second a
// buffer of the caller's.
func ExamplePD_AllocNullMR() {
	var pd *uverbs.PD // on an mlx5 device
	var mr *uverbs.MR // the registered buffer
	if pd == nil || mr == nil {
		return
	}
	null, err := pd.AllocNullMR()
	if err != nil {
		fmt.Println(err) // ErrNotSupported on rxe and siw
		return
	}
	defer null.Close()
	sgl := []uverbs.SGE{{Length: 64, LKey: null.LKey()}, mr.SGE(0, 4096)}
	_ = uverbs.RecvWR{WRID: 1, SGL: sgl}
}
