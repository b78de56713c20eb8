// Package rdmaclient is rdmacm-utils 44's rdma_server and rdma_client
// (examples/rdma_server.c, rdma_client.c) on goverbs' high-level rdma_cm API
// (Listen/Accept and Dial): one 16-byte message each way over an RC QP of one
// send and one receive WR, sent INLINE. Same options, output and exit status.
package rdmaclient

import (
	"context"
	"fmt"
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
)

type tool struct {
	name         string // "rdma_server" or "rdma_client"
	stdout       io.Writer
	server, port string
	ep           cmcommon.EP
}

func parse(name, prog string, args []string, stdout, stderr io.Writer, defServer string) (*tool, int) {
	t := &tool{name: name, stdout: stdout, server: defServer, port: "7471",
		ep: cmcommon.EP{Stdout: stdout, Stderr: stderr}}
	p := getopt.New(prog, args, "s:p:", nil, stderr, false)
	for o := range p.All() {
		switch o.Val {
		case 's':
			t.server = o.Arg
		case 'p':
			t.port = o.Arg
		default:
			fmt.Fprintf(stdout, "usage: %s\n\t[-s server_address]\n\t[-p port_number]\n", prog)
			return nil, 1
		}
	}
	return t, 0
}

var epOptions = rdmacm.Options{
	Cap:    uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 16},
	SigAll: true,
}

// msgs are the two 16-byte messages, registered like rdma_reg_msgs.
type msgs struct {
	buf        *uverbs.Buffer // recv at 0, send at 16
	recv, send *uverbs.MR
	flags      uverbs.SendFlags
}

func (t *tool) setup(c *rdmacm.Conn, m *msgs) error {
	var err error
	if m.buf, err = uverbs.AllocBuffer(32); err != nil {
		return err
	}
	if c.QP().Cap().MaxInlineData >= 16 {
		m.flags = uverbs.SendInline
	} else {
		fmt.Fprintf(t.stdout, "%s: device doesn't support IBV_SEND_INLINE, using sge sends\n", t.name)
	}
	// One registration covers both messages: the inline send's SGE only needs the address.
	if m.recv, err = t.ep.RegMsgs(c, m.buf.Bytes(), "rdma_reg_msgs for recv_msg"); err != nil {
		return err
	}
	if m.flags == 0 {
		if m.send, err = t.ep.RegMsgs(c, m.buf.Bytes()[16:32], "rdma_reg_msgs for send_msg"); err != nil {
			return err
		}
	}
	return t.ep.PostRecv(c, m.recv.SGE(0, 16))
}

func (m *msgs) close() {
	if m.send != nil {
		m.send.Close()
	}
	if m.recv != nil {
		m.recv.Close()
	}
	m.buf.Close()
}

// postSend is rdma_post_send of the send message.
func (t *tool) postSend(c *rdmacm.Conn, m *msgs) bool {
	sge := m.recv.SGE(16, 16)
	if m.send != nil {
		sge = m.send.SGE(0, 16)
	}
	return t.ep.PostSend(c, sge, m.flags) == nil
}

// sendComp is rdma_get_send_comp.
func (t *tool) sendComp(ctx context.Context, c *rdmacm.Conn) bool {
	return t.ep.GetComp(ctx, c, c.SendCQ(), "rdma_get_send_comp")
}

// recvComp is rdma_get_recv_comp.
func (t *tool) recvComp(ctx context.Context, c *rdmacm.Conn) bool {
	return t.ep.GetComp(ctx, c, c.RecvCQ(), "rdma_get_recv_comp")
}

// MainServer is rdma_server's main.
func MainServer(prog string, args []string, stdout, stderr io.Writer) int {
	return run("rdma_server", prog, args, stdout, stderr, "0.0.0.0", true)
}

// MainClient is rdma_client's main.
func MainClient(prog string, args []string, stdout, stderr io.Writer) int {
	return run("rdma_client", prog, args, stdout, stderr, "127.0.0.1", false)
}

func run(name, prog string, args []string, stdout, stderr io.Writer, defServer string, server bool) int {
	t, rc := parse(name, prog, args, stdout, stderr, defServer)
	if t == nil {
		return rc
	}
	return t.ep.Run(t.name, func() int { return t.run(server) })
}

// run is the body of rdma_server (server) or rdma_client: the connection, then the server's receive, send and
// send completion or the client's send, send completion and receive.
func (t *tool) run(server bool) int {
	ap, ret, ok := t.ep.Getaddrinfo(t.server, t.port, false)
	if !ok {
		return ret
	}
	ctx := context.Background()
	var m msgs
	o := epOptions
	o.Setup = func(c *rdmacm.Conn) error { return t.setup(c, &m) }
	var c *rdmacm.Conn
	if server {
		var closeListener func()
		c, closeListener = t.ep.Serve(ctx, ap, &o)
		defer closeListener()
	} else {
		c = t.ep.Dial(ctx, ap, &o)
	}
	defer m.close()
	if c == nil {
		return -1
	}
	defer c.Close()
	if server && (!t.recvComp(ctx, c) || !t.postSend(c, &m) || !t.sendComp(ctx, c)) {
		return -1
	}
	if !server && (!t.postSend(c, &m) || !t.sendComp(ctx, c) || !t.recvComp(ctx, c)) {
		return -1
	}
	return 0
}
