package conformance

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// iWARP (siw in the lab) differs from RoCE (rxe) where this suite is most direct: a QP reaches RTS only through
// the connection manager — iw_cm's MPA exchange over a TCP connection moves both QPs there, and a modify to RTR
// or RTS by hand is refused — and iWARP has no UD, UC, immediate data or atomics. On such a device pair connects
// its players through rdma_cm, as rdma-core's tests do on iWARP (pyverbs' CMResources): each QP is created on
// its rdma_cm id with the player's own PD, CQ and SRQ, and the two ids connect over the device's netdev
// address. Every other test asserts iWARP's behaviour where it differs; docs/kernels.md lists the differences.

// iwarp reports whether the device under test speaks iWARP (node type RNIC).
func (e *env) iwarp() bool { return e.ctx.Device().NodeType == netlinkrdma.NodeTypeRNIC }

// netdevAddr is the first IPv4 address of the netdev behind the test port, as RDMA netlink names it
// (RDMA_NLDEV_ATTR_NDEV_INDEX; 6.1's siw leaves sysfs' gid_attrs/ndevs unreadable): rdma_cm on iWARP connects
// over TCP between such addresses, and 127.0.0.1 never reaches an RDMA device.
func (e *env) netdevAddr() netip.Addr {
	t := e.t
	t.Helper()
	c, err := netlinkrdma.Dial()
	require.NoError(t, err)
	defer c.Close()
	dev, err := c.Device(e.ctx.Name())
	require.NoError(t, err, "RDMA netlink device %s", e.ctx.Name())
	port, err := c.Port(dev.Index, uint32(e.pnum))
	require.NoError(t, err, "RDMA netlink port %d of %s", e.pnum, e.ctx.Name())
	require.NotZero(t, port.NetdevIndex, "port %d of %s has no netdev", e.pnum, e.ctx.Name())
	ifi, err := net.InterfaceByIndex(int(port.NetdevIndex))
	require.NoError(t, err)
	addrs, err := ifi.Addrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
				return ip.Unmap()
			}
		}
	}
	t.Fatalf("netdev %s of %s has no IPv4 address for rdma_cm", ifi.Name, e.ctx.Name())
	return netip.Addr{}
}

// pairCM creates two RC players and connects them through rdma_cm (the iWARP form of pair): the server
// listens on the netdev's address, the client resolves it and connects, each QP made on its id with the
// player's PD, CQ and SRQ; both sides wait for ESTABLISHED. The ids (and with them the QPs) are destroyed at
// cleanup, before the players' MRs, CQs and PDs.
func (e *env) pairCM(o playerOpts) (client, server *player) {
	t := e.t
	t.Helper()
	o.defaults()
	switch {
	case o.qpType == uverbs.QPTypeUD:
		e.skipIWARP(gapUD)
	case o.qpType == uverbs.QPTypeUC:
		e.skipIWARP(gapUC)
	case o.qpType != uverbs.QPTypeRC:
		t.Fatalf("pairCM connects RC players, not %v", o.qpType)
	case o.sendOps != 0:
		e.skipIWARP(gapExtQP)
	}
	o.viaCM = true
	client, server = e.newPlayer(o), e.newPlayer(o)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	ip := e.netdevAddr()

	channel := func() *rdmacm.Channel {
		ch, err := rdmacm.NewChannel()
		require.NoError(t, err)
		t.Cleanup(func() { ch.Close() })
		return ch
	}
	await := func(ch *rdmacm.Channel, want rdmacm.EventType) *rdmacm.Event {
		t.Helper()
		ev, err := ch.GetEvent(ctx)
		require.NoError(t, err, "waiting for %v", want)
		require.Equal(t, want.String(), ev.Type.String(), "rdma_cm event (status %d)", ev.Status)
		return ev
	}
	qpInit := func(p *player) rdmacm.QPInitAttr {
		return rdmacm.QPInitAttr{PD: p.pd, SendCQ: p.cq, RecvCQ: p.cq, SRQ: p.srq, Cap: o.cap}
	}
	param := func() *rdmacm.ConnParam {
		return &rdmacm.ConnParam{ResponderResources: rdAtomic, InitiatorDepth: rdAtomic, RetryCount: retryCnt, RNRRetryCount: rnrRetry}
	}
	closeID := func(id *rdmacm.ID) { t.Cleanup(func() { id.Close() }) }

	lch, cch := channel(), channel()
	lid, err := lch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	require.NoError(t, err)
	closeID(lid)
	require.NoError(t, lid.Bind(netip.AddrPortFrom(ip, 0)))
	require.NoError(t, lid.Listen(1))
	cid, err := cch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	require.NoError(t, err)
	closeID(cid)
	require.NoError(t, cid.ResolveAddr(netip.AddrPort{}, netip.AddrPortFrom(ip, lid.LocalAddr().Port()), 2*time.Second))
	await(cch, rdmacm.EventAddrResolved)
	require.NoError(t, cid.ResolveRoute(2*time.Second))
	await(cch, rdmacm.EventRouteResolved)
	client.qp, err = cid.CreateQP(qpInit(client))
	require.NoError(t, err, "create the client's QP on its rdma_cm id")
	require.NoError(t, cid.Connect(param()))

	req := await(lch, rdmacm.EventConnectRequest)
	sid := req.ID
	closeID(sid)
	server.qp, err = sid.CreateQP(qpInit(server))
	require.NoError(t, err, "create the server's QP on its rdma_cm id")
	require.NoError(t, sid.Accept(param()))
	await(cch, rdmacm.EventEstablished)
	await(lch, rdmacm.EventEstablished)
	client.peer, server.peer = server, client
	return client, server
}

