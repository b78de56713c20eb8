package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Options configure Dial, Listen and Request.Accept. A nil *Options means
// the defaults documented on each field.
type Options struct {
	// PortSpace: PortSpaceTCP (RC, the default), PortSpaceUDP (UD), or
	// PortSpaceIB with QPType.
	PortSpace PortSpace
	QPType    uverbs.QPType // only for PortSpaceIB; default RC
	// Source is Dial's source address (default: from the routing table).
	Source netip.AddrPort
	// ResolveTimeout bounds address and route resolution (default 2 s, as rdma_getaddrinfo users).
	ResolveTimeout time.Duration
	// Cap sizes the QP; CQs of MaxSendWR and MaxRecvWR entries are made
	// with it (default 16 send and 16 receive WRs, 1 SGE each).
	Cap    uverbs.QPCap
	SigAll bool
	// PrivateData goes with CONNECT (at most 56 bytes for RC, 180 for UD)
	// or ACCEPT (196 RC, 136 UD). Data computed in Setup (an address and
	// rkey of memory registered there) is set with Conn.SetPrivateData;
	// assigning this field inside Setup has no effect, as the options were
	// copied when Dial or Accept began.
	PrivateData []byte
	// ResponderResources and InitiatorDepth (default: MaxResources, the
	// device's maximum; on accept min(request, maximum)).
	ResponderResources, InitiatorDepth *uint8
	// RetryCount and RNRRetryCount (default 7 and 7, 7 meaning infinite RNR retries).
	RetryCount, RNRRetryCount *uint8
	// Setup runs once the QP exists and before CONNECT or ACCEPT is sent:
	// the place to register memory, post the first receives and set the
	// private data that describes them (Conn.SetPrivateData). An error
	// from it rejects a request (Accept) or abandons the dial.
	Setup func(c *Conn) error
	// Backlog for Listen (default 0 = the kernel's maximum).
	Backlog int
	// AFOnly makes Listen's id take only its own address family
	// (RDMA_OPTION_ID_AFONLY, set before binding: IPV6_V6ONLY): a listener on
	// "::" then takes no IPv4 connection. Default: dual-stack, as the kernel.
	AFOnly bool
	// DisconnectTimeout bounds how long Close waits for DISCONNECTED (default 3 s).
	DisconnectTimeout time.Duration
}

func (o *Options) orDefault() *Options {
	var d Options
	if o != nil {
		d = *o
	}
	if d.PortSpace == 0 {
		d.PortSpace = PortSpaceTCP
	}
	if d.QPType == 0 {
		d.QPType = uverbs.QPTypeRC
	}
	if d.ResolveTimeout == 0 {
		d.ResolveTimeout = 2 * time.Second
	}
	if d.DisconnectTimeout == 0 {
		d.DisconnectTimeout = 3 * time.Second
	}
	return &d
}

