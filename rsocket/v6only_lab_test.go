package rsocket_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rsocket"
	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabV6Only: ListenConfig.V6Only (IPV6_V6ONLY) makes a listener on "::" take the IPv6 connection and refuse
// the IPv4 one, which the same listener without it takes (dual-stack).
func TestLabV6Only(t *testing.T) {
	labtest.RequireProvider(t, "rxe") // siw's listener on "::" takes no IPv4 connection at all (listenAddr)
	a6 := labtest.IPv6Addr(t)
	for i, v6only := range []bool{true, false} {
		port := 20470 + i
		t.Run(fmt.Sprintf("V6Only=%v", v6only), func(t *testing.T) {
			lc := rsocket.ListenConfig{V6Only: v6only}
			ln, err := lc.Listen(context.Background(), "rdma", fmt.Sprintf("[::]:%d", port))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 2)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						close(accepted)
						return
					}
					accepted <- c
				}
			}()
			d := rsocket.Dialer{Timeout: 30 * time.Second}
			for _, dst := range []netip.AddrPort{netip.AddrPortFrom(a6, uint16(port)), netip.MustParseAddrPort(hostPort(port))} {
				c, err := d.DialContext(context.Background(), "rdma", dst.String())
				if v6only && dst.Addr().Is4() {
					if err == nil {
						c.Close()
						t.Fatalf("a V6Only listener on :: took an IPv4 connection from %v", dst)
					}
					t.Logf("IPv4 dial to the V6Only listener: %v", err)
					continue
				}
				if err != nil {
					t.Fatalf("dial %v: %v", dst, err)
				}
				s := <-accepted
				if s == nil {
					c.Close()
					t.Fatal("no connection accepted")
				}
				if _, err := c.Write([]byte{42}); err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 1)
				if _, err := io.ReadFull(s, b); err != nil || b[0] != 42 {
					t.Fatalf("read %v, %v", b, err)
				}
				if got := s.RemoteAddr().(*rsocket.Addr).Addr().Unmap(); got.Is4() != dst.Addr().Is4() {
					t.Errorf("accepted from %v, dialed %v", got, dst)
				}
				c.Close()
				s.Close()
			}
		})
	}
}

// TestLabMaxSegmentAndState: TCP_MAXSEG is the path MTU (rxe on a 1500-byte netdev: 1024), 2048 without a path
// record (iWARP), as librdmacm computes it; TCP_INFO's state is established while connected, and not after Close.
func TestLabMaxSegmentAndState(t *testing.T) {
	labtest.Require(t)
	c, s := pairWith(t, 20472, rsocket.Options{}, rsocket.Options{})
	want := 1024
	if labtest.Provider() == "siw" {
		want = 2048
	}
	for name, conn := range map[string]*rsocket.Conn{"dialed": c, "accepted": s} {
		o := conn.SocketOptions()
		if o.MaxSegment != want || !o.Established {
			t.Errorf("%s: MaxSegment %d, Established %v; want %d, true", name, o.MaxSegment, o.Established, want)
		}
	}
	if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	if o := c.SocketOptions(); o.Established || o.MaxSegment != want {
		t.Errorf("after Close: MaxSegment %d, Established %v; want %d, false", o.MaxSegment, o.Established, want)
	}
}
