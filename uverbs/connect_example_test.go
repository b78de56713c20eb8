package uverbs_test

import (
	"fmt"
	"io"
	"log"
	"net"

	"github.com/goverbs/goverbs/uverbs"
)

// Connecting a QP to a peer's across a network: each side sends its Endpoint's bytes over an ordinary
// connection (here a net.Conn), reads the peer's, and calls Connect. The whole single-host program is
// examples/connect (the README's example).
func ExampleQP_Connect() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	cq, _ := ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	defer cq.Close()
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()

	conn, err := net.Dial("tcp", "peer.example:18515") // the peer runs the same code on its side
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	local, _ := qp.Endpoint(nil) // port 1, the RoCE v2 IPv4 GID, a random PSN
	b, _ := local.MarshalBinary()
	if _, err := conn.Write(b); err != nil {
		log.Fatal(err)
	}
	peer := make([]byte, uverbs.EndpointSize)
	if _, err := io.ReadFull(conn, peer); err != nil {
		log.Fatal(err)
	}
	var remote uverbs.Endpoint
	if err := remote.UnmarshalBinary(peer); err != nil {
		log.Fatal(err)
	}
	if err := qp.Connect(remote, nil); err != nil { // INIT, RTR, RTS with rdma-core's defaults
		log.Fatal(err)
	}
	fmt.Println("connected to QP", remote.QPN)
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