// refine is o (a Listener's options, defaults filled in) with every field
// that over sets replaced by over's: the rule of Request.Accept. The
// Listener-level fields (PortSpace, QPType, Source, Backlog) stay o's.
func (o *Options) refine(over *Options) *Options {
	d := *o
	if over.ResolveTimeout != 0 {
		d.ResolveTimeout = over.ResolveTimeout
	}
	pick := func(dst *uint32, v uint32) {
		if v != 0 {
			*dst = v
		}
	}
	pick(&d.Cap.MaxSendWR, over.Cap.MaxSendWR)
	pick(&d.Cap.MaxRecvWR, over.Cap.MaxRecvWR)
	pick(&d.Cap.MaxSendSGE, over.Cap.MaxSendSGE)
	pick(&d.Cap.MaxRecvSGE, over.Cap.MaxRecvSGE)
	pick(&d.Cap.MaxInlineData, over.Cap.MaxInlineData)
	d.SigAll = d.SigAll || over.SigAll
	if over.PrivateData != nil {
		d.PrivateData = over.PrivateData
	}
	for _, f := range []struct{ dst, src **uint8 }{{&d.ResponderResources, &over.ResponderResources},
		{&d.InitiatorDepth, &over.InitiatorDepth}, {&d.RetryCount, &over.RetryCount}, {&d.RNRRetryCount, &over.RNRRetryCount}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if over.Setup != nil {
		d.Setup = over.Setup
	}
	if over.DisconnectTimeout != 0 {
		d.DisconnectTimeout = over.DisconnectTimeout
	}
	return &d
}

func u8(p *uint8, def uint8) uint8 {
	if p == nil {
		return def
	}
	return *p
}

func (o *Options) connParam() *ConnParam {
	return &ConnParam{PrivateData: o.PrivateData, ResponderResources: u8(o.ResponderResources, MaxResources),
		InitiatorDepth: u8(o.InitiatorDepth, MaxResources), RetryCount: u8(o.RetryCount, 7),
		RNRRetryCount: u8(o.RNRRetryCount, 7)}
}

// EventError is the error of a connection attempt that ended with an event
// other than the expected one: REJECTED, UNREACHABLE, ADDR_ERROR, ... It
// unwraps to an errno: REJECTED -> ECONNREFUSED, UNREACHABLE -> EHOSTUNREACH
// (or ETIMEDOUT), *_ERROR -> the negative status as an errno.
type EventError struct {
	Event *Event
}

func (e *EventError) Error() string {
	return fmt.Sprintf("%v, status %d", e.Event.Type, e.Event.Status)
}

func (e *EventError) Unwrap() error {
	switch e.Event.Type {
	case EventRejected:
		return unix.ECONNREFUSED
	case EventUnreachable:
		if e.Event.Status == -int32(unix.ETIMEDOUT) {
			return unix.ETIMEDOUT
		}
		return unix.EHOSTUNREACH
	case EventDisconnected:
		return unix.ECONNRESET
	case EventDeviceRemoval:
		return unix.ENODEV
	}
	if e.Event.Status < 0 {
		return unix.Errno(-e.Event.Status)
	}
	return unix.EPROTO
}

// Timeout reports whether the event says the CM timed out (ADDR_ERROR,
// ROUTE_ERROR or UNREACHABLE with status ETIMEDOUT).
func (e *EventError) Timeout() bool { return e.Unwrap() == unix.ETIMEDOUT }

// PrivateData is the peer's private data (a reject's reason, for instance).
func (e *EventError) PrivateData() []byte { return e.Event.PrivateData() }

// await waits for the id's next event and requires it to be want.
func await(ctx context.Context, id *ID, op string, want EventType) (*Event, error) {
	for {
		ev, err := id.ch.GetEvent(ctx)
		if err != nil {
			return nil, opErr(op, id.kid, err)
		}
		if ev.ID != id {
			continue // an id of this private channel that is already gone
		}
		if ev.Type != want {
			return ev, opErr(op, id.kid, &EventError{Event: ev})
		}
		return ev, nil
	}
}

// Conn is a connected (RC) or resolved (UD) QP made by Dial or Request.Accept,
// with its own event channel, id, device context, PD, CQs and QP; Close
// releases all of them.
type Conn struct {
	ch   *Channel
	id   *ID
	opts *Options

	priv   []byte
	ud     UDParam
	remote netip.AddrPort

	// send is the private data CONNECT or ACCEPT will carry (Options.PrivateData
	// or what Setup gave SetPrivateData); sendMax its limit; sent: it has gone.
	send    []byte
	sendMax int
	sent    bool

	mu           sync.Mutex
	disconnected bool
	closed       bool
}

// ID is the connection's rdma_cm id.
func (c *Conn) ID() *ID { return c.id }

// QP, SendCQ, RecvCQ and CompChannel are the connection's (the CQs share the channel).
func (c *Conn) QP() *uverbs.QP                   { return c.id.QP() }
func (c *Conn) SendCQ() *uverbs.CQ               { return c.id.SendCQ() }
func (c *Conn) RecvCQ() *uverbs.CQ               { return c.id.RecvCQ() }
func (c *Conn) CompChannel() *uverbs.CompChannel { return c.id.CompChannel() }

// PD is the protection domain of the QP (register memory with it). Close
// what you make on it (MRs, MWs, AHs) before Conn.Close, which deallocates
// it: the kernel refuses a PD still in use (EBUSY), and Close then reports
// it and leaves the device context to the process's exit.
func (c *Conn) PD() *uverbs.PD { _, pd, _ := c.id.Device(); return pd }

// Context is the device context.
func (c *Conn) Context() *uverbs.Context { ctx, _, _ := c.id.Device(); return ctx }

// SetPrivateData replaces, for this connection, the private data its CONNECT
// (Dial) or ACCEPT (Request.Accept) carries: call it from Options.Setup,
// where the connection's PD exists, to send the address and rkey of memory
// registered there (rdma-core's rdma_accept/rdma_connect with
// conn_param.private_data). b is copied. Longer than the message can carry
// (56 bytes for an RC CONNECT, 196 for an RC ACCEPT, 180 and 136 for UD) is
// an error wrapping ErrPrivateDataTooLong, before anything is sent; after
// CONNECT or ACCEPT has gone it is an error too.
func (c *Conn) SetPrivateData(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent {
		return opErr("set private data", c.id.kid, errState("CONNECT or ACCEPT already sent"))
	}
	if len(b) > c.sendMax {
		return opErr("set private data", c.id.kid, privErr(len(b), c.sendMax))
	}
	c.send = append([]byte(nil), b...)
	return nil
}

// connParam is the CONNECT or ACCEPT parameters with the private data set for
// this connection; it marks the data sent.
func (c *Conn) connParam() *ConnParam {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.opts.connParam()
	p.PrivateData = c.send
	c.sent = true
	return p
}

// PrivateData is what the peer sent: the accept's data for Dial (as the CM
// delivers it, zero-padded to the message's field size), the request's for Accept.
func (c *Conn) PrivateData() []byte { return c.priv }

// RemoteAddr and LocalAddr are the connection's IP addresses.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.id.RemoteAddr() }
func (c *Conn) LocalAddr() netip.AddrPort  { return c.id.LocalAddr() }

// UD is the remote side of a UD connection. After Dial: the server's QPN,
// QKey and address (make an AH from AHAttr). After Request.Accept: the
// client's QPN and QKey only; its address comes with its first message (the
// GRH in front of the receive buffer), as with ibv_create_ah_from_wc. Zero for RC.
func (c *Conn) UD() UDParam { return c.ud }

// WaitEvent waits for the connection's next CM event (DISCONNECTED when the
// peer disconnects). Close must not run concurrently with it.
func (c *Conn) WaitEvent(ctx context.Context) (*Event, error) {
	ev, err := c.ch.GetEvent(ctx)
	if err == nil && ev.Type == EventDisconnected {
		c.mu.Lock()
		c.disconnected = true
		c.mu.Unlock()
	}
	return ev, err
}

// Close disconnects (RC: QP to ERR, DISCONNECT, then waits up to
// Options.DisconnectTimeout for DISCONNECTED), destroys the id, QP and CQs
// and closes the channel and device context. Close the MRs, MWs and AHs made
// on PD first: with one still open, deallocating the PD fails with EBUSY
// ("dealloc PD ...: device or resource busy"), which Close returns (with a
// hint) after doing the rest.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	disc := c.disconnected
	c.mu.Unlock()
	var errs []error
	if c.id.QPType() != uverbs.QPTypeUD {
		if err := c.id.Disconnect(); err != nil && !disc {
			// EINVAL: the connection is already gone (peer's DREQ raced us).
			if !errors.Is(err, unix.EINVAL) {
				errs = append(errs, err)
			}
			disc = true
		}
		// The peer answers our DREQ with a DREP when it disconnects too; a
		// peer that does not (yet) leaves the kernel to retry and time out
		// the DREQ after the id is gone, so the bound is not an error.
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.DisconnectTimeout)
		for !disc {
			ev, err := c.ch.GetEvent(ctx)
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					errs = append(errs, fmt.Errorf("waiting for DISCONNECTED: %w", err))
				}
				break
			}
			disc = ev.ID == c.id && ev.Type == EventDisconnected
		}
		cancel()
	}
	errs = append(errs, c.id.Close(), c.ch.Close())
	err := errors.Join(errs...)
	if errors.Is(err, unix.EBUSY) {
		err = fmt.Errorf("%w (close the MRs, MWs and AHs made on Conn.PD before Conn.Close)", err)
	}
	return err
}

