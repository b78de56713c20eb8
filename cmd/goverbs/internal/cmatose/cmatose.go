// Package cmatose is rdmacm-utils 44's ucmatose (examples/cmatose.c) on
// goverbs' pure-Go rdma_cm: RC connections set up with rdma_cm, SENDs from
// the server then replies from the client, and a disconnect. Same options,
// output and exit status as the C tool, so the two pair in either role.
package cmatose

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

type node struct {
	id        *rdmacm.ID
	connected bool
	pd        *uverbs.PD
	cq        [2]*uverbs.CQ // send, recv
	mr        *uverbs.MR
	mem       *uverbs.Buffer
}

const (
	sendCQ = 0
	recvCQ = 1
)

type test struct {
	stdout, stderr io.Writer
	prog           string

	connections  int
	messageSize  int
	messageCount int
	port         string
	setTOS       bool
	tos          uint8
	migrate      bool
	dst, src     string
	ps           rdmacm.PortSpace
	setTimeout   bool
	timeout      uint8

	ch              *rdmacm.Channel
	nodes           []node
	byID            map[*rdmacm.ID]*node
	connIndex       int
	connectsLeft    int
	disconnectsLeft int
	srcAP, dstAP    netip.AddrPort
}

func (t *test) printf(format string, args ...any) { fmt.Fprintf(t.stdout, format, args...) }

func (t *test) perror(what string, err error) { cstd.Perror(t.stderr, what, err) }

func (t *test) usage() {
	t.printf("usage: %s\n", t.prog)
	for _, l := range []string{"[-s server_address]", "[-b bind_address]", "[-f address_format]",
		"    name, ip, ipv6, or gid", "[-P port_space]", "    tcp or ib", "[-c connections]",
		"[-C message_count]", "[-S message_size]", "[-t type_of_service]", "[-p port_number]",
		"[-m(igrate)]", "[-a ack_timeout]"} {
		t.printf("\t%s\n", l)
	}
}

// Main is ucmatose's main; prog is argv[0] as the usage prints it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &test{stdout: stdout, stderr: stderr, prog: prog, connections: 1, messageSize: 100, messageCount: 10,
		port: "7471", ps: rdmacm.PortSpaceTCP}
	numeric := false
	p := getopt.New(prog, args, "s:b:f:P:c:C:S:t:p:a:m", nil, stderr, false)
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
			if strings.HasPrefix(a, "ib") {
				t.ps = rdmacm.PortSpaceIB
			} else if !strings.HasPrefix(a, "tcp") {
				fmt.Fprintf(stderr, "Warning: unknown port space format\n")
			}
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
			t.port = o.Arg
		case 'm':
			t.migrate = true
		case 'a':
			v, _, _ := cstd.Strtoul(o.Arg, 0)
			t.setTimeout, t.timeout = true, uint8(v)
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
			id, err := ch.CreateID(t.ps, uverbs.QPTypeRC)
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

// getAddr is get_rdma_addr: the host (or the wildcard for a passive
// lookup without one) and the port.
func (t *test) getAddr(host string, numeric, passive bool) (netip.AddrPort, string) {
	return cmcommon.GetAddr("tcp", t.port, host, numeric, passive)
}

func (t *test) createMessage(n *node) int {
	if t.messageCount == 0 {
		return 0
	}
	var err error
	if n.mem, err = uverbs.AllocBuffer(t.messageSize); err != nil {
		t.printf("failed message allocation\n")
		return -1
	}
	if n.mr, err = n.pd.RegMR(n.mem.Bytes(), uverbs.AccessLocalWrite); err != nil {
		t.printf("failed to reg MR\n")
		n.mem.Close()
		n.mem = nil
		return -1
	}
	return 0
}

