package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
)

// Dial connects an RC QP to a server; Setup posts the first receive before
// the connection request leaves, so the peer's first send finds it.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	buf := make([]byte, 4096)
	var mr *uverbs.MR
	c, err := rdmacm.Dial(ctx, netip.MustParseAddrPort("10.233.0.1:7471"), &rdmacm.Options{
		PrivateData: []byte("hello"),
		Setup: func(c *rdmacm.Conn) (err error) {
			if mr, err = c.PD().RegMR(buf, uverbs.AccessLocalWrite); err != nil {
				return err
			}
			_, err = c.QP().PostRecv([]uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{mr.SGE(0, len(buf))}}})
			return err
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	defer mr.Close()
	fmt.Printf("connected to %v, QPN %#x\n", c.RemoteAddr(), c.QP().QPN())
}

// Listen, look at a request, and accept it (or reject it with a reason).
func ExampleListen() {
	l, err := rdmacm.Listen(netip.MustParseAddrPort("0.0.0.0:7471"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	ctx := context.Background()
	req, err := l.Accept(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if req.Remote.Addr().IsLoopback() {
		req.Reject([]byte("no loopback"))
		return
	}
	c, err := req.Accept(ctx, &rdmacm.Options{PrivateData: []byte("welcome")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ev, _ := c.WaitEvent(ctx) // RDMA_CM_EVENT_DISCONNECTED when the client closes
	fmt.Println(ev.Type)
}

// The low-level API mirrors librdmacm call for call.
func ExampleChannel() {
	ch, err := rdmacm.NewChannel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	id, err := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.233.0.1:7174"), 2*time.Second)
	ev, err := ch.GetEvent(ctx) // ADDR_RESOLVED
	if err != nil || ev.Type != rdmacm.EventAddrResolved {
		fmt.Println(ev, err)
		return
	}
	id.ResolveRoute(2 * time.Second)
	if ev, err = ch.GetEvent(ctx); err != nil || ev.Type != rdmacm.EventRouteResolved {
		fmt.Println(ev, err)
		return
	}
	id.CreateQP(rdmacm.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
	id.Connect(&rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7})
	ev, err = ch.GetEvent(ctx) // ESTABLISHED: the QP is in RTS
	fmt.Println(ev, err)
}

func ExampleEventType_String() {
	fmt.Println(rdmacm.EventEstablished)
	fmt.Println(rdmacm.EventType(99))
	// Output:
	// RDMA_CM_EVENT_ESTABLISHED
	// UNKNOWN EVENT
}

// GetAddrInfo translates a numeric address and a port into what an active
// (connecting) and a passive (listening) rdma_cm id need.
func ExampleGetAddrInfo() {
	ai, err := rdmacm.GetAddrInfo("10.233.0.1", "7471", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ai[0].Family, ai[0].QPType, ai[0].PortSpace, ai[0].DstAddr)

	ai, _ = rdmacm.GetAddrInfo("", "7471", &rdmacm.AddrInfoHints{Flags: rdmacm.AIPassive, QPType: uverbs.QPTypeUD})
	fmt.Println(ai[0].Flags, ai[0].QPType, ai[0].PortSpace, ai[0].SrcAddr)

	_, err = rdmacm.GetAddrInfo("rdma-server", "7471", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	fmt.Println(errors.Is(err, rdmacm.EAINoName))
	// Output:
	// AF_INET RC TCP 10.233.0.1:7471
	// RAI_PASSIVE UD UDP 0.0.0.0:7471
	// true
}

// An incoming connection whose QP receives through the id's shared receive
// queue: CreateSRQ before CreateQP, receives posted to the SRQ.
func ExampleID_CreateSRQ() {
	l, err := rdmacm.NewChannel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	lid, _ := l.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	lid.Bind(netip.MustParseAddrPort("0.0.0.0:7471"))
	lid.Listen(0)
	ev, err := l.GetEvent(context.Background()) // CONNECT_REQUEST
	if err != nil {
		fmt.Println(err)
		return
	}
	id := ev.ID
	srq, err := id.CreateSRQ(rdmacm.SRQInitAttr{Attr: uverbs.SRQAttr{MaxWR: 64, MaxSGE: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, pd, _ := id.Device()
	buf := make([]byte, 64*1024)
	mr, _ := pd.RegMR(buf, uverbs.AccessLocalWrite)
	defer mr.Close()
	for i := range 64 {
		srq.PostRecv([]uverbs.RecvWR{{WRID: uint64(i), SGL: []uverbs.SGE{mr.SGE(i*1024, 1024)}}})
	}
	id.CreateQP(rdmacm.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	id.Accept(nil)
	// Close destroys the QP, then the SRQ.
}

// Devices lists the process's device contexts, the ones the ids use.
func ExampleDevices() {
	l, err := rdmacm.Devices()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for _, c := range l.Contexts() {
		fmt.Println(c.Name(), c.Device().NodeGUID)
	}
}

// WriteCMEvent wakes the goroutine that waits in GetEvent with an event of
// the application's own.
func ExampleID_WriteCMEvent() {
	ch, err := rdmacm.NewChannel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	id, _ := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err := id.WriteCMEvent(rdmacm.EventUser, 0, 42); errors.Is(err, rdmacm.ErrNotSupported) {
		fmt.Println("kernel without WRITE_CM_EVENT")
		return
	}
	ev, err := ch.GetEvent(context.Background())
	fmt.Println(ev.Type == rdmacm.EventUser, ev.Arg, err)
}

// ResolveAddrInfo is GetAddrInfo whose answer arrives as an event.
func ExampleID_ResolveAddrInfo() {
	ch, err := rdmacm.NewChannel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	id, _ := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err := id.ResolveAddrInfo("10.233.0.1", "7471", nil); err != nil {
		fmt.Println(err)
		return
	}
	if ev, err := ch.GetEvent(context.Background()); err != nil || ev.Type != rdmacm.EventAddrInfoResolved {
		fmt.Println(ev, err)
		return
	}
	ai, err := id.QueryAddrInfo()
	fmt.Println(ai, err)
}

// CreateEP resolves an endpoint from GetAddrInfo's result, makes its QP,
// and leaves the connecting to the caller.
func ExampleCreateEP() {
	ctx := context.Background()
	ai, err := rdmacm.GetAddrInfo("10.233.0.1", "7471", &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost})
	if err != nil {
		fmt.Println(err)
		return
	}
	ep, err := rdmacm.CreateEP(ctx, ai[0], &rdmacm.QPInitAttr{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close() // the endpoint's channel too
	ep.Connect(nil)
	ev, err := ep.Channel().GetEvent(ctx) // ESTABLISHED
	fmt.Println(ev, err)
}

// A passive endpoint keeps its QP attributes; GetRequest returns each
// request as an endpoint of its own with its QP made from them.
func ExampleID_GetRequest() {
	ctx := context.Background()
	ai, err := rdmacm.GetAddrInfo("10.233.0.1", "7471", &rdmacm.AddrInfoHints{Flags: rdmacm.AIPassive | rdmacm.AINumericHost})
	if err != nil {
		fmt.Println(err)
		return
	}
	lep, err := rdmacm.CreateEP(ctx, ai[0], &rdmacm.QPInitAttr{Cap: uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lep.Close()
	if err := lep.Listen(0); err != nil {
		fmt.Println(err)
		return
	}
	ep, err := lep.GetRequest(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.Close() // its channel too
	// Post the first receives on ep.QP() here, then accept.
	if err := ep.Accept(nil); err != nil {
		fmt.Println(err)
		return
	}
	ev, err := ep.Channel().GetEvent(ctx) // ESTABLISHED
	fmt.Println(ev, err)
}
