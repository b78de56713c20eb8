// Package mckey is rdmacm-utils 44's mckey on goverbs' pure-Go rdma_cm:
// UD QPs that join a multicast group through rdma_cm (JOIN_MCAST); the
// sender (-s) posts SEND_WITH_IMM to the group, receivers count the
// completions. Same options, output and exit status as the C tool.
//
// Differences, each a typed message instead of a silent change:
//   - -M (an AF_IB multicast GID) is refused: goverbs' rdma_cm has no AF_IB
//     addresses.
//   - -l (no multicast loopback) needs a QP created with
//     IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, which package uverbs cannot ask for;
//     the QP creation fails with EOPNOTSUPP, which is what rxe (the only
//     device this was compared on) answers the C tool too.
package mckey

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

const grhSize = 40 // struct ibv_grh, in front of every UD receive

// settle is the C tool's pause after the joins ("to give the SM a chance
// to configure switches"): nothing to wait on from user space, so it is
// kept as the tool's behaviour.
var settle = 3 * time.Second

type node struct {
	id         *rdmacm.ID
	mc         *rdmacm.Multicast
	connected  bool
	pd         *uverbs.PD
	cq         *uverbs.CQ
	mr         *uverbs.MR
	mem        *uverbs.Buffer
	ah         *uverbs.AH
	remoteQPN  uint32
	remoteQKey uint32
}

type test struct {
	stdout, stderr io.Writer
	prog           string

	connections  int
	messageSize  int
	messageCount int
	isSender     bool
	sendOnly     bool
	loopback     bool
	dstArg       string
	srcArg       string
	ps           rdmacm.PortSpace

	dst, src     netip.AddrPort
	haveSrc      bool
	ch           *rdmacm.Channel
	nodes        []node
	byID         map[*rdmacm.ID]*node
	connectsLeft int
	outMu        sync.Mutex
}

func (t *test) printf(format string, args ...any) {
	t.outMu.Lock()
	fmt.Fprintf(t.stdout, format, args...)
	t.outMu.Unlock()
}

func (t *test) perror(what string, err error) { cstd.Perror(t.stderr, what, err) }

func (t *test) usage() {
	t.printf("usage: %s\n", t.prog)
	t.printf("\t-m multicast_address\n")
	t.printf("\t[-M unmapped_multicast_address]\n\t replaces -m and requires -b\n")
	for _, l := range []string{"[-s(ender)]", "[-b bind_address]", "[-c connections]", "[-C message_count]",
		"[-S message_size]"} {
		t.printf("\t%s\n", l)
	}
	t.printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", uint16(rdmacm.PortSpaceUDP),
		uint16(rdmacm.PortSpaceIPoIB))
	t.printf("\t[-o join as a send-only full-member]\n")
	t.printf("\t[-l join without multicast loopback]\n")
}

// Main is mckey's main; prog is argv[0] as the usage prints it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &test{stdout: stdout, stderr: stderr, prog: prog, connections: 1, messageSize: 100, messageCount: 10,
		loopback: true, ps: rdmacm.PortSpaceUDP}
	unmapped := false
	p := getopt.New(prog, args, "m:M:sb:c:C:S:p:ol", nil, stderr, false)
	for {
		o, ok := p.Next()
		if !ok {
			break
		}
		switch o.Val {
		case 'm':
			t.dstArg = o.Arg
		case 'M':
			unmapped = true
			t.dstArg = o.Arg
		case 's':
			t.isSender = true
		case 'b':
			t.srcArg = o.Arg
			t.haveSrc = true
		case 'c':
			t.connections = int(cstd.Atoi(o.Arg))
		case 'C':
			t.messageCount = int(cstd.Atoi(o.Arg))
		case 'S':
			t.messageSize = int(cstd.Atoi(o.Arg))
		case 'p':
			v, _, _ := cstd.Strtol(o.Arg, 0)
			t.ps = rdmacm.PortSpace(v)
		case 'o':
			t.sendOnly = true
		case 'l':
			t.loopback = false
		default:
			t.usage()
			return 1
		}
	}
	if unmapped && !t.haveSrc {
		t.printf("unmapped multicast address requires binding to source address\n")
		return 1
	}
	if unmapped {
		fmt.Fprintf(stderr, "%s: AF_IB (-M) multicast addresses are not supported by goverbs\n", prog)
		return 1
	}
	t.connectsLeft = t.connections
	ch, err := cmcommon.CreateFirstEventChannel(stderr)
	if err != nil {
		return 1
	}
	t.ch = ch
	t.byID = map[*rdmacm.ID]*node{}
	t.nodes = make([]node, max(t.connections, 0))
	for i := range t.nodes {
		id, err := ch.CreateID(t.ps, uverbs.QPTypeUD)
		if err != nil {
			for j := 0; j < i; j++ {
				t.nodes[j].id.Close()
			}
			ch.Close()
			return 1
		}
		t.nodes[i].id = id
		t.byID[id] = &t.nodes[i]
	}
	ret := t.run()
	t.printf("test complete\n")
	for i := range t.nodes {
		t.destroyNode(&t.nodes[i])
	}
	t.ch.Close()
	t.printf("return status %d\n", ret)
	return ret & 0xff
}

