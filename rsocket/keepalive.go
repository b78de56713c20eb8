package rsocket

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// defaultKeepAlive is what librdmacm's SO_KEEPALIVE uses when no
// TCP_KEEPIDLE was set: the system's TCP keepalive time, else 2 hours.
func defaultKeepAlive() time.Duration {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_keepalive_time"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return 7200 * time.Second
}

// SetKeepAlive turns keepalive probes on or off (librdmacm's SO_KEEPALIVE):
// on, a zero-length RDMA WRITE is posted every period (SetKeepAlivePeriod,
// Options.KeepAlive, else the system's net.ipv4.tcp_keepalive_time as
// librdmacm reads it, else 2 hours). The peer's device acknowledges it and
// the peer sees nothing. When the peer is gone (its QP destroyed, its host
// down) the connection fails: blocked and later Read and Write calls return
// an error matching unix.ETIMEDOUT once probes stayed unacknowledged (and
// no other send completed) for three periods, at least two periods and a
// second, or unix.EIO (and uverbs.WCRetryExcErr) if a probe's completion
// fails first. As librdmacm, probes go out every period whether or not the
// connection is busy, each only while a control slot is free.
func (c *Conn) SetKeepAlive(on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr("set keepalive", net.ErrClosed)
	}
	if on == (c.kaTimer != nil) {
		return nil
	}
	if !on {
		c.kaTimer.Stop()
		c.kaTimer = nil
		return nil
	}
	if c.kaPeriod <= 0 {
		c.kaPeriod = defaultKeepAlive()
	}
	c.startKeepAlive()
	return nil
}

// SetKeepAlivePeriod sets the keepalive period (librdmacm's TCP_KEEPIDLE,
// which counts whole seconds; any positive duration works here) and, with
// keepalive on, restarts the wait for the next probe. It does not turn
// probes on. A period ≤ 0 is unix.EINVAL.
func (c *Conn) SetKeepAlivePeriod(d time.Duration) error {
	if d <= 0 {
		return c.opErr("set keepalive period", fmt.Errorf("period %v: %w", d, unix.EINVAL))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr("set keepalive period", net.ErrClosed)
	}
	c.kaPeriod = d
	if c.kaTimer != nil {
		c.kaTimer.Reset(d)
	}
	return nil
}

// startKeepAlive arms the probe timer. c.mu is held. The callback knows its
// timer by generation (kaGen), so a stopped or replaced timer's late call
// does nothing.
func (c *Conn) startKeepAlive() {
	c.kaGen++
	gen := c.kaGen
	c.kaTimer = time.AfterFunc(c.kaPeriod, func() { c.keepAlive(gen) })
}

// keepAlive is tcp_svc_send_keepalive: with a free control slot on a
// connected rsocket, post a zero-length RDMA WRITE (no immediate) whose
// wr_id says CTRL KEEPALIVE.
func (c *Conn) keepAlive(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.tearing || c.kaTimer == nil || c.kaGen != gen {
		return // stopped, replaced or closing
	}
	// Completions are polled by the calls that wait (the CQ is armed only for them): poll here, or an
	// acknowledged probe of an idle connection would look unacknowledged.
	c.process()
	if c.kaOut > 0 && c.connected {
		if since := time.Since(c.kaSince); since >= kaAckTimeout(c.kaPeriod) {
			c.fail(fmt.Errorf("rsocket: keepalive: probe not acknowledged for %v: %w", since.Round(time.Millisecond), unix.ETIMEDOUT))
			c.wakeAll()
			return
		}
	}
	if c.connected && !c.holdSends && c.rx.ctrlSeqno != c.rx.ctrlMaxSeqno {
		c.rx.ctrlSeqno++
		m := msg(opCtrl, ctrlKeepalive)
		// librdmacm addresses the probe at address 0 with key 0, which a responder must not check for a
		// zero-length WRITE; the peer's target SGL array with its key is valid on any responder, and the
		// peer cannot tell the difference (no bytes, no receive).
		c.swr[0] = uverbs.SendWR{WRID: uint64(m), Opcode: uverbs.WRRDMAWrite, RemoteAddr: c.remoteSGL.Addr, RKey: c.remoteSGL.Key}
		if _, err := c.qp.PostSend(c.swr[:1]); err != nil {
			c.fail(fmt.Errorf("rsocket: keepalive probe: %w", err))
		} else {
			c.kaSent++
			if c.kaOut == 0 {
				c.kaSince = time.Now()
			}
			c.kaOut++
		}
	}
	c.kaTimer.Reset(c.kaPeriod)
}

// stopKeepAlive stops the probes. c.mu is held.
func (c *Conn) stopKeepAlive() {
	if c.kaTimer != nil {
		c.kaTimer.Stop()
		c.kaTimer = nil
	}
}

// kaAckTimeout is how long a probe may stay unacknowledged (with no other
// send completing either) before the peer counts as gone: three periods, at
// least two periods and a second. librdmacm relies
// on the probe's completion failing after the QP's transport retries, but
// rsockets connects with retry count 7, which rxe treats as "retry for
// ever" (measured: a probe to a vanished peer neither completes nor fails),
// so without this bound a dead peer would never surface.
func kaAckTimeout(period time.Duration) time.Duration {
	return 2*period + max(period, time.Second)
}

// kaAcked accounts for a probe's completion. c.mu is held.
func (c *Conn) kaAcked() {
	if c.kaOut > 0 {
		c.kaOut--
		c.kaSince = time.Now()
	}
}
