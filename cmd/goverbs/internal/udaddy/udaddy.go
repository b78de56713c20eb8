// Package udaddy is rdmacm-utils 44's udaddy on goverbs' pure-Go rdma_cm:
// UD QPs resolved through rdma_cm (SIDR), SEND_WITH_IMM from the client, and
// replies from the server through an address handle made from the first
// receive's GRH. Same options, output and exit status as the C tool.
package udaddy

import (
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

const grhSize = cmcommon.GRHSize // struct ibv_grh, in front of every UD receive

type test struct {
	cmcommon.Test
}

// Main is udaddy's main; prog is argv[0] as the usage prints it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &test{Test: cmcommon.Test{Stdout: stdout, Stderr: stderr, Prog: prog, Name: "udaddy", Connections: 1,
		MessageSize: 100, MessageCount: 10, Port: "7174", PS: rdmacm.PortSpaceUDP}}
	return t.Main(args, "s:b:c:C:S:t:p:P:f:", t.opt, uverbs.QPTypeUD, t.runClient, t.runServer)
}

// opt is one of the options udaddy does not share with cmatose.
func (t *test) opt(o getopt.Option) bool {
	switch o.Val {
	case 'p':
		v, _, _ := cstd.Strtol(o.Arg, 0)
		t.PS = rdmacm.PortSpace(v)
	case 'P':
		t.PortSpaceOpt(o.Arg, "ipoib", rdmacm.PortSpaceIPoIB, "udp")
	default:
		t.Usage("[-s server_address]", "[-b bind_address]", "[-f address_format]",
			"    name, ip, ipv6, or gid", "[-P port_space]", "    udp or ipoib", "[-c connections]",
			"[-C message_count]", "[-S message_size]", "[-t type_of_service]")
		t.Printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", uint16(rdmacm.PortSpaceUDP),
			uint16(rdmacm.PortSpaceIPoIB))
		return false
	}
	return true
}

// setup is what the client's route handler and the server's connect handler do first: verify_test_params,
// init_node, post_recvs.
func (t *test) setup(n *cmcommon.Node) int {
	ret := t.VerifyParams(n)
	if ret == 0 {
		ret = t.InitUDNode(n, nil, nil)
	}
	if ret == 0 {
		ret = t.PostRecvs(n, t.MessageSize+grhSize)
	}
	return ret
}

func (t *test) accept(n *cmcommon.Node) int {
	ret := t.setup(n)
	if ret == 0 {
		if err := n.ID.Accept(&rdmacm.ConnParam{}); err != nil {
			t.Perror("udaddy: failure accepting", err)
			ret = -1
		}
	}
	if ret == 0 {
		n.Connected = true
		t.ConnectsLeft--
	}
	return ret
}

func (t *test) handler(ev *rdmacm.Event) int {
	n := t.ByID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		return t.AddrResolved(n)
	case rdmacm.EventRouteResolved:
		return t.RouteResolved(n, t.setup, &rdmacm.ConnParam{})
	case rdmacm.EventConnectRequest:
		return t.ConnectRequest(ev.ID, t.accept)
	case rdmacm.EventEstablished:
		return t.UDEstablished(n, &ev.UD)
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError, rdmacm.EventUnreachable,
		rdmacm.EventRejected:
		return t.ConnectError(ev)
	}
	return 0
}

func (t *test) connectEvents() int {
	ret, err := t.Events(&t.ConnectsLeft, t.handler)
	if err != nil {
		return int(cstd.ErrnoOf(err, unix.EIO))
	}
	return ret
}

// replyAH is ibv_create_ah_from_wc: the reply goes to the sender of the receive in n.Mem.
func (t *test) replyAH(n *cmcommon.Node, wc *uverbs.WC) error {
	ctx, _, err := n.ID.Device()
	if err != nil {
		return err
	}
	attr, err := ctx.AHAttrFromWC(n.ID.PortNum(), wc, n.Mem.Bytes()[:grhSize])
	if err != nil {
		return err
	}
	ah, err := n.PD.CreateAH(attr)
	if err != nil {
		return err
	}
	n.AH = ah
	n.RemoteQPN = wc.Imm
	qa, err := n.ID.QP().Query(uverbs.QPAttrQKey)
	if err != nil {
		return err
	}
	n.RemoteQKey = qa.QKey
	return nil
}

// pollCQs is poll_cqs; a node without an AH yet (the server's) gets one from its first completion.
func (t *test) pollCQs() int {
	return t.PollCQs(0, func(n *cmcommon.Node, wc *uverbs.WC) int {
		if n.AH == nil {
			if err := t.replyAH(n, wc); err != nil {
				t.Printf("udaddy: failed to create reply AH\n")
				return -1
			}
		}
		return 0
	})
}

func (t *test) postSends(flags uverbs.SendFlags) int {
	return t.EachNode(func(n *cmcommon.Node) int { return t.PostUDSends(n, flags) })
}

func (t *test) runServer() int {
	listen, ret := t.Listen("udp", uverbs.QPTypeUD)
	if listen == nil {
		return ret
	}
	defer listen.Close()
	t.connectEvents()
	if t.MessageCount == 0 {
		return 0
	}
	t.Printf("receiving data transfers\n")
	if ret := t.pollCQs(); ret != 0 {
		return ret
	}
	t.Printf("sending replies\n")
	if ret := t.postSends(uverbs.SendSignaled); ret != 0 {
		return ret
	}
	if ret := t.pollCQs(); ret != 0 {
		return ret
	}
	t.Printf("data transfers complete\n")
	return 0
}

func (t *test) runClient() int {
	if ret := t.Connect("udp"); ret != 0 {
		return ret
	}
	if ret := t.connectEvents(); ret != 0 {
		return ret
	}
	if t.MessageCount > 0 {
		t.Printf("initiating data transfers\n")
		if ret := t.postSends(0); ret != 0 {
			return ret
		}
		t.Printf("receiving data transfers\n")
		if ret := t.pollCQs(); ret != 0 {
			return ret
		}
		t.Printf("data transfers complete\n")
	}
	return 0
}
