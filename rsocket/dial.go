package rsocket

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Options are the rsockets knobs (librdmacm's rsetsockopt and
// /etc/rdma/rsocket defaults). Zero values take librdmacm's defaults.
type Options struct {
	// SendBuffer and RecvBuffer are the buffer sizes in bytes (default 128 KiB
	// each, librdmacm's wmem_default/mem_default). Note that librdmacm doubles
	// an SO_SNDBUF/SO_RCVBUF value: rstream -B 512k means 1 MiB buffers; here the
	// value is the size itself.
	SendBuffer, RecvBuffer int
	// InlineSize is the largest message sent inline (default 64; negative for 0).
	InlineSize int
	// SQSize and RQSize are the send and receive queue depths (default 384
	// each, clamped to [16, 65534]). RQSize is also the credit count given to the peer.
	SQSize, RQSize int
	// IOMapSize is the number of entries of the iomap table offered to the
	// peer: how many buffers the peer may map with IOMap for its IOWrite
	// into our memory (librdmacm's RDMA_IOMAPSIZE; default 0, riostream uses
	// 1). Rounded as librdmacm does (values above 128 down to a multiple of
	// 256, at most 32512).
	IOMapSize int
	// KeepAlive is the period of keepalive probes (librdmacm's SO_KEEPALIVE
	// with TCP_KEEPIDLE): every period a zero-length RDMA WRITE is posted,
	// which the peer's device acknowledges without the peer seeing anything;
	// a peer that is gone fails the connection (see Conn.SetKeepAlive).
	// 0 (the default, as librdmacm) or negative: no probes. Unlike
	// net.Dialer.KeepAlive, 0 does not enable probes. See Conn.SetKeepAlive.
	KeepAlive time.Duration
	// PollTime is how long a blocked Read or Write polls the CQ before
	// sleeping on the completion channel (default 10µs, librdmacm's
	// polling_time; negative: never poll).
	PollTime time.Duration
	// NoDelay is TCP_NODELAY, stored and reported (Conn.SocketOptions) as
	// librdmacm does: rsockets never holds a send back to coalesce it, so it
	// changes nothing on the wire. Default off, as librdmacm reports it.
	NoDelay bool
}

func clampQ(n int) uint16 {
	if n == 0 {
		n = 384
	}
	return uint16(min(max(n, qpMinSize), qpMaxSize))
}

func (o *Options) sqSize() uint16 { return clampQ(o.SQSize) }
func (o *Options) rqSize() uint16 { return clampQ(o.RQSize) }
func (o *Options) sendBuffer() int {
	if o.SendBuffer == 0 {
		return 1 << 17
	}
	return max(o.SendBuffer, 2*sndLowat)
}
func (o *Options) recvBuffer() int {
	if o.RecvBuffer == 0 {
		return 1 << 17
	}
	return max(o.RecvBuffer&^1, 2*sndLowat)
}
func (o *Options) inlineSize() int {
	if o.InlineSize == 0 {
		return 64
	}
	return max(o.InlineSize, 0)
}
func (o *Options) iomapSize() int {
	return scaleToValue(valueToScale(min(max(o.IOMapSize, 0), maxIOMapSize)))
}
func (o *Options) pollTime() time.Duration {
	if o.PollTime == 0 {
		return 10 * time.Microsecond
	}
	return o.PollTime
}

// Dialer connects stream rsockets.
type Dialer struct {
	Options
	// LocalAddr is the source address (rbind before rconnect): an IP of a
	// netdev carrying an RDMA device (the kernel binds it: another is
	// EADDRNOTAVAIL). Default: from the routing table.
	LocalAddr netip.Addr
	// LocalPort is the source port (rbind's port); 0: one the kernel picks.
	// A port another rdma_cm id holds fails the dial: EADDRINUSE for the
	// same address, EADDRNOTAVAIL where either is the unspecified address
	// (LocalPort without LocalAddr binds that).
	LocalPort uint16
	// Timeout bounds the whole connection setup (default: none beyond ctx and the CM's own timeouts).
	Timeout time.Duration
	// Route is librdmacm's RDMA_ROUTE: the paths to connect over, given to
	// rdma_cm (rdma_set_option RDMA_OPTION_IB_PATH) in place of route
	// resolution, as rconnect does when the option was set. One must be
	// flagged primary, GMP and bidirectional (IB_PATH_*), as the paths
	// Conn.Route returns are; the kernel refuses the set otherwise (EINVAL)
	// and Dial fails. On RoCE the kernel fills in the path's Ethernet fields
	// from the resolved address. nil: resolve the route.
	Route []rdmacm.PathRecord
	// TOS is librdmacm's IP_TOS: the type of service rdma_cm resolves the
	// route with (rdma_set_option RDMA_OPTION_ID_TOS before the route is
	// resolved); on RoCE it is the path's traffic class, which the accepting
	// side takes from the connection request too. 0: not set (rdma_cm's
	// default_roce_tos, 0 unless configured). Not used with Route, whose
	// paths carry their own traffic class.
	TOS uint8
}

// Dial connects to address ("host:port", host an IP of an RDMA netdev or a
// name) over network "rdma", "rdma4" or "rdma6".
func Dial(network, address string) (net.Conn, error) {
	var d Dialer
	return d.DialContext(context.Background(), network, address)
}

// DialContext is Dial with a context that bounds the connection setup.
func DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d Dialer
	return d.DialContext(ctx, network, address)
}

