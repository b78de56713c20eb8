// Package udaddy is rdmacm-utils 44's udaddy on goverbs' pure-Go rdma_cm:
// UD QPs resolved through rdma_cm (SIDR), SEND_WITH_IMM from the client, and
// replies from the server through an address handle made from the first
// receive's GRH. Same options, output and exit status as the C tool.
package udaddy

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

const grhSize = uverbs.GRHSize // struct ibv_grh, in front of every UD receive

type node struct {
	id         *rdmacm.ID
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
	port         string
	setTOS       bool
	tos          uint8
	dst, src     string
	ps           rdmacm.PortSpace

	ch           *rdmacm.Channel
	nodes        []node
	byID         map[*rdmacm.ID]*node
	connIndex    int
	connectsLeft int
}

func (t *test) printf(format string, args ...any) { fmt.Fprintf(t.stdout, format, args...) }

func (t *test) perror(what string, err error) { cstd.Perror(t.stderr, what, err) }

func (t *test) usage() {
	t.printf("usage: %s\n", t.prog)
	for _, l := range []string{"[-s server_address]", "[-b bind_address]", "[-f address_format]",
		"    name, ip, ipv6, or gid", "[-P port_space]", "    udp or ipoib", "[-c connections]",
		"[-C message_count]", "[-S message_size]", "[-t type_of_service]"} {
		t.printf("\t%s\n", l)
	}
	t.printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", uint16(rdmacm.PortSpaceUDP),
		uint16(rdmacm.PortSpaceIPoIB))
}

// Main is udaddy's main; prog is argv[0] as the usage prints it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &test{stdout: stdout, stderr: stderr, prog: prog, connections: 1, messageSize: 100, messageCount: 10,
		port: "7174", ps: rdmacm.PortSpaceUDP}
	numeric := false
	p := getopt.New(prog, args, "s:b:c:C:S:t:p:P:f:", nil, stderr, false)
	for {
		o, ok := p.Next()
		if !ok {
			break
		}
		switch o.Val {
		case 's':
			t.dst = o.Arg
		case 'b':
			t.src = o.Arg
		case 'c':
			t.connections = int(cstd.Atoi(o.Arg))
		case 'C':
			t.messageCount = int(cstd.Atoi(o.Arg))
		case 'S':
			t.messageSize = int(cstd.Atoi(o.Arg))
		case 't':
			v, _, _ := cstd.Strtoul(o.Arg, 0)
			t.setTOS, t.tos = true, uint8(v)
		case 'p':
			v, _, _ := cstd.Strtol(o.Arg, 0)
			t.ps = rdmacm.PortSpace(v)
		case 'f':
			a := strings.ToLower(o.Arg)
			switch {
			case strings.HasPrefix(a, "ip"):
				numeric = true
			case strings.HasPrefix(a, "gid"):
				fmt.Fprintf(stderr, "%s: AF_IB (-f gid) addresses are not supported by goverbs\n", prog)
				return 1
			case !strings.HasPrefix(a, "name"):
				fmt.Fprintf(stderr, "Warning: unknown address format\n")
			}
		case 'P':
			a := strings.ToLower(o.Arg)
			if strings.HasPrefix(a, "ipoib") {
				t.ps = rdmacm.PortSpaceIPoIB
			} else if !strings.HasPrefix(a, "udp") {
				fmt.Fprintf(stderr, "Warning: unknown port space format\n")
			}
		default:
			t.usage()
			return 1
		}
	}
	if t.messageSize == 0 {
		t.messageCount = 0
	}
	t.connectsLeft = t.connections
	ch, err := cmcommon.CreateFirstEventChannel(stderr)
	if err != nil {
		return 1
	}
	t.ch = ch
	t.byID = map[*rdmacm.ID]*node{}
	t.nodes = make([]node, max(t.connections, 0))
	if t.dst != "" {
		for i := range t.nodes {
			id, err := ch.CreateID(t.ps, uverbs.QPTypeUD)
			if err != nil {
				ch.Close()
				return 1
			}
			t.nodes[i].id = id
			t.byID[id] = &t.nodes[i]
		}
	}
	var ret int
	if t.dst != "" {
		ret = t.runClient(numeric)
	} else {
		ret = t.runServer(numeric)
	}
	t.printf("test complete\n")
	for i := range t.nodes {
		t.destroyNode(&t.nodes[i])
	}
	t.ch.Close()
	t.printf("return status %d\n", ret)
	return ret & 0xff
}

