// Package cmatose is rdmacm-utils 44's ucmatose (examples/cmatose.c) on
// goverbs' pure-Go rdma_cm: RC connections set up with rdma_cm, SENDs from
// the server then replies from the client, and a disconnect. Same options,
// output and exit status as the C tool, so the two pair in either role.
package cmatose

import (
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

const (
	sendCQ = 0
	recvCQ = 1
)

type test struct {
	cmcommon.Test
	migrate         bool
	disconnectsLeft int
}

// Main is ucmatose's main; prog is argv[0] as the usage prints it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &test{Test: cmcommon.Test{Stdout: stdout, Stderr: stderr, Prog: prog, Name: "cmatose", Connections: 1,
		MessageSize: 100, MessageCount: 10, Port: "7471", PS: rdmacm.PortSpaceTCP}}
	return t.Main(args, "s:b:f:P:c:C:S:t:p:a:m", t.opt, uverbs.QPTypeRC, t.runClient, t.runServer)
}

// opt is one of the options cmatose does not share with udaddy.
func (t *test) opt(o getopt.Option) bool {
	switch o.Val {
	case 'P':
		t.PortSpaceOpt(o.Arg, "ib", rdmacm.PortSpaceIB, "tcp")
	case 'p':
		t.Port = o.Arg
	case 'm':
		t.migrate = true
	case 'a':
		v, _, _ := cstd.Strtoul(o.Arg, 0)
		t.SetTimeout, t.Timeout = true, uint8(v)
	default:
		t.Usage("[-s server_address]", "[-b bind_address]", "[-f address_format]",
			"    name, ip, ipv6, or gid", "[-P port_space]", "    tcp or ib", "[-c connections]",
			"[-C message_count]", "[-S message_size]", "[-t type_of_service]", "[-p port_number]",
			"[-m(igrate)]", "[-a ack_timeout]")
		return false
	}
	return true
}

// setup is what the client's route handler and the server's connect handler do first: init_node, post_recvs.
func (t *test) setup(n *cmcommon.Node) int {
	ret := t.InitRCNode(n)
	if ret == 0 {
		ret = t.PostRecvs(n, t.MessageSize)
	}
	return ret
}

func (t *test) accept(n *cmcommon.Node) int {
	ret := t.InitRCNode(n)
	if ret == 0 && t.SetTimeout {
		if err := n.ID.SetAckTimeout(t.Timeout); err != nil {
			t.Perror("cmatose: set ack timeout option failed", err)
		}
	}
	if ret == 0 {
		ret = t.PostRecvs(n, t.MessageSize)
	}
	if ret == 0 {
		if err := n.ID.Accept(nil); err != nil {
			t.Perror("cmatose: failure accepting", err)
			ret = -1
		}
	}
	return ret
}

func (t *test) handler(ev *rdmacm.Event) int {
	n := t.ByID[ev.ID]
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		return t.AddrResolved(n)
	case rdmacm.EventRouteResolved:
		// rr 1, id 1, retry 5, RNR retry 0 (cmatose.c leaves it zero).
		return t.RouteResolved(n, t.setup, &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1,
			RetryCount: 5})
	case rdmacm.EventConnectRequest:
		return t.ConnectRequest(ev.ID, t.accept)
	case rdmacm.EventEstablished:
		if n != nil {
			n.Connected = true
		}
		t.ConnectsLeft--
		t.disconnectsLeft++
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError, rdmacm.EventUnreachable,
		rdmacm.EventRejected:
		return t.ConnectError(ev)
	case rdmacm.EventDisconnected:
		ev.ID.Disconnect()
		t.disconnectsLeft--
	}
	return 0
}

func (t *test) events(left *int, what string) int {
	ret, err := t.Events(left, t.handler)
	if err != nil {
		t.Perror("cmatose: failure in rdma_get_cm_event in "+what+" events", err)
		return int(cstd.ErrnoOf(err, unix.EIO))
	}
	return ret
}

// pollCQs waits for messageCount completions on each connected node's CQ.
func (t *test) pollCQs(index int) int { return t.PollCQs(index, nil) }

func (t *test) postSends() int { return t.EachNode(t.PostSends) }

func (t *test) migrateChannel(listen *rdmacm.ID) int {
	t.Printf("migrating to new event channel\n")
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.Perror("cmatose: failed to create event channel", err)
		return -1
	}
	if listen != nil {
		err = listen.Migrate(ch)
	}
	for i := 0; i < len(t.Nodes) && err == nil; i++ {
		if t.Nodes[i].ID != nil {
			err = t.Nodes[i].ID.Migrate(ch)
		}
	}
	if err != nil {
		t.Perror("cmatose: failure migrating to channel", err)
		ch.Close()
		return -1
	}
	t.Ch.Close()
	t.Ch = ch
	return 0
}

func (t *test) runServer() int {
	listen, ret := t.Listen("tcp", uverbs.QPTypeRC)
	if listen == nil {
		return ret
	}
	defer listen.Close()
	if ret := t.events(&t.ConnectsLeft, "connect"); ret != 0 {
		return ret
	}
	if t.MessageCount > 0 {
		t.Printf("initiating data transfers\n")
		if ret := t.postSends(); ret != 0 {
			return ret
		}
		t.Printf("completing sends\n")
		if ret := t.pollCQs(sendCQ); ret != 0 {
			return ret
		}
		t.Printf("receiving data transfers\n")
		if ret := t.pollCQs(recvCQ); ret != 0 {
			return ret
		}
		t.Printf("data transfers complete\n")
	}
	if t.migrate {
		if ret := t.migrateChannel(listen); ret != 0 {
			return ret
		}
	}
	t.Printf("cmatose: disconnecting\n")
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if !n.Connected {
			continue
		}
		n.Connected = false
		n.ID.Disconnect()
	}
	ret = t.events(&t.disconnectsLeft, "disconnect")
	t.Printf("disconnected\n")
	return ret
}

func (t *test) runClient() int {
	if ret := t.Connect("tcp"); ret != 0 {
		return ret
	}
	ret := t.events(&t.ConnectsLeft, "connect")
	if ret == 0 {
		if t.MessageCount > 0 {
			t.Printf("receiving data transfers\n")
			ret = t.pollCQs(recvCQ)
		}
		if ret == 0 && t.MessageCount > 0 {
			t.Printf("sending replies\n")
			if ret = t.postSends(); ret == 0 {
				t.Printf("data transfers complete\n")
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