func tcpNetwork(network string) (string, error) {
	switch network {
	case "rdma":
		return "tcp", nil
	case "rdma4":
		return "tcp4", nil
	case "rdma6":
		return "tcp6", nil
	}
	return "", net.UnknownNetworkError(network)
}

func resolve(ctx context.Context, network, address string) (netip.AddrPort, error) {
	tn, err := tcpNetwork(network)
	if err != nil {
		return netip.AddrPort{}, err
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return netip.AddrPort{}, err
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(pn)), nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if (tn == "tcp4" && !ip.Is4()) || (tn == "tcp6" && !ip.Is6()) {
			return netip.AddrPort{}, &net.AddrError{Err: "address family mismatch", Addr: address}
		}
		return netip.AddrPortFrom(ip, uint16(pn)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[tn], host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, &net.DNSError{Err: "no suitable address", Name: host, IsNotFound: true}
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(pn)), nil
}

// await waits for the next event of id on ch and requires it to be want.
func await(ctx context.Context, ch *rdmacm.Channel, id *rdmacm.ID, want rdmacm.EventType) (*rdmacm.Event, error) {
	for {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if ev.ID != id {
			continue
		}
		if ev.Type != want {
			return ev, &rdmacm.EventError{Event: ev}
		}
		return ev, nil
	}
}

// DialContext connects like rconnect: resolve the address and route (with
// librdmacm's retries on timeouts), create the QP and buffers, post the
// receives and CONNECT with the 40-byte connection data, responder resources
// and initiator depth 0 (initiator depth 1 on iWARP), flow control 1, retry
// and RNR retry 7.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	dst, err := resolve(ctx, network, address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	c, err := d.dial(ctx, dst)
	if err != nil {
		// rxe's kernel refuses a loopback destination with ENODEV; with an iWARP device (siw) it is EINVAL.
		if dst.Addr().IsLoopback() && (errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EINVAL)) {
			err = &loopbackError{err}
		}
		return nil, &net.OpError{Op: "dial", Net: network, Addr: &Addr{dst}, Err: err}
	}
	return c, nil
}