// getAddr is getaddrinfo(host, NULL, NULL) keeping the first answer; the
// error is gai_strerror's text and getaddrinfo's (negative) code.
func getAddr(host string) (netip.AddrPort, string, int) {
	if host == "" {
		return netip.AddrPort{}, "Name or service not known", -2
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, 0), "", 0
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, "Name or service not known", -2
	}
	a, _ := netip.AddrFromSlice(ips[0])
	return netip.AddrPortFrom(a.Unmap(), 0), "", 0
}

func (t *test) verifyParams(n *node) int {
	ctx, _, err := n.id.Device()
	if err != nil {
		return -1
	}
	pa, err := ctx.QueryPort(int(n.id.PortNum()))
	if err != nil {
		return -1
	}
	mtu := pa.ActiveMTU.Bytes()
	if t.messageCount > 0 && t.messageSize > mtu {
		t.printf("mckey: message_size %d is larger than active mtu %d\n", t.messageSize, mtu)
		return -int(unix.EINVAL)
	}
	return 0
}

func (t *test) initNode(n *node) int {
	ctx, _, err := n.id.Device()
	if err == nil {
		n.pd, err = ctx.AllocPD()
	}
	if err != nil {
		t.printf("mckey: unable to allocate PD\n")
		return -int(unix.ENOMEM)
	}
	cqe, wrs := 2, 1
	if t.messageCount > 0 {
		cqe, wrs = t.messageCount*2, t.messageCount
	}
	if n.cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: cqe}); err != nil {
		t.printf("mckey: unable to create CQ\n")
		return -int(unix.ENOMEM)
	}
	if !t.loopback {
		// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: not expressible with package uverbs (see the package doc).
		t.perror("mckey: unable to create QP", unix.EOPNOTSUPP)
		return -1
	}
	_, err = n.id.CreateQP(rdmacm.QPInitAttr{PD: n.pd, SendCQ: n.cq, RecvCQ: n.cq,
		Cap: uverbs.QPCap{MaxSendWR: uint32(wrs), MaxRecvWR: uint32(wrs), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.perror("mckey: unable to create QP", err)
		return -1
	}
	if t.messageSize == 0 {
		t.messageCount = 0
	}
	if t.messageCount > 0 {
		if n.mem, err = uverbs.AllocBuffer(t.messageSize + grhSize); err != nil {
			t.printf("failed message allocation\n")
			t.printf("mckey: failed to create messages: %d\n", -1)
			return -1
		}
		if n.mr, err = n.pd.RegMR(n.mem.Bytes(), uverbs.AccessLocalWrite); err != nil {
			t.printf("failed to reg MR\n")
			t.printf("mckey: failed to create messages: %d\n", -1)
			return -1
		}
	}
	return 0
}

func (t *test) postRecvs(n *node) int {
	if t.messageCount == 0 {
		return 0
	}
	wr := []uverbs.RecvWR{{SGL: []uverbs.SGE{n.mr.SGE(0, t.messageSize+grhSize)}}}
	for i := 0; i < t.messageCount; i++ {
		if _, err := n.id.QP().PostRecv(wr); err != nil {
			t.printf("failed to post receives: %d\n", -1)
			return -1
		}
	}
	return 0
}

func (t *test) postSends(n *node) int {
	if !n.connected || t.messageCount == 0 {
		return 0
	}
	wr := []uverbs.SendWR{{Opcode: uverbs.WRSendWithImm, Imm: n.id.QP().QPN(),
		AH: n.ah.Data(), RemoteQPN: n.remoteQPN, RemoteQKey: n.remoteQKey,
		SGL: []uverbs.SGE{n.mr.SGE(0, t.messageSize)}}}
	for i := 0; i < t.messageCount; i++ {
		if _, err := n.id.QP().PostSend(wr); err != nil {
			t.printf("failed to post sends: %d\n", -1)
			return -1
		}
	}
	return 0
}

func (t *test) addrHandler(n *node) int {
	ret := t.verifyParams(n)
	if ret == 0 {
		ret = t.initNode(n)
	}
	if ret == 0 && !t.isSender {
		ret = t.postRecvs(n)
	}
	if ret == 0 {
		mc, err := n.id.JoinMulticast(t.dst, t.sendOnly)
		if err != nil {
			t.perror("mckey: failure joining", err)
			ret = -1
		} else {
			n.mc = mc
		}
	}
	if ret != 0 {
		t.connectsLeft--
	}
	return ret
}

func (t *test) joinHandler(n *node, ud *rdmacm.UDParam) int {
	t.printf("mckey: joined dgid: %s mlid 0x%x sl %d\n", cstd.InetNtop6(ud.AHAttr.GRH.DGID), ud.AHAttr.DLID,
		ud.AHAttr.SL)
	n.remoteQPN, n.remoteQKey = ud.QPNum, ud.QKey
	ah, err := n.pd.CreateAH(ud.AHAttr)
	if err != nil {
		t.printf("mckey: failure creating address handle\n")
		t.connectsLeft--
		return -1
	}
	n.ah = ah
	n.connected = true
	t.connectsLeft--
	return 0
}

func (t *test) handler(ev *rdmacm.Event) int {
	n := t.byID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		return t.addrHandler(n)
	case rdmacm.EventMulticastJoin:
		return t.joinHandler(n, &ev.UD)
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventMulticastError:
		t.printf("mckey: event: %s, error: %d\n", ev.Type, ev.Status)
		t.connectsLeft--
		return int(ev.Status)
	}
	return 0
}