// iwarpGap is something an iWARP device lacks that RoCE and InfiniBand have. A test that needs it skips on
// iWARP naming the subtest of TestIWARPDifferences that asserts the device's refusal, so every difference is
// asserted once, where it can fail, and nothing is silently passed over.
type iwarpGap string

const (
	gapUD          iwarpGap = "UD QPs"
	gapUC          iwarpGap = "UC QPs"
	gapImm         iwarpGap = "immediate data"
	gapAtomic      iwarpGap = "atomic operations"
	gapMW          iwarpGap = "memory windows"
	gapAH          iwarpGap = "address handles"
	gapResize      iwarpGap = "CQ resize"
	gapPKey        iwarpGap = "P_Key table"
	gapHandConnect iwarpGap = "QPs connected by hand (the CM moves them to RTS)"
	gapExtQP       iwarpGap = "extended QP send operations"
	gapRemoteErr   iwarpGap = "IB completion statuses for remote errors"
	gapStateMach   iwarpGap = "IB QP state machine"
	gapPathAttrs   iwarpGap = "IB path attributes in a QP query"
)

// queryReportsState reports whether a QP query reports the QP's state: 6.1's siw (siw_query_qp) leaves it
// unset, so every QP reads RESET there; the lab's 6.12 and 7.3.4 fill it (docs/devices.md).
func (e *env) queryReportsState() bool { return !e.iwarp() || labtest.Kernel().AtLeast(6, 12) }

// bornState is the state a query reports for a new QP: RESET, INIT on iWARP (siw's IDLE) where the query
// reports states.
func (e *env) bornState() string {
	if e.iwarp() && e.queryReportsState() {
		return "INIT"
	}
	return "RESET"
}

// dgramType is the QP type the tests that need any QP (not its traffic) create: UD, and on iWARP, which has
// none, RC.
func (e *env) dgramType() uverbs.QPType {
	if e.iwarp() {
		return uverbs.QPTypeRC
	}
	return uverbs.QPTypeUD
}

// skipIWARP skips the test on an iWARP device, which lacks gap.
func (e *env) skipIWARP(gap iwarpGap) {
	e.t.Helper()
	if e.iwarp() {
		e.t.Skipf("iWARP device %s has no %s: its refusal is asserted by TestIWARPDifferences/%s", e.ctx.Name(), gap, gapName(gap))
	}
}

// gapName is the subtest of TestIWARPDifferences for gap.
func gapName(gap iwarpGap) string { return strings.ReplaceAll(string(gap), " ", "_") }

