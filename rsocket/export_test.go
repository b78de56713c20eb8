package rsocket

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/goverbs/goverbs/uverbs"
)

// locked is fn's result on nc's Conn, with c.mu held.
func locked[T any](nc net.Conn, fn func(c *Conn) T) T {
	c := nc.(*Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	return fn(c)
}

// DebugState describes a Conn's bookkeeping (tests only).
func DebugState(nc net.Conn) string {
	return locked(nc, func(c *Conn) string {
		return fmt.Sprintf("head %d tail %d unread %d rseqNo %d rseqComp %d ctrl %d/%d conn %v r %v w %v err %v",
			c.rx.head, c.rx.tail, c.rx.unread, c.rx.rseqNo, c.rx.rseqComp, c.rx.ctrlSeqno, c.rx.ctrlMaxSeqno,
			c.connected, c.readable, c.writable, c.err)
	})
}

// DebugErr is a Conn's sticky error (tests only).
func DebugErr(nc net.Conn) error {
	return locked(nc, func(c *Conn) error { return c.err })
}

// DebugProcess polls c's CQ as a Read or Write does, without reading or
// writing (tests only): completions are processed only in calls (see Conn.arm).
func DebugProcess(nc net.Conn) {
	locked(nc, func(c *Conn) any {
		if !c.closed && !c.tearing {
			c.process()
		}
		return nil
	})
}

// DebugKeepAlives is how many keepalive probes c posted (tests only).
func DebugKeepAlives(nc net.Conn) int {
	return locked(nc, func(c *Conn) int { return c.kaSent })
}

// DebugVanish makes c a peer that is gone without a word: its QP moves to
// the error state (it drops whatever arrives, acknowledges nothing) and it
// sends nothing, not even the CM's DREQ, until Close (tests only).
func DebugVanish(nc net.Conn) {
	locked(nc, func(c *Conn) any { c.fail(errVanished); return nil })
}

var errVanished = errors.New("test: vanished")

// DebugQPAttr is the QP's state, local ACK timeout and retry counts (tests only).
func DebugQPAttr(nc net.Conn) string {
	return locked(nc, func(c *Conn) string {
		a, err := c.qp.Query(uverbs.QPAttrState | uverbs.QPAttrTimeout | uverbs.QPAttrRetryCnt | uverbs.QPAttrRNRRetry)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("state %v timeout %d retry %d rnr_retry %d", a.State, a.Timeout, a.RetryCnt, a.RNRRetry)
	})
}

// DebugProbe posts one keepalive probe now, whether or not keepalive is on,
// and reports whether it was posted (tests only).
func DebugProbe(nc net.Conn) bool {
	c := nc.(*Conn)
	c.mu.Lock()
	before := c.kaSent
	if c.kaTimer == nil {
		c.kaPeriod = time.Hour
		c.startKeepAlive()
	}
	gen := c.kaGen
	c.mu.Unlock()
	c.keepAlive(gen)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kaSent > before
}

// DebugProbesOut is how many probes are posted and not completed (tests only).
func DebugProbesOut(nc net.Conn) int {
	return locked(nc, func(c *Conn) int { return c.kaOut })
}