func (t *test) connectEvents() int {
	ret := 0
	for t.connectsLeft > 0 && ret == 0 {
		ev, err := t.ch.GetEvent(context.Background())
		if err != nil {
			return -1
		}
		ret = t.handler(ev)
	}
	return ret
}

// watchEvents is the C tool's cma thread: after the joins it reports
// MULTICAST_ERROR and ADDR_CHANGE events until the test ends.
func (t *test) watchEvents(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		ev, err := t.ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.perror("rdma_get_cm_event", err)
			}
			return
		}
		switch ev.Type {
		case rdmacm.EventMulticastError, rdmacm.EventAddrChange:
			t.printf("mckey: event: %s, status: %d\n", ev.Type, ev.Status)
		}
	}
}

func (t *test) pollCQs() int {
	wc := make([]uverbs.WC, 8)
	for i := range t.nodes {
		n := &t.nodes[i]
		if !n.connected {
			continue
		}
		for done := 0; done < t.messageCount; {
			got, err := n.cq.Poll(wc)
			if err != nil {
				t.printf("mckey: failed polling CQ: %d\n", -1)
				return -1
			}
			done += got
		}
	}
	return 0
}

func (t *test) run() int {
	who := "server"
	if t.isSender {
		who = "client"
	}
	t.printf("mckey: starting %s\n", who)
	if t.haveSrc {
		a, msg, code := getAddr(t.srcArg)
		if msg != "" {
			t.printf("getaddrinfo failed (%s) - invalid hostname or IP address\n", msg)
			return code
		}
		t.src = a
	}
	a, msg, code := getAddr(t.dstArg)
	if msg != "" {
		t.printf("getaddrinfo failed (%s) - invalid hostname or IP address\n", msg)
		return code
	}
	t.dst = a
	t.printf("mckey: joining\n")
	for i := range t.nodes {
		if t.haveSrc {
			if err := t.nodes[i].id.Bind(t.src); err != nil {
				t.perror("mckey: addr bind failure", err)
				t.connectsLeft--
				return -1
			}
		}
		var src netip.AddrPort
		if t.haveSrc {
			src = t.src
		}
		if err := t.nodes[i].id.ResolveAddr(src, t.dst, 2000*time.Millisecond); err != nil {
			t.perror("mckey: resolve addr failure", err)
			t.connectsLeft--
			return -1
		}
	}
	ret := t.connectEvents()
	if ret == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go t.watchEvents(ctx, done)
		defer func() { cancel(); <-done }()
		time.Sleep(settle)
		if t.messageCount > 0 {
			if t.isSender {
				t.printf("initiating data transfers\n")
				for i := range t.nodes {
					if ret = t.postSends(&t.nodes[i]); ret != 0 {
						break
					}
				}
			} else {
				t.printf("receiving data transfers\n")
				ret = t.pollCQs()
			}
			if ret == 0 {
				t.printf("data transfers complete\n")
			}
		}
	}
	// As in C, the status is the last leave's.
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.mc == nil {
			ret = -1
			t.perror("mckey: failure leaving", unix.EADDRNOTAVAIL)
			continue
		}
		ret = 0
		if err := n.mc.Leave(); err != nil {
			ret = -1
			t.perror("mckey: failure leaving", err)
		}
		n.mc = nil
	}
	return ret
}

func (t *test) destroyNode(n *node) {
	if n.id == nil {
		return
	}
	if n.ah != nil {
		n.ah.Close()
		n.ah = nil
	}
	n.id.DestroyQP()
	if n.cq != nil {
		n.cq.Close()
		n.cq = nil
	}
	if n.mr != nil {
		n.mr.Close()
		n.mr = nil
	}
	if n.mem != nil {
		n.mem.Close()
		n.mem = nil
	}
	if n.pd != nil {
		n.pd.Close()
		n.pd = nil
	}
	n.id.Close()
	delete(t.byID, n.id)
	n.id = nil
}