func (d *Dialer) dial(ctx context.Context, dst netip.AddrPort) (_ *Conn, err error) {
	ch, err := rdmacm.NewChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		ch.Close()
		return nil, err
	}
	var c *Conn
	defer func() {
		if err != nil && c == nil {
			id.Close()
			ch.Close()
		}
	}()
	var src netip.AddrPort
	if a := d.LocalAddr; a.IsValid() || d.LocalPort != 0 {
		if !a.IsValid() {
			a = netip.IPv6Unspecified()
			if dst.Addr().Is4() {
				a = netip.IPv4Unspecified()
			}
		}
		src = netip.AddrPortFrom(a, d.LocalPort)
	}
	if d.TOS != 0 {
		if err = id.SetTOS(d.TOS); err != nil {
			return nil, err
		}
	}
	for step, retries := 0, 0; step < 2; {
		to := time.Duration(1000<<retries) * time.Millisecond
		want := rdmacm.EventAddrResolved
		if step == 0 {
			err = id.ResolveAddr(src, dst, to)
		} else {
			want = rdmacm.EventRouteResolved
			if len(d.Route) > 0 {
				err = id.SetOption(abi.RDMA_OPTION_IB, abi.RDMA_OPTION_IB_PATH, encodePaths(d.Route))
			} else {
				err = id.ResolveRoute(to)
			}
		}
		if err != nil {
			return nil, err
		}
		if _, err = await(ctx, ch, id, want); err != nil {
			if errors.Is(err, unix.ETIMEDOUT) && retries < 6 {
				retries++
				continue
			}
			return nil, err
		}
		step, retries = step+1, 0
	}
	c, err = setup(ch, id, &d.Options)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.release()
		}
	}()
	p := &rdmacm.ConnParam{PrivateData: c.localData(), ResponderResources: 0, InitiatorDepth: 0,
		FlowControl: 1, RetryCount: 7, RNRRetryCount: 7}
	if c.msgSend {
		// iWARP: librdmacm's rs_do_connect asks for initiator depth 1 there, its work-around for the RDMA READ
		// an iWARP connection may issue while it is set up.
		p.InitiatorDepth = 1
	}
	if err := id.Connect(p); err != nil {
		return nil, err
	}
	ev, err := await(ctx, ch, id, rdmacm.EventEstablished)
	if err != nil {
		return nil, err
	}
	cd, err := parseConnData(ev.PrivateData())
	if err != nil {
		return nil, fmt.Errorf("connection data of %v: %w", dst, err)
	}
	c.saveData(cd)
	c.tos = d.TOS
	c.local, c.remote = &Addr{id.LocalAddr()}, &Addr{id.RemoteAddr()}
	c.start()
	return c, nil
}

// pathDataLen is the size of struct ibv_path_data (the kernel's ib_path_rec_data): flags, reserved, the
// 64-byte path record.
const pathDataLen = 8 + 64

// encodePaths is RDMA_ROUTE's option value: an array of struct ibv_path_data (flags in host order).
func encodePaths(paths []rdmacm.PathRecord) []byte {
	b := make([]byte, len(paths)*pathDataLen)
	for i, p := range paths {
		e := b[i*pathDataLen:]
		binary.NativeEndian.PutUint32(e, p.Flags)
		copy(e[8:pathDataLen], p.Record[:])
	}
	return b
}

// loopbackError explains rdma_cm's ENODEV for a loopback destination.
type loopbackError struct{ err error }

func (e *loopbackError) Error() string {
	return "rdma_cm has no route over loopback (use the IP address of an RDMA device's netdev): " + e.err.Error()
}

func (e *loopbackError) Unwrap() error { return e.err }

// ListenConfig makes stream rsocket listeners.
type ListenConfig struct {
	Options
	// Backlog of the rdma_cm listen (default: the kernel's maximum).
	Backlog int
	// V6Only is IPV6_V6ONLY: a listener on "::" takes IPv6 connections only
	// (rdma_cm's AFONLY, set before binding, as librdmacm does for a
	// listening rsocket). Default false: dual-stack.
	V6Only bool
	// ErrorLog gets one line for each connection request the listener could
	// not set up (a *LimitError, a registration the kernel refused, a peer
	// speaking another protocol version, ...): the requester is rejected and
	// the listener goes on serving. nil: the log package's standard logger,
	// as net/http.Server's ErrorLog.
	ErrorLog *log.Logger
}

