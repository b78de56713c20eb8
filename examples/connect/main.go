// Command connect is the README's example: two RC QPs on rxe0, connected with Endpoint and Connect, one message
// sent and received. Its test checks that the README shows exactly this file, and runs it in the lab.
package main

import (
	"fmt"
	"log"

	"github.com/goverbs/goverbs/uverbs"
)

func main() {
	ctx, err := uverbs.Open("rxe0") // discovery over RDMA netlink, GET_CONTEXT over ioctl
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	buf, _ := uverbs.AllocBuffer(4096) // page-aligned anonymous mmap: safe for DMA
	defer buf.Close()
	mr, _ := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	defer mr.Close()
	cq, _ := ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	defer cq.Close()
	attr := uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}
	a, _ := pd.CreateQP(attr)
	defer a.Close()
	b, _ := pd.CreateQP(attr)
	defer b.Close()

	// Each side's Endpoint (QPN, PSN, LID, GID, port, MTU) goes to the other, here in memory; across hosts
	// send ep.MarshalBinary()'s 36 bytes over any channel.
	epA, _ := a.Endpoint(nil)
	epB, _ := b.Endpoint(nil)
	if err := a.Connect(epB, nil); err != nil { // INIT -> RTR -> RTS with rdma-core's defaults
		log.Fatal(err)
	}
	if err := b.Connect(epA, nil); err != nil {
		log.Fatal(err)
	}

	copy(buf.Bytes(), "hello")
	b.PostRecv([]uverbs.RecvWR{{WRID: 2, SGL: []uverbs.SGE{mr.SGE(2048, 2048)}}})
	a.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{mr.SGE(0, 5)}}})
	wcs := make([]uverbs.WC, 2) // posting and polling allocate nothing
	for got := 0; got < 2; {
		n, err := cq.Poll(wcs[got:])
		if err != nil {
			log.Fatal(err)
		}
		got += n
	}
	for _, wc := range wcs {
		if err := wc.Err(); err != nil { // the status as an error: errors.Is(err, uverbs.WCRetryExcErr)
			log.Fatalf("work request %d: %v", wc.WRID, err)
		}
	}
	fmt.Printf("%s\n", buf.Bytes()[2048:2053])
}
