package cmcommon

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// GRHSize is struct ibv_grh, in front of every UD receive.
const GRHSize = uverbs.GRHSize

// resolveTimeout is the 2000 ms the example programs give rdma_resolve_addr and rdma_resolve_route.
const resolveTimeout = 2000 * time.Millisecond

// Node is the examples' struct cmatest_node: one rdma_cm id with its PD, CQs, message buffer and, for the UD
// tools, the address handle and remote QP of its peer. cmatose uses both CQs (send, recv); udaddy and mckey one
// CQ, CQ[0], for both.
type Node struct {
	ID         *rdmacm.ID
	Connected  bool
	PD         *uverbs.PD
	CQ         [2]*uverbs.CQ
	MR         *uverbs.MR
	Mem        *uverbs.Buffer
	AH         *uverbs.AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// Test is the examples' struct cmatest: the options cmatose, udaddy and mckey share, the event channel and the
// nodes, and the steps the three programs take alike. Name is the program's name in its messages ("cmatose").
type Test struct {
	Stdout, Stderr io.Writer
	Prog, Name     string

	Connections  int
	MessageSize  int
	MessageCount int
	Port         string
	SetTOS       bool
	TOS          uint8
	SetTimeout   bool
	Timeout      uint8
	Dst, Src     string
	Numeric      bool // -f ip: the -s and -b hosts are numeric addresses
	PS           rdmacm.PortSpace

	Ch           *rdmacm.Channel
	Nodes        []Node
	ByID         map[*rdmacm.ID]*Node
	ConnIndex    int
	ConnectsLeft int

	outMu sync.Mutex
}

// Printf prints on stdout (one line at a time: mckey's event thread prints too).
func (t *Test) Printf(format string, args ...any) {
	t.outMu.Lock()
	fmt.Fprintf(t.Stdout, format, args...)
	t.outMu.Unlock()
}

// Perror is perror(3) on stderr.
func (t *Test) Perror(what string, err error) { cstd.Perror(t.Stderr, what, err) }

// Usage prints "usage: PROG" and each line after a tab.
func (t *Test) Usage(lines ...string) {
	t.Printf("usage: %s\n", t.Prog)
	for _, l := range lines {
		t.Printf("\t%s\n", l)
	}
}

// addrFormat is the -f option of cmatose and udaddy: "ip..." asks for numeric hosts, "gid..." (AF_IB) is refused
// with a message and false, anything but "name..." draws a warning.
func (t *Test) addrFormat(arg string) bool {
	a := strings.ToLower(arg)
	switch {
	case strings.HasPrefix(a, "ip"):
		t.Numeric = true
	case strings.HasPrefix(a, "gid"):
		fmt.Fprintf(t.Stderr, "%s: AF_IB (-f gid) addresses are not supported by goverbs\n", t.Prog)
		return false
	case !strings.HasPrefix(a, "name"):
		fmt.Fprintf(t.Stderr, "Warning: unknown address format\n")
	}
	return true
}

// Opt applies one of the options cmatose and udaddy share: -s, -b, -f, -c, -C, -S and -t (mckey takes its -c,
// -C and -S from here too). known is false for any other option; ok is false when the option ends the run with
// status 1 (-f gid).
func (t *Test) Opt(o getopt.Option) (known, ok bool) {
	switch o.Val {
	case 's':
		t.Dst = o.Arg
	case 'b':
		t.Src = o.Arg
	case 'f':
		return true, t.addrFormat(o.Arg)
	case 'c':
		t.Connections = int(cstd.Atoi(o.Arg))
	case 'C':
		t.MessageCount = int(cstd.Atoi(o.Arg))
	case 'S':
		t.MessageSize = int(cstd.Atoi(o.Arg))
	case 't':
		v, _, _ := cstd.Strtoul(o.Arg, 0)
		t.SetTOS, t.TOS = true, uint8(v)
	default:
		return false, true
	}
	return true, true
}

// options reads args with getopt's optstring: each option Opt knows, and every other one handed to other,
// which prints the usage and returns false for one the tool does not know either. false ends the run with
// status 1.
func (t *Test) options(args []string, optstring string, other func(getopt.Option) bool) bool {
	p := getopt.New(t.Prog, args, optstring, nil, t.Stderr, false)
	for o := range p.All() {
		if known, ok := t.Opt(o); !ok {
			return false
		} else if !known && !other(o) {
			return false
		}
	}
	return true
}

// PortSpaceOpt is the -P option of cmatose and udaddy: a name starting with alt selects altPS, one starting with
// def (the default port space's name) keeps the default, anything else draws a warning.
func (t *Test) PortSpaceOpt(arg, alt string, altPS rdmacm.PortSpace, def string) {
	a := strings.ToLower(arg)
	if strings.HasPrefix(a, alt) {
		t.PS = altPS
	} else if !strings.HasPrefix(a, def) {
		fmt.Fprintf(t.Stderr, "Warning: unknown port space format\n")
	}
}

// Main is main of cmatose and udaddy: the options (those Opt knows, then other for the tool's own; getopt's
// optstring), -S 0 sending no messages, Open (with an id of type qpt per connection on the client), runClient
// with -s or else runServer, and Finish. It returns the exit status.
func (t *Test) Main(args []string, optstring string, other func(getopt.Option) bool, qpt uverbs.QPType,
	runClient, runServer func() int) int {
	if !t.options(args, optstring, other) {
		return 1
	}
	if t.MessageSize == 0 {
		t.MessageCount = 0
	}
	if !t.Open(qpt, t.Dst != "") {
		return 1
	}
	var ret int
	if t.Dst != "" {
		ret = runClient()
	} else {
		ret = runServer()
	}
	return t.Finish(ret)
}

// Open is the start of main after the options: connects_left, the first event channel, the nodes and, with
// ids, an rdma_cm id of type qpt for each. It reports failure with false (the exit status is then 1).
func (t *Test) Open(qpt uverbs.QPType, ids bool) bool {
	t.ConnectsLeft = t.Connections
	ch, err := CreateFirstEventChannel(t.Stderr)
	if err != nil {
		return false
	}
	t.Ch = ch
	t.ByID = map[*rdmacm.ID]*Node{}
	t.Nodes = make([]Node, max(t.Connections, 0))
	if !ids {
		return true
	}
	for i := range t.Nodes {
		id, err := ch.CreateID(t.PS, qpt)
		if err != nil {
			for j := 0; j < i; j++ {
				t.Nodes[j].ID.Close()
			}
			ch.Close()
			return false
		}
		t.Nodes[i].ID = id
		t.ByID[id] = &t.Nodes[i]
	}
	return true
}

// Finish is the end of main: "test complete", the nodes and the channel destroyed, "return status", and the
// exit status (ret as the C int's low byte).
func (t *Test) Finish(ret int) int {
	t.Printf("test complete\n")
	for i := range t.Nodes {
		t.DestroyNode(&t.Nodes[i])
	}
	t.Ch.Close()
	t.Printf("return status %d\n", ret)
	return ret & 0xff
}

// DestroyNode is destroy_node: AH, QP, CQs, MR, buffer, PD, then the id.
func (t *Test) DestroyNode(n *Node) {
	if n.ID == nil {
		return
	}
	if n.AH != nil {
		n.AH.Close()
		n.AH = nil
	}
	n.ID.DestroyQP()
	for i, cq := range n.CQ {
		if cq != nil {
			cq.Close()
			n.CQ[i] = nil
		}
	}
	if n.MR != nil {
		n.MR.Close()
		n.MR = nil
	}
	if n.Mem != nil {
		n.Mem.Close()
		n.Mem = nil
	}
	if n.PD != nil {
		n.PD.Close()
		n.PD = nil
	}
	n.ID.Close()
	delete(t.ByID, n.ID)
	n.ID = nil
}

// EachNode runs f on every node until one fails and returns that status, 0 when none does.
func (t *Test) EachNode(f func(*Node) int) int {
	for i := range t.Nodes {
		if ret := f(&t.Nodes[i]); ret != 0 {
			return ret
		}
	}
	return 0
}

// Events is the event loop: it hands each event to handle while *left > 0 and handle returned 0. A failed
// rdma_get_cm_event ends it with the error, for the tool to report as it does.
func (t *Test) Events(left *int, handle func(*rdmacm.Event) int) (int, error) {
	ret := 0
	for *left > 0 && ret == 0 {
		ev, err := t.Ch.GetEvent(context.Background())
		if err != nil {
			return 0, err
		}
		ret = handle(ev)
	}
	return ret, nil
}

// Listen is the start of run_server in cmatose and udaddy: "starting server", the listening id of type qpt
// bound to the -b address (looked up for network) and listening. On failure it returns the status run_server
// returns.
func (t *Test) Listen(network string, qpt uverbs.QPType) (*rdmacm.ID, int) {
	t.Printf("%s: starting server\n", t.Name)
	listen, err := t.Ch.CreateID(t.PS, qpt)
	if err != nil {
		t.Perror(t.Name+": listen request failed", err)
		return nil, -1
	}
	src, gai := GetAddr(network, t.Port, t.Src, t.Numeric, true)
	if gai != "" {
		t.Printf("%s: getrdmaaddr error: %s\n", t.Name, gai)
		listen.Close()
		return nil, -2
	}
	if err := listen.Bind(src); err != nil {
		t.Perror(t.Name+": bind address failed", err)
		listen.Close()
		return nil, -1
	}
	if err := listen.Listen(0); err != nil {
		t.Perror(t.Name+": failure trying to listen", err)
		listen.Close()
		return nil, -1
	}
	return listen, 0
}

// Connect is the start of run_client in cmatose and udaddy: "starting client", the -s and -b addresses looked
// up for network, "connecting", and rdma_resolve_addr on every node. It returns run_client's status on failure,
// else 0.
func (t *Test) Connect(network string) int {
	t.Printf("%s: starting client\n", t.Name)
	dst, gai := GetAddr(network, t.Port, t.Dst, t.Numeric, false)
	var src netip.AddrPort
	if gai == "" && t.Src != "" {
		src, gai = GetAddr(network, t.Port, t.Src, t.Numeric, false)
		src = netip.AddrPortFrom(src.Addr(), 0)
	}
	if gai != "" {
		t.Printf("%s: getaddrinfo error: %s\n", t.Name, gai)
		return -2
	}
	t.Printf("%s: connecting\n", t.Name)
	for i := range t.Nodes {
		if err := t.Nodes[i].ID.ResolveAddr(src, dst, resolveTimeout); err != nil {
			t.Perror(t.Name+": failure getting addr", err)
			t.ConnectsLeft--
			return -1
		}
	}
	return 0
}

// AddrResolved is the ADDR_RESOLVED step of cmatose and udaddy: the -t TOS and -a ack timeout set (a failure
// only reported), then rdma_resolve_route.
func (t *Test) AddrResolved(n *Node) int {
	if t.SetTOS {
		if err := n.ID.SetTOS(t.TOS); err != nil {
			t.Perror(t.Name+": set TOS option failed", err)
		}
	}
	if t.SetTimeout {
		if err := n.ID.SetAckTimeout(t.Timeout); err != nil {
			t.Perror(t.Name+": set ack timeout option failed", err)
		}
	}
	if err := n.ID.ResolveRoute(resolveTimeout); err != nil {
		t.Perror(t.Name+": resolve route failed", err)
		t.ConnectsLeft--
		return -1
	}
	return 0
}

// RouteResolved is the ROUTE_RESOLVED step of cmatose and udaddy: setup readies the node (init_node,
// post_recvs), then rdma_connect with param; a failure costs one of connects_left.
func (t *Test) RouteResolved(n *Node, setup func(*Node) int, param *rdmacm.ConnParam) int {
	ret := setup(n)
	if ret == 0 {
		if err := n.ID.Connect(param); err != nil {
			t.Perror(t.Name+": failure connecting", err)
			ret = -1
		}
	}
	if ret != 0 {
		t.ConnectsLeft--
	}
	return ret
}

// ConnectRequest is connect_handler of cmatose and udaddy: the next free node takes id and accept readies and
// accepts it; when there is no node left or accept fails, the node is destroyed and the request rejected.
func (t *Test) ConnectRequest(id *rdmacm.ID, accept func(*Node) int) int {
	ret := -int(unix.ENOMEM)
	if t.ConnIndex < t.Connections {
		n := &t.Nodes[t.ConnIndex]
		t.ConnIndex++
		n.ID = id
		t.ByID[id] = n
		if ret = accept(n); ret == 0 {
			return 0
		}
		t.DestroyNode(n)
		t.ConnectsLeft--
	}
	t.Printf("%s: failing connection request\n", t.Name)
	id.Reject(nil)
	return ret
}

// ConnectError is the handling of ADDR_ERROR, ROUTE_ERROR, CONNECT_ERROR, UNREACHABLE, REJECTED (and mckey's
// MULTICAST_ERROR) while connecting: the event printed, one less connection to wait for, its status returned.
func (t *Test) ConnectError(ev *rdmacm.Event) int {
	t.Printf("%s: event: %s, error: %d\n", t.Name, ev.Type, ev.Status)
	t.ConnectsLeft--
	return int(ev.Status)
}

// VerifyParams is verify_test_params of udaddy and mckey: the message must fit the port's active MTU.
func (t *Test) VerifyParams(n *Node) int {
	ctx, _, err := n.ID.Device()
	if err != nil {
		return -1
	}
	pa, err := ctx.QueryPort(int(n.ID.PortNum()))
	if err != nil {
		return -1
	}
	mtu := pa.ActiveMTU.Bytes()
	if t.MessageCount > 0 && t.MessageSize > mtu {
		t.Printf("%s: message_size %d is larger than active mtu %d\n", t.Name, t.MessageSize, mtu)
		return -int(unix.EINVAL)
	}
	return 0
}

// allocPD is init_node's first step: the node's PD on the id's device.
func (t *Test) allocPD(n *Node) (*uverbs.Context, int) {
	ctx, _, err := n.ID.Device()
	if err == nil {
		n.PD, err = ctx.AllocPD()
	}
	if err != nil {
		t.Printf("%s: unable to allocate PD\n", t.Name)
		return nil, -int(unix.ENOMEM)
	}
	return ctx, 0
}

// createCQ creates n.CQ[i] with cqe entries.
func (t *Test) createCQ(ctx *uverbs.Context, n *Node, i, cqe int) int {
	var err error
	if n.CQ[i], err = ctx.CreateCQ(uverbs.CQAttr{CQE: cqe}); err != nil {
		t.Printf("%s: unable to create CQ\n", t.Name)
		return -int(unix.ENOMEM)
	}
	return 0
}

// createQP is rdma_create_qp on the node's id with one SGE each way.
func (t *Test) createQP(n *Node, recvCQ int, sigAll bool, wrs int) int {
	_, err := n.ID.CreateQP(rdmacm.QPInitAttr{PD: n.PD, SendCQ: n.CQ[0], RecvCQ: n.CQ[recvCQ], SigAll: sigAll,
		Cap: uverbs.QPCap{MaxSendWR: uint32(wrs), MaxRecvWR: uint32(wrs), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Perror(t.Name+": unable to create QP", err)
		return -1
	}
	return 0
}

// InitRCNode is cmatose's init_node: PD, a send and a receive CQ, an RC QP signalling every send, and the
// message buffer (create_message).
func (t *Test) InitRCNode(n *Node) int {
	ctx, ret := t.allocPD(n)
	if ret != 0 {
		return ret
	}
	cqe := t.MessageCount
	if cqe == 0 {
		cqe = 1
	}
	for i := range n.CQ {
		if ret := t.createCQ(ctx, n, i, cqe); ret != 0 {
			return ret
		}
	}
	if ret := t.createQP(n, 1, true, cqe); ret != 0 {
		return ret
	}
	if t.MessageCount == 0 {
		return 0
	}
	var err error
	if n.Mem, err = uverbs.AllocBuffer(t.MessageSize); err != nil {
		t.Printf("failed message allocation\n")
		t.Printf("%s: failed to create messages: %d\n", t.Name, -1)
		return -1
	}
	if n.MR, err = n.PD.RegMR(n.Mem.Bytes(), uverbs.AccessLocalWrite); err != nil {
		t.Printf("failed to reg MR\n")
		n.Mem.Close()
		n.Mem = nil
		t.Printf("%s: failed to create messages: %d\n", t.Name, -1)
		return -1
	}
	return 0
}

// InitUDNode is init_node of udaddy and mckey: PD, one CQ, a UD QP and the message buffer with room for the
// GRH. beforeQP (mckey's refusal of -l) runs between the CQ and the QP and may fail; afterQP (mckey's "-S 0 sends
// nothing") runs after the QP. Either may be nil.
func (t *Test) InitUDNode(n *Node, beforeQP func() int, afterQP func()) int {
	ctx, ret := t.allocPD(n)
	if ret != 0 {
		return ret
	}
	cqe, wrs := 2, 1
	if t.MessageCount > 0 {
		cqe, wrs = t.MessageCount*2, t.MessageCount
	}
	if ret := t.createCQ(ctx, n, 0, cqe); ret != 0 {
		return ret
	}
	if beforeQP != nil {
		if ret := beforeQP(); ret != 0 {
			return ret
		}
	}
	if ret := t.createQP(n, 0, false, wrs); ret != 0 {
		return ret
	}
	if afterQP != nil {
		afterQP()
	}
	if t.MessageCount > 0 {
		var err error
		if n.Mem, err = uverbs.AllocBuffer(t.MessageSize + GRHSize); err != nil {
			t.Printf("failed message allocation\n")
			t.Printf("%s: failed to create messages: %d\n", t.Name, -1)
			return -1
		}
		if n.MR, err = n.PD.RegMR(n.Mem.Bytes(), uverbs.AccessLocalWrite); err != nil {
			t.Printf("failed to reg MR\n")
			t.Printf("%s: failed to create messages: %d\n", t.Name, -1)
			return -1
		}
	}
	return 0
}

// PostRecvs is post_recvs: message_count receives of size bytes each (the message, and the GRH for UD).
func (t *Test) PostRecvs(n *Node, size int) int {
	if t.MessageCount == 0 {
		return 0
	}
	wr := []uverbs.RecvWR{{SGL: []uverbs.SGE{n.MR.SGE(0, size)}}}
	for i := 0; i < t.MessageCount; i++ {
		if _, err := n.ID.QP().PostRecv(wr); err != nil {
			t.Printf("failed to post receives: %d\n", -1)
			return -1
		}
	}
	return 0
}

// PostSends is cmatose's post_sends: message_count SENDs on a connected node.
func (t *Test) PostSends(n *Node) int {
	if !n.Connected || t.MessageCount == 0 {
		return 0
	}
	return t.postSends(n, uverbs.SendWR{Opcode: uverbs.WRSend, SGL: []uverbs.SGE{n.MR.SGE(0, t.MessageSize)}})
}

// PostUDSends is post_sends of udaddy and mckey: message_count SEND_WITH_IMMs (the immediate is our QPN) to the
// node's remote QP through its AH.
func (t *Test) PostUDSends(n *Node, flags uverbs.SendFlags) int {
	if !n.Connected || t.MessageCount == 0 {
		return 0
	}
	return t.postSends(n, uverbs.SendWR{Opcode: uverbs.WRSendWithImm, Flags: flags, Imm: n.ID.QP().QPN(),
		AH: n.AH.Data(), RemoteQPN: n.RemoteQPN, RemoteQKey: n.RemoteQKey,
		SGL: []uverbs.SGE{n.MR.SGE(0, t.MessageSize)}})
}

func (t *Test) postSends(n *Node, wr uverbs.SendWR) int {
	wrs := []uverbs.SendWR{wr}
	for i := 0; i < t.MessageCount; i++ {
		if _, err := n.ID.QP().PostSend(wrs); err != nil {
			t.Printf("failed to post sends: %d\n", -1)
			return -1
		}
	}
	return 0
}

// UDEstablished is what udaddy's ESTABLISHED and mckey's MULTICAST_JOIN do: the remote QP and an AH from the
// event's UD parameters; the node is then connected.
func (t *Test) UDEstablished(n *Node, ud *rdmacm.UDParam) int {
	n.RemoteQPN, n.RemoteQKey = ud.QPNum, ud.QKey
	ah, err := n.PD.CreateAH(ud.AHAttr)
	if err != nil {
		t.Printf("%s: failure creating address handle\n", t.Name)
		t.ConnectsLeft--
		return -1
	}
	n.AH = ah
	n.Connected = true
	t.ConnectsLeft--
	return 0
}

// PollCQs is poll_cqs: message_count completions from CQ[cq] of every connected node. each, when not nil, sees
// the first completion of every non-empty poll and may fail it.
func (t *Test) PollCQs(cq int, each func(*Node, *uverbs.WC) int) int {
	wc := make([]uverbs.WC, 8)
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if !n.Connected {
			continue
		}
		for done := 0; done < t.MessageCount; {
			got, err := n.CQ[cq].Poll(wc)
			if err != nil {
				t.Printf("%s: failed polling CQ: %d\n", t.Name, -1)
				return -1
			}
			if got > 0 && each != nil {
				if ret := each(n, &wc[0]); ret != 0 {
					return ret
				}
			}
			done += got
		}
	}
	return 0
}