func (t *test) getAddr(host string, numeric, passive bool) (netip.AddrPort, string) {
	return cmcommon.GetAddr("udp", t.port, host, numeric, passive)
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
		t.printf("udaddy: message_size %d is larger than active mtu %d\n", t.messageSize, mtu)
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
		t.printf("udaddy: unable to allocate PD\n")
		return -int(unix.ENOMEM)
	}
	cqe, wrs := 2, 1
	if t.messageCount > 0 {
		cqe, wrs = t.messageCount*2, t.messageCount
	}
	if n.cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: cqe}); err != nil {
		t.printf("udaddy: unable to create CQ\n")
		return -int(unix.ENOMEM)
	}
	_, err = n.id.CreateQP(rdmacm.QPInitAttr{PD: n.pd, SendCQ: n.cq, RecvCQ: n.cq,
		Cap: uverbs.QPCap{MaxSendWR: uint32(wrs), MaxRecvWR: uint32(wrs), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.perror("udaddy: unable to create QP", err)
		return -1
	}
	if t.messageCount > 0 {
		if n.mem, err = uverbs.AllocBuffer(t.messageSize + grhSize); err != nil {
			t.printf("failed message allocation\n")
			t.printf("udaddy: failed to create messages: %d\n", -1)
			return -1
		}
		if n.mr, err = n.pd.RegMR(n.mem.Bytes(), uverbs.AccessLocalWrite); err != nil {
			t.printf("failed to reg MR\n")
			t.printf("udaddy: failed to create messages: %d\n", -1)
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

func (t *test) postSends(n *node, flags uverbs.SendFlags) int {
	if !n.connected || t.messageCount == 0 {
		return 0
	}
	wr := []uverbs.SendWR{{Opcode: uverbs.WRSendWithImm, Flags: flags, Imm: n.id.QP().QPN(),
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

func (t *test) handler(ev *rdmacm.Event) int {
	n := t.byID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		if t.setTOS {
			if err := n.id.SetTOS(t.tos); err != nil {
				t.perror("udaddy: set TOS option failed", err)
			}
		}
		if err := n.id.ResolveRoute(2000 * time.Millisecond); err != nil {
			t.perror("udaddy: resolve route failed", err)
			t.connectsLeft--
			return -1
		}
	case rdmacm.EventRouteResolved:
		ret := t.verifyParams(n)
		if ret == 0 {
			ret = t.initNode(n)
		}
		if ret == 0 {
			ret = t.postRecvs(n)
		}
		if ret == 0 {
			if err := n.id.Connect(&rdmacm.ConnParam{}); err != nil {
				t.perror("udaddy: failure connecting", err)
				ret = -1
			}
		}
		if ret != 0 {
			t.connectsLeft--
		}
		return ret
	case rdmacm.EventConnectRequest:
		return t.connectHandler(ev.ID)
	case rdmacm.EventEstablished:
		n.remoteQPN, n.remoteQKey = ev.UD.QPNum, ev.UD.QKey
		ah, err := n.pd.CreateAH(ev.UD.AHAttr)
		if err != nil {
			t.printf("udaddy: failure creating address handle\n")
			t.connectsLeft--
			return -1
		}
		n.ah = ah
		n.connected = true
		t.connectsLeft--
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError, rdmacm.EventUnreachable,
		rdmacm.EventRejected:
		t.printf("udaddy: event: %s, error: %d\n", ev.Type, ev.Status)
		t.connectsLeft--
		return int(ev.Status)
	}
	return 0
}

func (t *test) connectHandler(id *rdmacm.ID) int {
	ret := -int(unix.ENOMEM)
	if t.connIndex < t.connections {
		n := &t.nodes[t.connIndex]
		t.connIndex++
		n.id = id
		t.byID[id] = n
		ret = t.verifyParams(n)
		if ret == 0 {
			ret = t.initNode(n)
		}
		if ret == 0 {
			ret = t.postRecvs(n)
		}
		if ret == 0 {
			if err := id.Accept(&rdmacm.ConnParam{}); err != nil {
				t.perror("udaddy: failure accepting", err)
				ret = -1
			}
		}
		if ret == 0 {
			n.connected = true
			t.connectsLeft--
			return 0
		}
		t.destroyNode(n)
		t.connectsLeft--
	}
	t.printf("udaddy: failing connection request\n")
	id.Reject(nil)
	return ret
}

func (t *test) connectEvents() int {
	ret := 0
	for t.connectsLeft > 0 && ret == 0 {
		ev, err := t.ch.GetEvent(context.Background())
		if err != nil {
			return int(cstd.ErrnoOf(err, unix.EIO))
		}
		ret = t.handler(ev)
	}
	return ret
}

// replyAH is ibv_create_ah_from_wc: the reply goes to the sender of the receive in n.mem.
func (t *test) replyAH(n *node, wc *uverbs.WC) error {
	ctx, _, err := n.id.Device()
	if err != nil {
		return err
	}
	attr, err := ctx.AHAttrFromWC(n.id.PortNum(), wc, n.mem.Bytes()[:grhSize])
	if err != nil {
		return err
	}
	ah, err := n.pd.CreateAH(attr)
	if err != nil {
		return err
	}
	n.ah = ah
	n.remoteQPN = wc.Imm
	qa, err := n.id.QP().Query(uverbs.QPAttrQKey)
	if err != nil {
		return err
	}
	n.remoteQKey = qa.QKey
	return nil
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
				t.printf("udaddy: failed polling CQ: %d\n", -1)
				return -1
			}
			if got > 0 && n.ah == nil {
				if err := t.replyAH(n, &wc[0]); err != nil {
					t.printf("udaddy: failed to create reply AH\n")
					return -1
				}
			}
			done += got
		}
	}
	return 0
}

func (t *test) runServer(numeric bool) int {
	t.printf("udaddy: starting server\n")
	listen, err := t.ch.CreateID(t.ps, uverbs.QPTypeUD)
	if err != nil {
		t.perror("udaddy: listen request failed", err)
		return -1
	}
	defer listen.Close()
	src, gai := t.getAddr(t.src, numeric, true)
	if gai != "" {
		t.printf("udaddy: getrdmaaddr error: %s\n", gai)
		return -2
	}
	if err := listen.Bind(src); err != nil {
		t.perror("udaddy: bind address failed", err)
		return -1
	}
	if err := listen.Listen(0); err != nil {
		t.perror("udaddy: failure trying to listen", err)
		return -1
	}
	t.connectEvents()
	if t.messageCount == 0 {
		return 0
	}
	t.printf("receiving data transfers\n")
	if ret := t.pollCQs(); ret != 0 {
		return ret
	}
	t.printf("sending replies\n")
	for i := range t.nodes {
		if ret := t.postSends(&t.nodes[i], uverbs.SendSignaled); ret != 0 {
			return ret
		}
	}
	if ret := t.pollCQs(); ret != 0 {
		return ret
	}
	t.printf("data transfers complete\n")
	return 0
}

func (t *test) runClient(numeric bool) int {
	t.printf("udaddy: starting client\n")
	dst, gai := t.getAddr(t.dst, numeric, false)
	var src netip.AddrPort
	if gai == "" && t.src != "" {
		src, gai = t.getAddr(t.src, numeric, false)
		src = netip.AddrPortFrom(src.Addr(), 0)
	}
	if gai != "" {
		t.printf("udaddy: getaddrinfo error: %s\n", gai)
		return -2
	}
	t.printf("udaddy: connecting\n")
	for i := range t.nodes {
		if err := t.nodes[i].id.ResolveAddr(src, dst, 2000*time.Millisecond); err != nil {
			t.perror("udaddy: failure getting addr", err)
			t.connectsLeft--
			return -1
		}
	}
	if ret := t.connectEvents(); ret != 0 {
		return ret
	}
	if t.messageCount > 0 {
		t.printf("initiating data transfers\n")
		for i := range t.nodes {
			if ret := t.postSends(&t.nodes[i], 0); ret != 0 {
				return ret
			}
		}
		t.printf("receiving data transfers\n")
		if ret := t.pollCQs(); ret != 0 {
			return ret
		}
		t.printf("data transfers complete\n")
	}
	return 0
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
