// Package rdmax is rdmacm-utils 44's rdma_xserver and rdma_xclient
// (examples/rdma_xserver.c, rdma_xclient.c) on goverbs' high-level rdma_cm
// API: the client sends one 16-byte INLINE message, the server receives it;
// the server's accept carries 4 bytes of private data (its SRQ number, big
// endian; 0 in RC mode). Same options, output and exit status as the C tools.
//
// Only RC (-c r, the default) is implemented; goverbs' rdma_cm has no XRC
// endpoints. rdma_xclient -c x fails the way the C tool fails on a device
// without XRC (rxe, measured): "rdma_create_ep: Operation not supported",
// status -1. The C rdma_xserver -c x does not fail on rxe: it listens and
// waits for a request (measured); ours listens (PS_IB port space, IPv4) and
// waits too, and refuses a request that arrives with "rdma_get_request:
// Operation not supported" and status -1 (what the C server prints then is
// not measured: the C client cannot reach it on rxe).
package rdmax

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

type tool struct {
	prog           string
	stdout, stderr io.Writer
	server, port   string
	xrc            bool
	ep             cmcommon.EP
}

func (t *tool) perror(what string, err error) { cstd.Perror(t.stderr, what, err) }

func parse(prog string, args []string, stdout, stderr io.Writer, client bool) (*tool, int) {
	t := &tool{prog: prog, stdout: stdout, stderr: stderr, port: "7471", ep: cmcommon.EP{Stdout: stdout, Stderr: stderr}}
	optstring := "p:c:"
	if client {
		optstring = "s:p:c:"
		t.server = "127.0.0.1"
	}
	p := getopt.New(prog, args, optstring, nil, stderr, false)
	bad := false
	for !bad {
		o, ok := p.Next()
		if !ok {
			break
		}
		switch o.Val {
		case 's':
			t.server = o.Arg
		case 'p':
			t.port = o.Arg
			if client && len(t.port) > 5 {
				t.port = t.port[:5] // strncpy into char[6]
			}
		case 'c':
			c := byte(0)
			if o.Arg != "" {
				c = o.Arg[0] | 0x20
			}
			switch c {
			case 'r':
			case 'x':
				t.xrc = true
			default:
				bad = true
			}
		default:
			bad = true
		}
	}
	if bad {
		fmt.Fprintf(stdout, "usage: %s\n", prog)
		if client {
			fmt.Fprintf(stdout, "\t[-s server]\n")
		}
		fmt.Fprintf(stdout, "\t[-p port_number]\n\t[-c communication type]\n")
		fmt.Fprintf(stdout, "\t    r - RC: reliable-connected (default)\n\t    x - XRC: extended-reliable-connected\n")
		return nil, 1
	}
	return t, 0
}

// MainServer is rdma_xserver's main.
func MainServer(prog string, args []string, stdout, stderr io.Writer) int {
	return MainServerContext(context.Background(), prog, args, stdout, stderr)
}

// MainServerContext is MainServer whose wait for a connection request ends with ctx (status 0 then).
func MainServerContext(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	t, rc := parse(prog, args, stdout, stderr, false)
	if t == nil {
		return rc
	}
	return t.ep.Run(t.prog, func() int { return t.runServer(ctx) })
}

// MainClient is rdma_xclient's main.
func MainClient(prog string, args []string, stdout, stderr io.Writer) int {
	t, rc := parse(prog, args, stdout, stderr, true)
	if t == nil {
		return rc
	}
	return t.ep.Run(t.prog, t.runClient)
}

// msg is the programs' one 16-byte message, registered like rdma_reg_msgs.
type msg struct {
	buf *uverbs.Buffer
	mr  *uverbs.MR
}

func (t *tool) regMsg(c *rdmacm.Conn, m *msg) error {
	var err error
	if m.buf, err = uverbs.AllocBuffer(16); err != nil {
		return err
	}
	m.mr, err = t.ep.RegMsgs(c, m.buf.Bytes(), "rdma_reg_msgs")
	return err
}

func (m *msg) close() {
	if m.mr != nil {
		m.mr.Close()
	}
	if m.buf != nil {
		m.buf.Close()
	}
}

func (t *tool) runServer(ctx context.Context) int {
	ap, ret, ok := t.ep.Getaddrinfo("", t.port, true)
	if !ok {
		return ret
	}
	if t.xrc {
		return t.xrcServer(ctx, ap)
	}
	var zero uint8
	o := rdmacm.Options{Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1},
		ResponderResources: &zero, InitiatorDepth: &zero, RetryCount: &zero, RNRRetryCount: &zero,
		PrivateData: make([]byte, 4)} // the SRQ number, 0 without XRC
	var m msg
	o.Setup = func(c *rdmacm.Conn) error {
		if err := t.regMsg(c, &m); err != nil {
			return err
		}
		return t.ep.PostRecv(c, m.mr.SGE(0, 16))
	}
	c, closeListener := t.ep.Serve(ctx, ap, &o)
	defer closeListener()
	defer m.close()
	if c == nil {
		return -1
	}
	defer c.Close()
	if !t.ep.GetComp(ctx, c, c.RecvCQ(), "rdma_get_recv_comp") {
		return -1
	}
	return 0
}

func (t *tool) runClient() int {
	ap, ret, ok := t.ep.Getaddrinfo(t.server, t.port, true)
	if !ok {
		return ret
	}
	if t.xrc {
		t.perror("rdma_create_ep", unix.EOPNOTSUPP)
		return -1
	}
	ctx := context.Background()
	var m msg
	defer m.close()
	o := rdmacm.Options{Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1},
		SigAll: true,
		Setup:  func(c *rdmacm.Conn) error { return t.regMsg(c, &m) }}
	c := t.ep.Dial(ctx, ap, &o)
	if c == nil {
		return -1
	}
	defer c.Close()
	// 16 zero bytes, INLINE (the C tool gives lkey 0: an inline SGE needs no key).
	if err := t.ep.PostSend(c, uverbs.SGE{Addr: m.mr.SGE(0, 16).Addr, Length: 16}, uverbs.SendInline); err != nil {
		t.perror("post_send", err)
		return -1
	}
	if !t.ep.GetComp(ctx, c, c.SendCQ(), "rdma_get_recv_comp") { // sic: rdma_xclient.c's message
		return -1
	}
	return 0
}

// xrcServer listens like the C server in XRC mode and refuses the first request (see the package doc).
func (t *tool) xrcServer(ctx context.Context, ap netip.AddrPort) int {
	ch, err := rdmacm.NewChannel()
	if err != nil {
		t.perror("rdma_create_ep", err)
		return -1
	}
	defer ch.Close()
	id, err := ch.CreateID(rdmacm.PortSpaceIB, uverbs.QPTypeRC)
	if err == nil {
		defer id.Close()
		err = id.Bind(ap)
	}
	if err != nil {
		t.perror("rdma_create_ep", err)
		return -1
	}
	if err := id.Listen(0); err != nil {
		t.perror("rdma_listen", err)
		return -1
	}
	for {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			t.perror("rdma_get_request", err)
			return -1
		}
		if ev.Type == rdmacm.EventConnectRequest {
			ev.ID.Reject(nil)
			ev.ID.Close()
			t.perror("rdma_get_request", unix.EOPNOTSUPP)
			return -1
		}
	}
}
