package cmcommon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// EP is what rdma_server, rdma_client, rdma_xserver and rdma_xclient share on the high-level rdma_cm API
// (rdma_getaddrinfo, rdma_create_ep, rdma_listen, rdma_get_request, rdma_accept, rdma_connect): each step's
// failure reported as the C programs' perror lines.
type EP struct {
	Stdout, Stderr io.Writer
}

// Run prints "PROG: start", runs body, prints "PROG: end STATUS" and returns the exit status.
func (e EP) Run(prog string, body func() int) int {
	fmt.Fprintf(e.Stdout, "%s: start\n", prog)
	ret := body()
	fmt.Fprintf(e.Stdout, "%s: end %d\n", prog, ret)
	return ret & 0xff
}

// Getaddrinfo is RdmaGetaddrinfo with its failure printed ("rdma_getaddrinfo: ..."); ok false with the status
// to return then.
func (e EP) Getaddrinfo(host, service string, wildcard bool) (ap netip.AddrPort, ret int, ok bool) {
	ap, gai, code := RdmaGetaddrinfo(host, service, wildcard)
	if gai != "" {
		fmt.Fprintf(e.Stdout, "rdma_getaddrinfo: %s\n", gai)
		return ap, code, false
	}
	return ap, 0, true
}

// Listen is rdma_create_ep and rdma_listen on ap.
func (e EP) Listen(ap netip.AddrPort, o *rdmacm.Options) *rdmacm.Listener {
	l, err := rdmacm.Listen(ap, o)
	if err != nil {
		var ce *rdmacm.Error
		if errors.As(err, &ce) && ce.Op == "listen" {
			cstd.Perror(e.Stderr, "rdma_listen", err)
		} else {
			cstd.Perror(e.Stderr, "rdma_create_ep", err)
		}
		return nil
	}
	return l
}

// GetRequest is rdma_get_request.
func (e EP) GetRequest(ctx context.Context, l *rdmacm.Listener) *rdmacm.Request {
	req, err := l.Accept(ctx)
	if err != nil {
		cstd.Perror(e.Stderr, "rdma_get_request", err)
		return nil
	}
	return req
}

// Accept is rdma_accept (o.Setup, as rdma_create_ep's QP set-up, reports its own failures).
func (e EP) Accept(ctx context.Context, req *rdmacm.Request, o *rdmacm.Options) *rdmacm.Conn {
	c, err := req.Accept(ctx, o)
	if err != nil {
		var ce *rdmacm.Error
		if errors.As(err, &ce) && strings.HasPrefix(ce.Op, "accept") {
			cstd.Perror(e.Stderr, "rdma_accept", err)
		}
		return nil
	}
	return c
}

// Serve is what the servers do after rdma_getaddrinfo: Listen on ap, GetRequest and Accept of one connection.
// The connection is nil when any step failed; closeListener closes the listener (nothing when listening
// failed), after the connection.
func (e EP) Serve(ctx context.Context, ap netip.AddrPort, o *rdmacm.Options) (c *rdmacm.Conn, closeListener func()) {
	l := e.Listen(ap, o)
	if l == nil {
		return nil, func() {}
	}
	if req := e.GetRequest(ctx, l); req != nil {
		c = e.Accept(ctx, req, o)
	}
	return c, func() { l.Close() }
}

// Dial is rdma_create_ep and rdma_connect to ap (o.Setup reports its own failures).
func (e EP) Dial(ctx context.Context, ap netip.AddrPort, o *rdmacm.Options) *rdmacm.Conn {
	c, err := rdmacm.Dial(ctx, ap, o)
	if err != nil {
		var ce *rdmacm.Error
		switch {
		case errors.As(err, &ce) && strings.HasPrefix(ce.Op, "connect"):
			cstd.Perror(e.Stderr, "rdma_connect", err)
		case errors.As(err, &ce) && strings.HasPrefix(ce.Op, "dial setup"):
			// setup printed its own message
		default:
			cstd.Perror(e.Stderr, "rdma_create_ep", err)
		}
		return nil
	}
	return c
}

// WaitComp is librdmacm's rdma_get_send_comp / rdma_get_recv_comp on cq, a CQ of c: poll, arm, poll again, then
// wait on the connection's completion channel, until one completion comes. A failed poll or arm ends it with that
// error, as librdmacm returns it; a completion whose status is not success ends it with EIO (librdmacm leaves
// the status to the caller; the example programs never look, so goverbs' tools fail there instead).
func WaitComp(ctx context.Context, c *rdmacm.Conn, cq *uverbs.CQ) error {
	var wc [1]uverbs.WC
	poll := func() (bool, error) {
		n, err := cq.Poll(wc[:])
		if err != nil || n == 0 {
			return false, err
		}
		if wc[0].Status != uverbs.WCSuccess {
			return true, fmt.Errorf("completion status %d: %w", wc[0].Status, unix.EIO)
		}
		return true, nil
	}
	for {
		if done, err := poll(); done || err != nil {
			return err
		}
		if err := cq.ReqNotify(false); err != nil {
			return err
		}
		if done, err := poll(); done || err != nil {
			return err
		}
		got, err := c.CompChannel().GetEvent(ctx)
		if err != nil {
			return err
		}
		got.AckEvents(1)
	}
}

// RegMsgs is rdma_reg_msgs: b registered on c's PD for local write, a failure reported as what.
func (e EP) RegMsgs(c *rdmacm.Conn, b []byte, what string) (*uverbs.MR, error) {
	mr, err := c.PD().RegMR(b, uverbs.AccessLocalWrite)
	if err != nil {
		cstd.Perror(e.Stderr, what, err)
	}
	return mr, err
}

// PostRecv is rdma_post_recv of one SGE.
func (e EP) PostRecv(c *rdmacm.Conn, sge uverbs.SGE) error {
	_, err := c.QP().PostRecv([]uverbs.RecvWR{{SGL: []uverbs.SGE{sge}}})
	if err != nil {
		cstd.Perror(e.Stderr, "rdma_post_recv", err)
	}
	return err
}

// PostSend is rdma_post_send of one SGE with flags.
func (e EP) PostSend(c *rdmacm.Conn, sge uverbs.SGE, flags uverbs.SendFlags) error {
	_, err := c.QP().PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend, Flags: flags, SGL: []uverbs.SGE{sge}}})
	if err != nil {
		cstd.Perror(e.Stderr, "rdma_post_send", err)
	}
	return err
}

// GetComp is rdma_get_send_comp or rdma_get_recv_comp (what, in the failure's line) on cq: WaitComp.
func (e EP) GetComp(ctx context.Context, c *rdmacm.Conn, cq *uverbs.CQ, what string) bool {
	if err := WaitComp(ctx, c, cq); err != nil {
		cstd.Perror(e.Stderr, what, err)
		return false
	}
	return true
}
