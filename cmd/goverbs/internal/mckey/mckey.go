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
	"net/netip"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

const grhSize = cmcommon.GRHSize // struct ibv_grh, in front of every UD receive

// settle is the C tool's pause after the joins ("to give the SM a chance
// to configure switches"): nothing to wait on from user space, so it is
// kept as the tool's behaviour.
var settle = 3 * time.Second

type test struct {
	cmcommon.Test

	mc       map[*cmcommon.Node]*rdmacm.Multicast // the nodes' joins
	isSender bool
	sendOnly bool
	loopback bool
	dstArg   string
	srcArg   string

	dst, src netip.AddrPort
	haveSrc  bool
}

func (t *test) usage() {
	t.Printf("usage: %s\n", t.Prog)
	t.Printf("\t-m multicast_address\n")
	t.Printf("\t[-M unmapped_multicast_address]\n\t replaces -m and requires -b\n")
	for _, l := range []string{"[-s(ender)]", "[-b bind_address]", "[-c connections]", "[-C message_count]",
		"[-S message_size]"} {
		t.Printf("\t%s\n", l)
	}
	t.Printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", uint16(rdmacm.PortSpaceUDP),
		uint16(rdmacm.PortSpaceIPoIB))
	t.Printf("\t[-o join as a send-only full-member]\n")
	t.Printf("\t[-l join without multicast loopback]\n")
}

// Main is mckey's main; prog is argv[0] as the usage prints it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &test{Test: cmcommon.Test{Stdout: stdout, Stderr: stderr, Prog: prog, Name: "mckey", Connections: 1,
		MessageSize: 100, MessageCount: 10, PS: rdmacm.PortSpaceUDP}, loopback: true}
	unmapped := false
	p := getopt.New(prog, args, "m:M:sb:c:C:S:p:ol", nil, stderr, false)
	for o := range p.All() {
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
		case 'c', 'C', 'S':
			t.Opt(o)
		case 'p':
			v, _, _ := cstd.Strtol(o.Arg, 0)
			t.PS = rdmacm.PortSpace(v)
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
		t.Printf("unmapped multicast address requires binding to source address\n")
		return 1
	}
	if unmapped {
		fmt.Fprintf(stderr, "%s: AF_IB (-M) multicast addresses are not supported by goverbs\n", prog)
		return 1
	}
	if !t.Open(uverbs.QPTypeUD, true) {
		return 1
	}
	t.mc = map[*cmcommon.Node]*rdmacm.Multicast{}
	return t.Finish(t.run())
}

// getAddr is getaddrinfo(host, NULL, NULL) keeping the first answer; a failure is printed, and its status is
// getaddrinfo's (negative) code.
func (t *test) getAddr(host string) (netip.AddrPort, int) {
	a, msg, code := cmcommon.RdmaGetaddrinfo(host, "", false)
	if msg != "" {
		t.Printf("getaddrinfo failed (%s) - invalid hostname or IP address\n", msg)
	}
	return a, code
}

// noLoopback is init_node's refusal of -l: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB is not expressible with package
// uverbs (see the package doc).
func (t *test) noLoopback() int {
	if !t.loopback {
		t.Perror("mckey: unable to create QP", unix.EOPNOTSUPP)
		return -1
	}
	return 0
}

// zeroSizeSendsNothing is init_node's "-S 0": no messages.
func (t *test) zeroSizeSendsNothing() {
	if t.MessageSize == 0 {
		t.MessageCount = 0
	}
}

func (t *test) addrHandler(n *cmcommon.Node) int {
	ret := t.VerifyParams(n)
	if ret == 0 {
		ret = t.InitUDNode(n, t.noLoopback, t.zeroSizeSendsNothing)
	}
	if ret == 0 && !t.isSender {
		ret = t.PostRecvs(n, t.MessageSize+grhSize)
	}
	if ret == 0 {
		mc, err := n.ID.JoinMulticast(t.dst, t.sendOnly)
		if err != nil {
			t.Perror("mckey: failure joining", err)
			ret = -1
		} else {
			t.mc[n] = mc
		}
	}
	if ret != 0 {
		t.ConnectsLeft--
	}
	return ret
}

func (t *test) joinHandler(n *cmcommon.Node, ud *rdmacm.UDParam) int {
	t.Printf("mckey: joined dgid: %s mlid 0x%x sl %d\n", cstd.InetNtop6(ud.AHAttr.GRH.DGID), ud.AHAttr.DLID,
		ud.AHAttr.SL)
	return t.UDEstablished(n, ud)
}

func (t *test) handler(ev *rdmacm.Event) int {
	n := t.ByID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		return t.addrHandler(n)
	case rdmacm.EventMulticastJoin:
		return t.joinHandler(n, &ev.UD)
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventMulticastError:
		return t.ConnectError(ev)
	}
	return 0
}

func (t *test) connectEvents() int {
	ret, err := t.Events(&t.ConnectsLeft, t.handler)
	if err != nil {
		return -1
	}
	return ret
}

// watchEvents is the C tool's cma thread: after the joins it reports
// MULTICAST_ERROR and ADDR_CHANGE events until the test ends.
func (t *test) watchEvents(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		ev, err := t.Ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.Perror("rdma_get_cm_event", err)
			}
			return
		}
		switch ev.Type {
		case rdmacm.EventMulticastError, rdmacm.EventAddrChange:
			t.Printf("mckey: event: %s, status: %d\n", ev.Type, ev.Status)
		}
	}
}

func (t *test) run() int {
	who := "server"
	if t.isSender {
		who = "client"
	}
	t.Printf("mckey: starting %s\n", who)
	var ret int
	if t.haveSrc {
		if t.src, ret = t.getAddr(t.srcArg); ret != 0 {
			return ret
		}
	}
	if t.dst, ret = t.getAddr(t.dstArg); ret != 0 {
		return ret
	}
	t.Printf("mckey: joining\n")
	for i := range t.Nodes {
		if t.haveSrc {
			if err := t.Nodes[i].ID.Bind(t.src); err != nil {
				t.Perror("mckey: addr bind failure", err)
				t.ConnectsLeft--
				return -1
			}
		}
		var src netip.AddrPort
		if t.haveSrc {
			src = t.src
		}
		if err := t.Nodes[i].ID.ResolveAddr(src, t.dst, 2000*time.Millisecond); err != nil {
			t.Perror("mckey: resolve addr failure", err)
			t.ConnectsLeft--
			return -1
		}
	}
	ret = t.connectEvents()
	if ret == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go t.watchEvents(ctx, done)
		defer func() { cancel(); <-done }()
		time.Sleep(settle)
		if t.MessageCount > 0 {
			if t.isSender {
				t.Printf("initiating data transfers\n")
				ret = t.EachNode(func(n *cmcommon.Node) int { return t.PostUDSends(n, 0) })
			} else {
				t.Printf("receiving data transfers\n")
				ret = t.PollCQs(0, nil)
			}
			if ret == 0 {
				t.Printf("data transfers complete\n")
			}
		}
	}
	// As in C, the status is the last leave's.
	for i := range t.Nodes {
		n := &t.Nodes[i]
		mc := t.mc[n]
		if mc == nil {
			ret = -1
			t.Perror("mckey: failure leaving", unix.EADDRNOTAVAIL)
			continue
		}
		ret = 0
		if err := mc.Leave(); err != nil {
			ret = -1
			t.Perror("mckey: failure leaving", err)
		}
		delete(t.mc, n)
	}
	return ret
}