// Dial connects to addr (RC by default, UD with PortSpaceUDP) and returns
// the connection with its QP in RTS. For UD, "connected" means the remote
// QPN/QKey/address are known (Conn.UD).
func Dial(ctx context.Context, addr netip.AddrPort, opts *Options) (c *Conn, err error) {
	o := opts.orDefault()
	if max := map[bool]int{false: MaxConnectPrivateData, true: MaxUDConnectPrivateData}[o.PortSpace == PortSpaceUDP ||
		o.PortSpace == PortSpaceIPoIB || (o.PortSpace == PortSpaceIB && o.QPType == uverbs.QPTypeUD)]; len(o.PrivateData) > max {
		return nil, &Error{Op: "dial " + addr.String(), Err: privErr(len(o.PrivateData), max)}
	}
	ch, err := NewChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(o.PortSpace, o.QPType)
	if err != nil {
		ch.Close()
		return nil, err
	}
	c = &Conn{ch: ch, id: id, opts: o, send: o.PrivateData, sendMax: id.maxConnectData()}
	defer func() {
		if err != nil {
			id.Close()
			ch.Close()
			c = nil
		}
	}()
	if err := id.ResolveAddr(o.Source, addr, o.ResolveTimeout); err != nil {
		return nil, err
	}
	if _, err := await(ctx, id, "resolve addr "+addr.String(), EventAddrResolved); err != nil {
		return nil, err
	}
	if err := id.ResolveRoute(o.ResolveTimeout); err != nil {
		return nil, err
	}
	if _, err := await(ctx, id, "resolve route "+addr.String(), EventRouteResolved); err != nil {
		return nil, err
	}
	if err := c.makeQP("dial"); err != nil {
		return nil, err
	}
	if err := id.Connect(c.connParam()); err != nil {
		return nil, err
	}
	ev, err := await(ctx, id, "connect "+addr.String(), EventEstablished)
	if err != nil {
		return nil, err
	}
	c.priv, c.ud = ev.PrivateData(), ev.UD
	return c, nil
}