// TestIWARPDifferences asserts, on an iWARP device, each thing it lacks that the rest of the suite uses on
// RoCE (the tests that need one skip there, naming its subtest here): the refusal is typed
// (uverbs.ErrNotSupported, EOPNOTSUPP) where the device or its user ABI has no such thing. On a RoCE or IB
// device it skips: none of these differences apply.
func TestIWARPDifferences(t *testing.T) {
	e := newEnv(t)
	if !e.iwarp() {
		t.Skipf("%s is not an iWARP device (node type %v): the iWARP differences do not apply", e.ctx.Name(), e.ctx.Device().NodeType)
	}
	refused := func(t *testing.T, err error, what string) {
		t.Helper()
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "%s on iWARP", what)
	}
	run := func(gap iwarpGap, f func(t *testing.T, e *env)) {
		t.Run(gapName(gap), func(t *testing.T) { f(t, newEnv(t)) })
	}
	run(gapUD, func(t *testing.T, e *env) {
		_, err := e.pd().CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeUD, SendCQ: e.cq(4), RecvCQ: e.cq(4), Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		refused(t, err, "create a UD QP")
	})
	run(gapUC, func(t *testing.T, e *env) {
		_, err := e.pd().CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeUC, SendCQ: e.cq(4), RecvCQ: e.cq(4), Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		refused(t, err, "create a UC QP")
	})
	run(gapExtQP, func(t *testing.T, e *env) {
		_, err := e.pd().CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: e.cq(4), RecvCQ: e.cq(4), SendOps: uverbs.SendOpSend,
			Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		refused(t, err, "create an extended QP with send operations")
	})
	run(gapImm, func(t *testing.T, e *env) {
		client, _ := e.pairCM(playerOpts{})
		for _, op := range []uverbs.WROpcode{uverbs.WRSendWithImm, uverbs.WRRDMAWriteWithImm} {
			_, err := client.qp.PostSend([]uverbs.SendWR{client.sendWR(op, client.o.msgSize)})
			refused(t, err, "post "+op.String())
		}
	})
	run(gapAtomic, func(t *testing.T, e *env) {
		require.Zero(t, e.dev.AtomicCap, "atomic_cap")
		client, server := e.pairCM(playerOpts{msgSize: 8})
		for _, op := range []uverbs.WROpcode{uverbs.WRAtomicCmpAndSwp, uverbs.WRAtomicFetchAndAdd} {
			wr := client.sendWR(op, 8)
			wr.RemoteAddr, wr.RKey = server.mr.Addr()+uint64(server.recvOff()), server.remoteKey()
			_, err := client.qp.PostSend([]uverbs.SendWR{wr})
			refused(t, err, "post "+op.String())
		}
	})
	run(gapMW, func(t *testing.T, e *env) {
		_, err := e.pd().AllocMW(uverbs.MWType2)
		refused(t, err, "allocate a type 2 memory window")
		_, err = e.pd().AllocMW(uverbs.MWType1)
		refused(t, err, "allocate a type 1 memory window")
	})
	run(gapAH, func(t *testing.T, e *env) {
		_, err := e.pd().CreateAH(e.globalAH())
		refused(t, err, "create an address handle")
	})
	run(gapResize, func(t *testing.T, e *env) {
		refused(t, e.cq(4).Resize(8), "resize a CQ")
	})
	run(gapPKey, func(t *testing.T, e *env) {
		require.NotEqual(t, uverbs.NodeType(1), e.ctx.Device().NodeType)
		_, err := e.ctx.QueryPKey(e.pnum, 0)
		require.Error(t, err, "P_Key 0 of an iWARP port")
		t.Logf("P_Key query on iWARP: %v", err)
	})
	// iWARP completes an RDMA WRITE on the requester once TCP has the data: the responder's refusal (a
	// TERMINATE message) arrives afterwards and moves the connection's QPs to ERROR, where IB and RoCE
	// report REM_ACCESS_ERR on the request itself.
	run(gapRemoteErr, func(t *testing.T, e *env) {
		client, server := e.pairCM(playerOpts{})
		raddr := server.mr.Addr() + uint64(server.recvOff())
		wc := rdmaWriteOnce(t, client, server.mr.RKey()+1, raddr, 8)
		require.Equal(t, uverbs.WCSuccess.String(), wc.Status.String(), "RDMA WRITE with a wrong rkey, on the requester")
		if !e.queryReportsState() {
			// 6.1's siw reports no QP state (docs/devices.md), and siw completes no request posted after the
			// TERMINATE on any lab kernel, so the connection's end is not observable there.
			return
		}
		// The TERMINATE follows and moves the requester's QP to ERROR.
		deadline := time.Now().Add(hangGuard)
		for {
			a, err := client.qp.Query(uverbs.QPAttrState)
			require.NoError(t, err)
			if a.State == uverbs.QPStateErr {
				break
			}
			require.True(t, time.Now().Before(deadline), "the requester's QP is still %v %v after the refused WRITE", a.State, hangGuard)
			time.Sleep(10 * time.Millisecond)
		}
	})
	// siw checks no IB transition: the kernel's ib_modify_qp_is_ok is for IB and RoCE drivers, and siw's own
	// state machine follows the CM, so a move a RoCE device refuses (RESET to RTR, without any attribute) is
	// taken.
	run(gapStateMach, func(t *testing.T, e *env) {
		p := e.newPlayer(playerOpts{})
		require.NoError(t, p.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: pathMTU}, uverbs.QPAttrState|uverbs.QPAttrPathMTU),
			"RESET->RTR without a destination")
	})
	// A connected iWARP QP's query reports no IB path: the destination QP number is 0 (iWARP addresses the
	// peer by its TCP connection).
	run(gapPathAttrs, func(t *testing.T, e *env) {
		client, _ := e.pairCM(playerOpts{})
		a, err := client.qp.Query(uverbs.QPAttrState | uverbs.QPAttrDestQPN)
		require.NoError(t, err)
		if e.queryReportsState() {
			require.Equal(t, "RTS", a.State.String())
		}
		require.Zero(t, a.DestQPN)
	})
	run(gapHandConnect, func(t *testing.T, e *env) {
		p := e.newPlayer(playerOpts{})
		q := e.newPlayer(playerOpts{})
		o := uverbs.DefaultConnectOptions()
		o.MTU = pathMTU
		err := p.qp.Connect(q.endpoint(), &o)
		require.Error(t, err, "a QP connected by hand to RTS")
		t.Logf("hand connect on iWARP: %v", err)
	})
}
