package uverbs_test

import (
	"fmt"
	"log"

	"github.com/goverbs/goverbs/uverbs"
)

// Two RC QPs connected with Endpoint and Connect, one message sent and received. Over a network each side sends
// its Endpoint's MarshalBinary bytes to the other (any channel: TCP, a file, rdma_cm private data).
func ExampleQP_Connect() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	buf, _ := uverbs.AllocBuffer(4096) // page-aligned anonymous mmap
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

	epA, _ := a.Endpoint(nil) // port 1, the RoCE v2 IPv4 GID, a random PSN
	epB, _ := b.Endpoint(nil)
	if err := a.Connect(epB, nil); err != nil { // INIT, RTR, RTS with rdma-core's defaults
		log.Fatal(err)
	}
	if err := b.Connect(epA, nil); err != nil {
		log.Fatal(err)
	}

	copy(buf.Bytes(), "hello")
	b.PostRecv([]uverbs.RecvWR{{WRID: 2, SGL: []uverbs.SGE{mr.SGE(2048, 2048)}}})
	a.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{mr.SGE(0, 5)}}})
	wcs := make([]uverbs.WC, 2)
	for got := 0; got < 2; {
		n, err := cq.Poll(wcs[got:])
		if err != nil {
			log.Fatal(err)
		}
		got += n
	}
	for _, wc := range wcs {
		if err := wc.Err(); err != nil {
			log.Fatalf("work request %d: %v", wc.WRID, err)
		}
	}
	fmt.Printf("%s\n", buf.Bytes()[2048:2053])
}

// An Endpoint travels as EndpointSize bytes.
func ExampleEndpoint_MarshalBinary() {
	ep := uverbs.Endpoint{QPN: 0x11, PSN: 0xabcdef, Port: 1, MTU: uverbs.MTU1024}
	b, _ := ep.MarshalBinary()
	var back uverbs.Endpoint
	err := back.UnmarshalBinary(b)
	fmt.Println(len(b), back == ep, err)
	fmt.Println(back.UnmarshalBinary(b[:10]))
	// Output:
	// 36 true <nil>
	// decode endpoint: 10 bytes, want 36: invalid argument
}

// Enums print their names; a completion's status is an error through WC.Err.
func ExampleWC_Err() {
	wc := uverbs.WC{WRID: 7, Status: uverbs.WCRNRRetryExcErr}
	fmt.Println(uverbs.WCSuccess, uverbs.QPTypeRC, uverbs.QPStateRTS)
	fmt.Println(wc.Err())
	// Output:
	// SUCCESS RC RTS
	// RNR_RETRY_EXC_ERR
}

// Access bits are checked with the kernel's rules before any system call.
func ExampleAccess_Validate() {
	fmt.Println(uverbs.AccessLocalWrite|uverbs.AccessRemoteRead, (uverbs.AccessLocalWrite | uverbs.AccessRemoteRead).Validate())
	fmt.Println(uverbs.AccessRemoteWrite.Validate())
	// Output:
	// LOCAL_WRITE|REMOTE_READ <nil>
	// remote write or atomic access requires local write: invalid argument
}

// GIDs print as the kernel and rdma-core print them; a RoCE v2 IPv4 GID is an IPv4-mapped IPv6 address.
func ExampleGID_String() {
	g := uverbs.GID{10: 0xff, 11: 0xff, 12: 10, 13: 233, 14: 0, 15: 1}
	fmt.Println(g, g.Addr().Unmap())
	fmt.Println(uverbs.MTU1024, uverbs.PortActive, uverbs.ReregPD|uverbs.ReregAccess, uverbs.SRQAttrLimit)
	// Output:
	// 0000:0000:0000:0000:0000:ffff:0ae9:0001 10.233.0.1
	// 1024 ACTIVE PD|ACCESS LIMIT
}
