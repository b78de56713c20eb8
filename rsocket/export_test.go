package rsocket

import (
	"errors"
	"fmt"
	"net"
)

// DebugState describes a Conn's bookkeeping (tests only).
func DebugState(nc net.Conn) string {
	c := nc.(*Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("head %d tail %d unread %d rseqNo %d rseqComp %d ctrl %d/%d conn %v r %v w %v err %v",
		c.rx.head, c.rx.tail, c.rx.unread, c.rx.rseqNo, c.rx.rseqComp, c.rx.ctrlSeqno, c.rx.ctrlMaxSeqno,
		c.connected, c.readable, c.writable, c.err)
}

// DebugErr is a Conn's sticky error (tests only).
func DebugErr(nc net.Conn) error {
	c := nc.(*Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// DebugKeepAlives is how many keepalive probes c posted (tests only).
func DebugKeepAlives(nc net.Conn) int {
	c := nc.(*Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kaSent
}

// DebugVanish makes c a peer that is gone without a word: its QP moves to
// the error state (it drops whatever arrives, acknowledges nothing) and it
// sends nothing, not even the CM's DREQ, until Close (tests only).
func DebugVanish(nc net.Conn) {
	c := nc.(*Conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail(errVanished)
}

var errVanished = errors.New("test: vanished")
