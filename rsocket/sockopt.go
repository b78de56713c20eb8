package rsocket

import (
	"fmt"
	"net"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"golang.org/x/sys/unix"
)

// SocketOptions are a connection's options in effect: what librdmacm's
// rgetsockopt reports for a stream rsocket (Conn.SocketOptions).
type SocketOptions struct {
	// Options are the values the connection runs with, after librdmacm's
	// clamping and the device's limits, in the spelling Options takes (so
	// that a Dialer or ListenConfig given them makes a connection alike):
	//
	//   - SendBuffer: SO_SNDBUF, the send ring's size in bytes;
	//   - RecvBuffer: SO_RCVBUF, the receive buffer's size in bytes;
	//   - SQSize, RQSize: RDMA_SQSIZE, RDMA_RQSIZE, the queue depths;
	//   - InlineSize: RDMA_INLINE, the QP's max_inline_data as the device
	//     granted it (librdmacm reads it back after creating the QP too);
	//     -1 where that is 0, Options' spelling of "nothing inline";
	//   - IOMapSize: RDMA_IOMAPSIZE, the entries of our iomap table;
	//   - KeepAlive: the probe period while probes are on (SO_KEEPALIVE is
	//     KeepAlive > 0), 0 while they are off;
	//   - PollTime: the polling time (librdmacm's polling_time, process-wide
	//     there);
	//   - NoDelay: TCP_NODELAY as set (Options.NoDelay, Conn.SetNoDelay).
	Options
	// KeepAlivePeriod is TCP_KEEPIDLE: the period set (Options.KeepAlive,
	// SetKeepAlivePeriod, or the system's when SetKeepAlive turned probes on
	// without one), whether or not probes are on; 0 when none was set.
	KeepAlivePeriod time.Duration
	// Linger is SO_LINGER as SetLinger stored it, -1 when it was never set
	// (Go's default, net.TCPConn's "off"). Like librdmacm, rsockets does not
	// act on it: Close always sends the DISCONNECT and waits (boundedly) for
	// outstanding sends. librdmacm's rgetsockopt reports l_onoff 1 until
	// SO_LINGER turns it off, and l_linger always 0.
	Linger int
	// TOS is IP_TOS as set: Dialer.TOS for a dialed connection, 0 for an
	// accepted one (as librdmacm reports an option not set; its path's
	// traffic class is the dialer's, which Route shows).
	TOS int
	// MaxSegment is TCP_MAXSEG as librdmacm computes it: the path MTU in
	// bytes (1 << (7 + the path record's MTU code)), 2048 where the
	// connection has no path record (iWARP).
	MaxSegment int
	// Established is TCP_INFO's tcpi_state, the one field of it librdmacm
	// fills besides tcpi_snd_cwnd (which is SQSize): true while the
	// connection is up (TCP_ESTABLISHED), false once the peer disconnected,
	// the connection failed or was closed (TCP_CLOSE).
	Established bool
}

// Socket options librdmacm accepts and only stores, which goverbs does not
// offer: SO_OOBINLINE (rsockets carry no out-of-band data), SO_BROADCAST
// (a no-op for a stream socket in librdmacm too), TCP_CONGESTION,
// TCP_KEEPCNT and TCP_KEEPINTVL (librdmacm reports 1, "not applicable":
// a keepalive probe is an RDMA WRITE the peer's device acknowledges, with
// no count or interval of retries), and SO_REUSEADDR (see ListenConfig).

// SocketOptions returns the options in effect (rgetsockopt's SOL_SOCKET,
// IPPROTO_TCP and SOL_RDMA options of a stream rsocket; SO_ERROR is
// SocketError). After Close it still returns the last values.
func (c *Conn) SocketOptions() SocketOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	inline := c.inline
	if inline == 0 {
		inline = -1
	}
	o := SocketOptions{Options: Options{SendBuffer: c.sbufSize, RecvBuffer: len(c.rb), InlineSize: inline,
		SQSize: int(c.sqSize), RQSize: int(c.rqSize), IOMapSize: c.iomapSize, PollTime: c.pollTime,
		NoDelay: c.noDelay}, KeepAlivePeriod: c.kaPeriod, Linger: c.linger, TOS: int(c.tos),
		MaxSegment: c.maxSegmentLocked(), Established: c.connected && !c.closed && c.err == nil}
	if c.kaTimer != nil {
		o.KeepAlive = c.kaPeriod
	}
	return o
}