func (t *test) initNode(n *node) int {
	ctx, _, err := n.id.Device()
	if err == nil {
		n.pd, err = ctx.AllocPD()
	}
	if err != nil {
		t.printf("cmatose: unable to allocate PD\n")
		return -int(unix.ENOMEM)
	}
	cqe := t.messageCount
	if cqe == 0 {
		cqe = 1
	}
	for i := range n.cq {
		if n.cq[i], err = ctx.CreateCQ(uverbs.CQAttr{CQE: cqe}); err != nil {
			t.printf("cmatose: unable to create CQ\n")
			return -int(unix.ENOMEM)
		}
	}
	_, err = n.id.CreateQP(rdmacm.QPInitAttr{PD: n.pd, SendCQ: n.cq[sendCQ], RecvCQ: n.cq[recvCQ], SigAll: true,
		Cap: uverbs.QPCap{MaxSendWR: uint32(cqe), MaxRecvWR: uint32(cqe), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.perror("cmatose: unable to create QP", err)
		return -1
	}
	if ret := t.createMessage(n); ret != 0 {
		t.printf("cmatose: failed to create messages: %d\n", ret)
		return ret
	}
	return 0
}

func (t *test) postRecvs(n *node) int {
	if t.messageCount == 0 {
		return 0
	}
	wr := []uverbs.RecvWR{{SGL: []uverbs.SGE{n.mr.SGE(0, t.messageSize)}}}
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
	wr := []uverbs.SendWR{{Opcode: uverbs.WRSend, SGL: []uverbs.SGE{n.mr.SGE(0, t.messageSize)}}}
	for i := 0; i < t.messageCount; i++ {
		if _, err := n.id.QP().PostSend(wr); err != nil {
			t.printf("failed to post sends: %d\n", -1)
			return -1
		}
	}
	return 0
}

func (t *test) addrHandler(n *node) int {
	if t.setTOS {
		if err := n.id.SetTOS(t.tos); err != nil {
			t.perror("cmatose: set TOS option failed", err)
		}
	}
	if t.setTimeout {
		if err := n.id.SetAckTimeout(t.timeout); err != nil {
			t.perror("cmatose: set ack timeout option failed", err)
		}
	}
	if err := n.id.ResolveRoute(2000 * time.Millisecond); err != nil {
		t.perror("cmatose: resolve route failed", err)
		t.connectsLeft--
		return -1
	}
	return 0
}

func (t *test) routeHandler(n *node) int {
	ret := t.initNode(n)
	if ret == 0 {
		ret = t.postRecvs(n)
	}
	if ret == 0 {
		// rr 1, id 1, retry 5, RNR retry 0 (cmatose.c leaves it zero).
		if err := n.id.Connect(&rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 5}); err != nil {
			t.perror("cmatose: failure connecting", err)
			ret = -1
		}
	}
	if ret != 0 {
		t.connectsLeft--
	}
	return ret
}

func (t *test) connectHandler(id *rdmacm.ID) int {
	ret := 0
	if t.connIndex == t.connections {
		ret = -int(unix.ENOMEM)
	} else {
		n := &t.nodes[t.connIndex]
		t.connIndex++
		n.id = id
		t.byID[id] = n
		ret = t.initNode(n)
		if ret == 0 && t.setTimeout {
			if err := id.SetAckTimeout(t.timeout); err != nil {
				t.perror("cmatose: set ack timeout option failed", err)
			}
		}
		if ret == 0 {
			ret = t.postRecvs(n)
		}
		if ret == 0 {
			if err := id.Accept(nil); err != nil {
				t.perror("cmatose: failure accepting", err)
				ret = -1
			}
		}
		if ret == 0 {
			return 0
		}
		t.destroyNode(n)
		n.id = nil
		t.connectsLeft--
	}
	t.printf("cmatose: failing connection request\n")
	id.Reject(nil)
	return ret
}

func (t *test) handler(ev *rdmacm.Event) int {
	n := t.byID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		return t.addrHandler(n)
	case rdmacm.EventRouteResolved:
		return t.routeHandler(n)
	case rdmacm.EventConnectRequest:
		return t.connectHandler(ev.ID)
	case rdmacm.EventEstablished:
		if n != nil {
			n.connected = true
		}
		t.connectsLeft--
		t.disconnectsLeft++
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError, rdmacm.EventUnreachable,
		rdmacm.EventRejected:
		t.printf("cmatose: event: %s, error: %d\n", ev.Type, ev.Status)
		t.connectsLeft--
		return int(ev.Status)
	case rdmacm.EventDisconnected:
		ev.ID.Disconnect()
		t.disconnectsLeft--
	}
	return 0
}

func (t *test) events(left *int, what string) int {
	ret := 0
	for *left > 0 && ret == 0 {
		ev, err := t.ch.GetEvent(context.Background())
		if err != nil {
			t.perror("cmatose: failure in rdma_get_cm_event in "+what+" events", err)
			return int(cstd.ErrnoOf(err, unix.EIO))
		}
		ret = t.handler(ev)
	}
	return ret
}

// pollCQs waits for messageCount completions on each connected node's CQ.
func (t *test) pollCQs(index int) int {
	wc := make([]uverbs.WC, 8)
	for i := range t.nodes {
		n := &t.nodes[i]
		if !n.connected {
			continue
		}
		for done := 0; done < t.messageCount; {
			got, err := n.cq[index].Poll(wc)
			if err != nil {
				t.printf("cmatose: failed polling CQ: %d\n", -1)
				return -1
			}
			done += got
		}
	}
	return 0
}

