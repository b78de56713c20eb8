package rsocket_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rsocket"
	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/net/nettest"
)

// makePipe is a nettest.MakePipe over rsocket on the lab's rxe netdev: a listener on a port the kernel picks,
// one connection dialed to it; stop closes both ends and the listener. With acceptorFirst, c1 is the accepted end.
func makePipe(acceptorFirst bool) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		ln, err := rsocket.Listen("rdma", net.JoinHostPort(labIP, "0"))
		if err != nil {
			return nil, nil, nil, err
		}
		type res struct {
			c   net.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() {
			c, err := ln.Accept()
			ch <- res{c, err}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d, err := rsocket.DialContext(ctx, "rdma", ln.Addr().String())
		if err != nil {
			ln.Close()
			return nil, nil, nil, err
		}
		a := <-ch
		if a.err != nil {
			d.Close()
			ln.Close()
			return nil, nil, nil, a.err
		}
		stop = func() {
			d.Close()
			a.c.Close()
			ln.Close()
		}
		if acceptorFirst {
			return a.c, d, stop, nil
		}
		return d, a.c, stop, nil
	}
}

// TestLabNettest runs golang.org/x/net/nettest's net.Conn conformance suite (basic I/O, ping-pong, racy
// reads and writes, past/present/future deadlines, Close waking blocked calls, concurrent methods) over
// rsocket, with the dialed end as c1 and then the accepted end.
func TestLabNettest(t *testing.T) {
	labtest.Require(t)
	t.Run("Dialer", func(t *testing.T) { nettest.TestConn(t, makePipe(false)) })
	t.Run("Acceptor", func(t *testing.T) { nettest.TestConn(t, makePipe(true)) })
}