// Listen listens on address over network "rdma" (dual-stack when the host
// is empty or "::"), "rdma4" or "rdma6". Use an IP of an RDMA netdev, or
// the unspecified address for every device.
func Listen(network, address string) (net.Listener, error) {
	var lc ListenConfig
	return lc.Listen(context.Background(), network, address)
}

// Listener accepts stream rsockets. Requests are accepted in the background
// (as librdmacm's listen service does); Accept returns established connections.
type Listener struct {
	cfg   ListenConfig
	l     *rdmacm.Listener
	addr  *Addr
	conns chan *Conn
	stop  context.CancelFunc
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
	err   error

	closeOnce sync.Once
}

// Listen binds and listens; ctx bounds only the setup.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	ap, err := resolve(ctx, network, address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	if network == "rdma4" && ap.Addr() == netip.IPv6Unspecified() {
		ap = netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port())
	}
	rl, err := rdmacm.Listen(ap, &rdmacm.Options{Backlog: lc.Backlog, AFOnly: lc.V6Only})
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: &Addr{ap}, Err: err}
	}
	bctx, cancel := context.WithCancel(context.Background())
	l := &Listener{cfg: *lc, l: rl, addr: &Addr{rl.Addr()}, conns: make(chan *Conn), stop: cancel, done: make(chan struct{})}
	l.wg.Add(1)
	go l.loop(bctx)
	return l, nil
}

func (l *Listener) loop(ctx context.Context) {
	defer l.wg.Done()
	for {
		req, err := l.l.Accept(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.err = err
				l.closeDone()
			}
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c, err := l.accept(ctx, req)
			if err != nil {
				// The requester sees the reject or a timeout; the listener goes on.
				if ctx.Err() == nil {
					l.logf("rsocket: listener %v: request from %v: %v", l.addr, req.Remote, err)
				}
				return
			}
			select {
			case l.conns <- c:
			case <-ctx.Done():
				c.Close()
			}
		}()
	}
}

// accept is rs_accept: check the version, make the QP and buffers, post the
// receives, ACCEPT with the request's own parameters and our connection data.
func (l *Listener) accept(ctx context.Context, req *rdmacm.Request) (_ *Conn, err error) {
	id := req.ID()
	ch := id.Channel()
	cd, err := parseConnData(req.PrivateData)
	if err != nil {
		id.Reject(nil)
		id.Close()
		ch.Close()
		return nil, err
	}
	c, err := setup(ch, id, &l.cfg.Options)
	if err != nil {
		id.Reject(nil)
		id.Close()
		ch.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			c.release()
		}
	}()
	c.saveData(cd)
	c.holdSends = c.msgSend // the initiator sends first on iWARP (see holdSends)
	p := req.Param
	p.PrivateData = c.localData()
	if err := id.Accept(&p); err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := await(actx, ch, id, rdmacm.EventEstablished); err != nil {
		return nil, err
	}
	c.local, c.remote = &Addr{id.LocalAddr()}, &Addr{id.RemoteAddr()}
	c.start()
	return c, nil
}

// Accept waits for the next established connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		err := l.err
		if err == nil {
			err = net.ErrClosed
		}
		return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: l.addr, Err: err}
	}
}

func (l *Listener) logf(format string, args ...any) {
	if l.cfg.ErrorLog != nil {
		l.cfg.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func (l *Listener) closeDone() {
	l.once.Do(func() {
		close(l.done)
		l.stop()
	})
}

// Close stops listening and closes connections not yet accepted.
func (l *Listener) Close() error {
	l.closeDone()
	first := false
	l.closeOnce.Do(func() { first = true })
	if !first {
		return nil
	}
	l.wg.Wait()
	return l.l.Close()
}

// Addr is the bound address (with the port chosen for port 0).
func (l *Listener) Addr() net.Addr { return l.addr }