// maxSegmentLocked is TCP_MAXSEG (SocketOptions.MaxSegment), read from the
// first path record once and kept (so that it is still there after Close).
func (c *Conn) maxSegmentLocked() int {
	if c.maxSeg == 0 && !c.closed && c.id != nil {
		c.maxSeg = 2048
		if p, err := c.id.QueryPath(); err == nil && len(p) > 0 {
			c.maxSeg = 1 << (7 + p[0].Record[pathMTUByte]&0x3f)
		}
	}
	if c.maxSeg == 0 {
		return 2048
	}
	return c.maxSeg
}

// pathMTUByte is the byte of an IB SA path record (wire format) whose low
// six bits are the MTU code (1: 256 bytes ... 5: 4096).
const pathMTUByte = 54

// SocketError is SO_ERROR: the error that failed the connection (the peer
// reset it: unix.ECONNRESET; a send or receive completion failed: unix.EIO;
// the peer broke the protocol: ErrProtocol; keepalive found the peer gone:
// unix.ETIMEDOUT), nil while it has none, after an orderly shutdown
// included. Unlike SO_ERROR, reading it does not clear it: the connection
// stays failed and Read and Write go on returning it.
func (c *Conn) SocketError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// SetNoDelay sets TCP_NODELAY. As librdmacm, it is stored and reported
// (SocketOptions) and changes nothing else: rsockets sends every Write at
// once (no Nagle algorithm), so the connection behaves as with TCP_NODELAY
// on, whatever the value.
func (c *Conn) SetNoDelay(noDelay bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr("set nodelay", net.ErrClosed)
	}
	c.noDelay = noDelay
	return nil
}

// SetLinger sets SO_LINGER, with net.TCPConn's argument: sec < 0 off, sec
// ≥ 0 on with that many seconds. As librdmacm, it is stored and reported
// (SocketOptions.Linger) and Close does not act on it: rclose ignores
// SO_LINGER, and so does Close, which always sends the rsockets DISCONNECT
// and waits up to 2 s for outstanding sends.
func (c *Conn) SetLinger(sec int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr("set linger", net.ErrClosed)
	}
	c.linger = max(sec, -1)
	return nil
}

// SetReadBuffer is SO_RCVBUF on a connection, which it cannot change: the
// receive buffer is registered and published to the peer when the
// connection is made (librdmacm takes SO_RCVBUF only before that, and
// ignores it after). It returns an *OptionError (unix.EINVAL); set
// Options.RecvBuffer instead.
func (c *Conn) SetReadBuffer(bytes int) error {
	return c.opErr("set", &OptionError{Option: "SO_RCVBUF", Field: "RecvBuffer", Err: unix.EINVAL})
}

// SetWriteBuffer is SO_SNDBUF on a connection, which it cannot change (as
// SetReadBuffer): it returns an *OptionError (unix.EINVAL); set
// Options.SendBuffer instead.
func (c *Conn) SetWriteBuffer(bytes int) error {
	return c.opErr("set", &OptionError{Option: "SO_SNDBUF", Field: "SendBuffer", Err: unix.EINVAL})
}

// OptionError is an option a connection cannot take once it exists: the C
// option, the Options field to set it with when the connection is made, and
// Err (unix.EINVAL, librdmacm's errno for an RDMA option set after connect).
type OptionError struct {
	Option string // the C option: "SO_RCVBUF", "SO_SNDBUF"
	Field  string // the Options field that sets it: "RecvBuffer", "SendBuffer"
	Err    error
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("rsocket: %s is fixed when the connection is made (set Options.%s): %v", e.Option, e.Field, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// Route is RDMA_ROUTE as rgetsockopt reads it: the connection's path
// records as rdma_cm resolved them (QUERY PATH; on RoCE one path, built from
// the resolved addresses; on iWARP none), each flagged (IB_PATH_*) and in
// the IB SA wire format. A Dialer's Route takes them to connect over the
// same path.
func (c *Conn) Route() ([]rdmacm.PathRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, c.opErr("route", net.ErrClosed)
	}
	p, err := c.id.QueryPath()
	return p, c.opErr("route", err)
}