func (t *test) migrateChannel(listen *rdmacm.ID) int {
	t.printf("migrating to new event channel\n")
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.perror("cmatose: failed to create event channel", err)
		return -1
	}
	if listen != nil {
		err = listen.Migrate(ch)
	}
	for i := 0; i < len(t.nodes) && err == nil; i++ {
		if t.nodes[i].id != nil {
			err = t.nodes[i].id.Migrate(ch)
		}
	}
	if err != nil {
		t.perror("cmatose: failure migrating to channel", err)
		ch.Close()
		return -1
	}
	t.ch.Close()
	t.ch = ch
	return 0
}

func (t *test) runServer(numeric bool) int {
	t.printf("cmatose: starting server\n")
	listen, err := t.ch.CreateID(t.ps, uverbs.QPTypeRC)
	if err != nil {
		t.perror("cmatose: listen request failed", err)
		return -1
	}
	defer listen.Close()
	src, gai := t.getAddr(t.src, numeric, true)
	if gai != "" {
		t.printf("cmatose: getrdmaaddr error: %s\n", gai)
		return -2
	}
	if err := listen.Bind(src); err != nil {
		t.perror("cmatose: bind address failed", err)
		return -1
	}
	if err := listen.Listen(0); err != nil {
		t.perror("cmatose: failure trying to listen", err)
		return -1
	}
	if ret := t.events(&t.connectsLeft, "connect"); ret != 0 {
		return ret
	}
	if t.messageCount > 0 {
		t.printf("initiating data transfers\n")
		for i := range t.nodes {
			if ret := t.postSends(&t.nodes[i]); ret != 0 {
				return ret
			}
		}
		t.printf("completing sends\n")
		if ret := t.pollCQs(sendCQ); ret != 0 {
			return ret
		}
		t.printf("receiving data transfers\n")
		if ret := t.pollCQs(recvCQ); ret != 0 {
			return ret
		}
		t.printf("data transfers complete\n")
	}
	if t.migrate {
		if ret := t.migrateChannel(listen); ret != 0 {
			return ret
		}
	}
	t.printf("cmatose: disconnecting\n")
	for i := range t.nodes {
		n := &t.nodes[i]
		if !n.connected {
			continue
		}
		n.connected = false
		n.id.Disconnect()
	}
	ret := t.events(&t.disconnectsLeft, "disconnect")
	t.printf("disconnected\n")
	return ret
}

func (t *test) runClient(numeric bool) int {
	t.printf("cmatose: starting client\n")
	dst, gai := t.getAddr(t.dst, numeric, false)
	var src netip.AddrPort
	if gai == "" && t.src != "" {
		src, gai = t.getAddr(t.src, numeric, false)
		src = netip.AddrPortFrom(src.Addr(), 0)
	}
	if gai != "" {
		t.printf("cmatose: getaddrinfo error: %s\n", gai)
		return -2
	}
	t.dstAP, t.srcAP = dst, src
	t.printf("cmatose: connecting\n")
	for i := range t.nodes {
		if err := t.nodes[i].id.ResolveAddr(src, dst, 2000*time.Millisecond); err != nil {
			t.perror("cmatose: failure getting addr", err)
			t.connectsLeft--
			return -1
		}
	}
	ret := t.events(&t.connectsLeft, "connect")
	if ret == 0 {
		if t.messageCount > 0 {
			t.printf("receiving data transfers\n")
			ret = t.pollCQs(recvCQ)
		}
		if ret == 0 && t.messageCount > 0 {
			t.printf("sending replies\n")
			for i := range t.nodes {
				if ret = t.postSends(&t.nodes[i]); ret != 0 {
					break
				}
			}
			if ret == 0 {
				t.printf("data transfers complete\n")
			}
		}
		if ret == 0 && t.migrate {
			if ret = t.migrateChannel(nil); ret != 0 {
				return ret
			}
		}
	}
	if ret2 := t.events(&t.disconnectsLeft, "disconnect"); ret2 != 0 {
		ret = ret2
	}
	return ret
}

func (t *test) destroyNode(n *node) {
	if n.id == nil {
		return
	}
	n.id.DestroyQP()
	for i, cq := range n.cq {
		if cq != nil {
			cq.Close()
			n.cq[i] = nil
		}
	}
	if n.mr != nil {
		n.mr.Close()
		n.mem.Close()
		n.mr, n.mem = nil, nil
	}
	if n.pd != nil {
		n.pd.Close()
		n.pd = nil
	}
	n.id.Close()
	delete(t.byID, n.id)
	n.id = nil
}