// Listener waits for connection requests on an address.
type Listener struct {
	ch   *Channel
	id   *ID
	opts *Options
}

// Listen binds addr (0.0.0.0 or :: with a port listens on every device)
// and listens on it. opts are also every Request.Accept's options, which
// that call's own options refine field by field (see Request.Accept).
func Listen(addr netip.AddrPort, opts *Options) (*Listener, error) {
	o := opts.orDefault()
	ch, err := NewChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(o.PortSpace, o.QPType)
	if err == nil && o.AFOnly {
		err = id.SetAFOnly(true)
	}
	if err == nil {
		err = id.Bind(addr)
		if err == nil {
			err = id.Listen(o.Backlog)
		}
	}
	if err != nil {
		ch.Close()
		return nil, err
	}
	return &Listener{ch: ch, id: id, opts: o}, nil
}

// Addr is the bound address (with the port the kernel chose for port 0).
func (l *Listener) Addr() netip.AddrPort { return l.id.LocalAddr() }

// ID is the listening id.
func (l *Listener) ID() *ID { return l.id }

// Close stops listening; requests not yet accepted are refused by the kernel.
func (l *Listener) Close() error {
	return errors.Join(l.id.Close(), l.ch.Close())
}

// Request is an incoming connection: Accept or Reject it.
type Request struct {
	l     *Listener
	ch    *Channel
	id    *ID
	Param ConnParam // the requester's parameters (RC) as the passive side sees them
	UD    UDParam   // the requester's QPN/QKey (UD)
	// PrivateData is the requester's (zero-padded to 56 bytes for RC, 180 for UD).
	PrivateData []byte
	// Remote is the requester's address.
	Remote netip.AddrPort
	done   bool
}

// Accept waits for the next connection request.
func (l *Listener) Accept(ctx context.Context) (*Request, error) {
	for {
		ev, err := l.ch.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if ev.Type != EventConnectRequest {
			continue
		}
		ch, err := NewChannel()
		if err != nil {
			ev.ID.Reject(nil)
			ev.ID.Close()
			return nil, err
		}
		if err := ev.ID.Migrate(ch); err != nil {
			ev.ID.Reject(nil)
			ev.ID.Close()
			ch.Close()
			return nil, err
		}
		return &Request{l: l, ch: ch, id: ev.ID, Param: ev.Conn, UD: ev.UD, PrivateData: ev.PrivateData(),
			Remote: ev.ID.RemoteAddr()}, nil
	}
}

// ID is the request's id.
func (r *Request) ID() *ID { return r.id }

// Reject refuses the request with private data (at most 148 bytes) and releases it.
func (r *Request) Reject(privateData []byte) error {
	if r.done {
		return opErr("reject", r.id.kid, errState("request already answered"))
	}
	if err := r.id.Reject(privateData); err != nil {
		return err // nothing sent: the caller may still accept
	}
	r.done = true
	return errors.Join(r.id.Close(), r.ch.Close())
}

// makeQP creates the QP of c's id with c's options and runs their Setup; a Setup error is wrapped as
// "<side> setup" (side: "dial" or "accept").
func (c *Conn) makeQP(side string) error {
	o := c.opts
	if _, err := c.id.CreateQP(QPInitAttr{Cap: o.Cap, SigAll: o.SigAll}); err != nil {
		return err
	}
	if o.Setup != nil {
		if err := o.Setup(c); err != nil {
			return opErr(side+" setup", c.id.kid, err)
		}
	}
	return nil
}

// Accept makes the QP, runs opts.Setup, accepts and (RC) waits for
// ESTABLISHED. opts refines the Listener's options for this connection: each
// field of opts that is set (non-zero; for Cap, each of its counts; SigAll
// only turns signalling on) replaces the Listener's, the rest are the
// Listener's. PortSpace, QPType, Source and Backlog belong to the Listener and
// are ignored here. opts == nil takes the Listener's options as they are.
func (r *Request) Accept(ctx context.Context, opts *Options) (c *Conn, err error) {
	if r.done {
		return nil, opErr("accept", r.id.kid, errState("request already answered"))
	}
	o := r.l.opts
	if opts != nil {
		o = o.refine(opts)
	}
	id := r.id
	if len(o.PrivateData) > id.maxAcceptData() {
		return nil, opErr("accept", id.kid, privErr(len(o.PrivateData), id.maxAcceptData()))
	}
	r.done = true
	c = &Conn{ch: r.ch, id: id, opts: o, priv: r.PrivateData, ud: r.UD, send: o.PrivateData, sendMax: id.maxAcceptData()}
	defer func() {
		if err != nil {
			id.Reject(nil)
			id.Close()
			r.ch.Close()
			c = nil
		}
	}()
	if err := c.makeQP("accept"); err != nil {
		return nil, err
	}
	if err := id.Accept(c.connParam()); err != nil {
		return nil, err
	}
	if id.QPType() == uverbs.QPTypeUD {
		return c, nil
	}
	if _, err := await(ctx, id, "accept", EventEstablished); err != nil {
		return nil, err
	}
	return c, nil
}
