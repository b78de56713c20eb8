package rsocket

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Conn is a stream rsocket: a net.Conn over an RC QP that speaks librdmacm's
// rsockets protocol. Read and Write may run concurrently (one reader and one
// writer; further callers queue); Close wakes both.
type Conn struct {
	ch *rdmacm.Channel
	id *rdmacm.ID
	qp *uverbs.QP
	cq *uverbs.CQ
	cc *uverbs.CompChannel

	pd               *uverbs.PD
	sbuf, rbuf, tbuf *uverbs.Buffer
	smr, rmr, tmr    *uverbs.MR
	sb, rb, tl       []byte // send ring (+ control slots), receive buffer, target SGL array (+ iomap table)
	iomapSize        int    // entries of our iomap table (after the target SGL array in tl), written by the peer

	sqSize, rqSize uint16
	inline         int
	sbufSize       int
	pollTime       time.Duration

	// Message-send mode (librdmacm's RS_OPT_MSG_SEND, chosen on iWARP devices, which have no immediate data):
	// a message is a 4-byte inline SEND of its word, after the RDMA WRITE of its bytes when it has any. Each
	// receive has a 4-byte slot of rmsg (after the receive buffer, in its registration) for the word.
	msgSend bool
	msgOff  int          // the message word's place in sb (after the control slots), copied by the inline SEND
	rmsg    []byte       // the receive slots: rqSize words
	rsge    []uverbs.SGE // one SGE per receive slot
	rnext   int          // the slot the next posted receive gets (rbuf_msg_index)
	// holdSends: an iWARP connection we accepted sends nothing (no credits, data, control message or probe)
	// until the initiator's first message arrived. MPA lets the responder send only after the initiator's
	// first FPDU (RFC 6581's enhanced connection setup, which siw does not use, is what relaxes that), and
	// siw's initiator enforces it by accident: reading the MPA reply's private data it asks for 4 bytes more,
	// and when an FPDU sent right behind the reply is already there it fails the connection
	// (siw_recv_mpa_rr: EPROTO; the initiator's CONNECT_ERROR with EINVAL), which goverbs' listener, quick to
	// send its first credits, met in 3 of nettest's 66 connections in one lab run (6.12). librdmacm has no such
	// wait; an initiator always sends first here (its first credits, on any call).
	holdSends bool

	local, remote *Addr

	mu sync.Mutex // everything below, the QP and the CQ
	rx rx

	sqeAvail  int
	sbufAvail int
	soff      int // next free byte of the send ring
	sseqNo    uint16
	targetSGE int
	remoteSGL sge
	remoteIOM sge         // the peer's iomap table: addr, key, Length = number of entries
	maps      []ioMapping // our mappings, by their index in the peer's iomap table
	iomb      [iomapLen]byte
	peerBE    bool // the peer is big-endian: what we write into its memory is big-endian

	noDelay  bool          // TCP_NODELAY as set (stored, as librdmacm: rsockets never delays a send)
	linger   int           // SO_LINGER as set (stored, as librdmacm); -1: not set
	tos      uint8         // IP_TOS as the Dialer set it
	maxSeg   int           // TCP_MAXSEG from the path MTU, once read (0: not yet)
	kaPeriod time.Duration // keepalive period (0: off)
	kaTimer  *time.Timer
	kaGen    uint64    // which timer is current (see startKeepAlive)
	kaSent   int       // keepalive probes posted (tests)
	kaOut    int       // probes posted and not completed
	kaSince  time.Time // when the oldest outstanding probe was posted (or the last one completed)

	connected, readable, writable bool
	err                           error // sticky connection error
	closed                        bool
	tearing                       bool // Close is destroying the QP and CQ: the CQ waiter must not touch them
	armed                         bool // the CQ is armed: its next completion raises an event (rs cq_armed)

	wc   [32]uverbs.WC
	swr  [2]uverbs.SendWR // a message; in message-send mode a WRITE and its SEND
	ssge [3]uverbs.SGE    // the WRITE's (the send ring, split over its end), the message word's
	rwr  []uverbs.RecvWR

	rmu, wmu     sync.Mutex // one reader, one writer at a time
	rwake, wwake chan struct{}
	cwake        chan struct{}

	// The CQ waiter: the one caller that sleeps reading the completion channel itself (librdmacm's
	// rs_get_cq_event under cq_wait_lock), in the kernel, where the others sleep on their wake channels.
	// cqWaiting is the role; the channel's Wake interrupts its wait (a deadline changed, Close, the CM loop,
	// keepalive). ccDeadline is the deadline last set on the channel, touched only by the role's holder.
	cqWaiting  atomic.Bool
	ccDeadline int64
	done       chan struct{}
	rdl, wdl   atomic.Int64 // deadlines (UnixNano, 0 = none)
	rtimer     *time.Timer
	wtimer     *time.Timer
	ctimer     *time.Timer // waitLocked's (Close holds the reader's and writer's locks)

	readReady, writeReady func() bool // for spin, made once (no allocation per call)

	stop     context.CancelFunc
	workers  sync.WaitGroup
	closeErr error
	once     sync.Once
}

// Addr is the address of an rsocket endpoint (network "rdma").
type Addr struct {
	netip.AddrPort
}

// Network is "rdma".
func (a *Addr) Network() string { return "rdma" }

var _ net.Conn = (*Conn)(nil)

func newWake() chan struct{} { return make(chan struct{}, 1) }

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// setup makes the CQ, QP and buffers of a new connection and posts the receives
// (rs_create_ep). id must be resolved (active) or a connection request (passive).
// The sizes are checked against the protocol, the device and the memory the
// process can pin before anything is allocated (*LimitError). On any error
// everything made so far is released and the id and channel are left to the
// caller.
func setup(ch *rdmacm.Channel, id *rdmacm.ID, o *Options) (*Conn, error) {
	c := &Conn{ch: ch, id: id, pollTime: o.pollTime(),
		rwake: newWake(), wwake: newWake(), cwake: newWake(), done: make(chan struct{}),
		rtimer: stoppedTimer(), wtimer: stoppedTimer(), ctimer: stoppedTimer(), kaPeriod: max(o.KeepAlive, 0),
		noDelay: o.NoDelay, linger: -1}
	c.readReady = func() bool { return c.rx.haveData() || !c.readable || c.err != nil }
	c.writeReady = func() bool { return c.canSend() || !c.writable || c.err != nil }
	if err := c.create(o); err != nil {
		c.releaseLocal()
		return nil, err
	}
	return c, nil
}

// create is setup's work; what it made is released by releaseLocal when it fails.
func (c *Conn) create(o *Options) error {
	id := c.id
	ctx, pd, err := id.Device()
	if err != nil {
		return err
	}
	attr, err := id.DeviceAttr()
	if err != nil {
		return err
	}
	s, err := plan(o, ctx.Name(), attr)
	if err != nil {
		return err
	}
	if ctx.Device().NodeType == netlinkrdma.NodeTypeRNIC { // libibverbs: an RNIC's transport is IBV_TRANSPORT_IWARP
		if err := s.setMsgSend(ctx.Name(), attr); err != nil {
			return err
		}
	}
	if err := s.checkMemory(ctx.Name()); err != nil {
		return err
	}
	c.sqSize, c.rqSize, c.sbufSize = s.sq, s.rq, s.sbuf
	c.pd = pd
	if c.cc, err = ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: uverbs.WaitEpoll}); err != nil {
		return err
	}
	if c.cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: int(c.sqSize) + int(c.rqSize), Channel: c.cc}); err != nil {
		return err
	}
	if c.qp, err = id.CreateQP(rdmacm.QPInitAttr{SendCQ: c.cq, RecvCQ: c.cq, SigAll: true, Cap: uverbs.QPCap{
		MaxSendWR: uint32(c.sqSize), MaxRecvWR: uint32(c.rqSize), MaxSendSGE: 2, MaxRecvSGE: 1,
		MaxInlineData: uint32(s.inline)}}); err != nil {
		return err
	}
	c.inline = int(c.qp.Cap().MaxInlineData)
	c.msgSend = s.msgSend
	if c.msgSend && c.inline < msgWordLen {
		// librdmacm's rs_create_ep: message-send mode needs the word inline.
		return fmt.Errorf("rsocket: %s: QP's max_inline_data %d, message-send mode (iWARP) needs %d: %w",
			ctx.Name(), c.inline, msgWordLen, unix.ENOTSUP)
	}
	// The send ring, then the four 16-byte control slots (SGEs sent by credit messages), then in
	// message-send mode the message word.
	c.msgOff = c.sbufSize + ctrlSlots*sgeLen
	if c.sbuf, err = uverbs.AllocBuffer(s.sbufTotal()); err != nil {
		return fmt.Errorf("rsocket: send buffer: %w", err)
	}
	c.sb = c.sbuf.Bytes()[:s.sbufTotal()]
	// The receive buffer, then in message-send mode the receive slots: registered together, as librdmacm does.
	if c.rbuf, err = uverbs.AllocBuffer(s.rbufTotal()); err != nil {
		return fmt.Errorf("rsocket: receive buffer: %w", err)
	}
	c.rb = c.rbuf.Bytes()[:s.rbuf]
	c.rmsg = c.rbuf.Bytes()[s.rbuf:s.rbufTotal()]
	c.iomapSize = s.iomap
	if c.tbuf, err = uverbs.AllocBuffer(s.tl); err != nil {
		return fmt.Errorf("rsocket: target SGL: %w", err)
	}
	c.tl = c.tbuf.Bytes()[:s.tl]
	if c.smr, err = pd.RegMR(c.sb, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	remote := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite
	if c.rmr, err = pd.RegMR(c.rbuf.Bytes()[:s.rbufTotal()], remote); err != nil {
		return err
	}
	if c.tmr, err = pd.RegMR(c.tl, remote); err != nil {
		return err
	}
	c.rx = newRx(s.rbuf, c.rqSize)
	c.rx.msgSend = c.msgSend
	c.sqeAvail = int(c.sqSize) - ctrlSlots
	c.sbufAvail = c.sbufSize
	c.rwr = make([]uverbs.RecvWR, c.rqSize)
	for i := range c.rwr {
		c.rwr[i].WRID = recvWRIDFlag
	}
	if c.msgSend {
		// Receive i has slot i: wr_id says which (rs_post_recv). Receives complete in the order they were
		// posted, so reposting from rnext on gives each completed receive's slot to the next.
		c.rsge = make([]uverbs.SGE, c.rqSize)
		for i := range c.rwr {
			c.rsge[i] = c.rmr.SGE(s.rbuf+i*msgWordLen, msgWordLen)
			c.rwr[i].WRID = recvWRIDFlag | uint64(i)
			c.rwr[i].SGL = c.rsge[i : i+1]
		}
	}
	if _, err := c.qp.PostRecv(c.rwr); err != nil {
		return err
	}
	return nil
}

// postRecvs posts n receives (n <= rqSize): in message-send mode those of the next n slots, in order.
func (c *Conn) postRecvs(n int) error {
	if !c.msgSend {
		_, err := c.qp.PostRecv(c.rwr[:n])
		return err
	}
	first := min(n, len(c.rwr)-c.rnext)
	if _, err := c.qp.PostRecv(c.rwr[c.rnext : c.rnext+first]); err != nil {
		return err
	}
	c.rnext += first
	if c.rnext == len(c.rwr) {
		c.rnext = 0
	}
	if n > first {
		if _, err := c.qp.PostRecv(c.rwr[:n-first]); err != nil {
			return err
		}
		c.rnext = n - first
	}
	return nil
}

// recvMsg is the message of a successful receive completion: its immediate data, or in message-send mode the
// word the peer's SEND left in the receive's slot.
func (c *Conn) recvMsg(wc *uverbs.WC) (uint32, error) {
	if wc.Flags&uverbs.WCWithImm != 0 {
		return wc.Imm, nil
	}
	if !c.msgSend {
		return 0, fmt.Errorf("receive without immediate data (%d bytes): %w", wc.ByteLen, ErrProtocol)
	}
	i := int(uint32(wc.WRID))
	if i >= len(c.rwr) || wc.ByteLen != msgWordLen {
		return 0, fmt.Errorf("message SEND of %d bytes in receive slot %d (want %d bytes, %d slots): %w",
			wc.ByteLen, i, msgWordLen, len(c.rwr), ErrProtocol)
	}
	return getMsgWord(c.rmsg[i*msgWordLen:], c.peerBE), nil
}

// msgWR makes w the SEND of message m's word (message-send mode), inline, with wr_id wrid.
func (c *Conn) msgWR(w *uverbs.SendWR, m uint32, wrid uint64) {
	putMsgWord(c.sb[c.msgOff:], m)
	c.ssge[2] = c.smr.SGE(c.msgOff, msgWordLen)
	*w = uverbs.SendWR{WRID: wrid, SGL: c.ssge[2:3], Opcode: uverbs.WRSend, Flags: uverbs.SendInline}
}

// postMsg sends message m alone (rs_post_msg): a zero-length WRITE WITH IMM, or in message-send mode a SEND of
// its word. Its wr_id is m.
func (c *Conn) postMsg(m uint32) error {
	if c.msgSend {
		c.msgWR(&c.swr[0], m, uint64(m))
	} else {
		c.swr[0] = uverbs.SendWR{WRID: uint64(m), Opcode: uverbs.WRRDMAWriteWithImm, Imm: m}
	}
	_, err := c.qp.PostSend(c.swr[:1])
	return err
}

// postWriteMsg posts c.swr[0], a WRITE WITH IMM m that the caller filled in, as message m (rs_post_write_msg):
// as it is, or in message-send mode as a plain WRITE followed by the SEND of m's word, whose wr_id is m's
// opcode with the MSG_SEND flag (its completion gives back no send buffer bytes).
func (c *Conn) postWriteMsg(m uint32) error {
	if !c.msgSend {
		_, err := c.qp.PostSend(c.swr[:1])
		return err
	}
	c.swr[0].Opcode, c.swr[0].Imm = uverbs.WRRDMAWrite, 0
	c.msgWR(&c.swr[1], m, uint64(msg(msgOp(m), 0))|msgSendFlag)
	_, err := c.qp.PostSend(c.swr[:2])
	return err
}

// localData is our rs_conn_data.
func (c *Conn) localData() []byte {
	d := connData{Version: connVersion, Flags: flagIOMap, Credits: c.rqSize, IOMapSize: valueToScale(c.iomapSize),
		TargetSGL: sge{Addr: c.tmr.Addr(), Key: c.tmr.RKey(), Length: sglSize},
		DataBuf:   sge{Addr: c.rmr.Addr(), Key: c.rmr.RKey(), Length: uint32(len(c.rb) / 2)}}
	if hostBigEndian {
		d.Flags |= flagNet
	}
	b := make([]byte, connDataLen)
	d.marshal(b)
	return b
}

// saveData takes the peer's rs_conn_data (rs_save_conn_data).
func (c *Conn) saveData(d connData) {
	c.remoteSGL = d.TargetSGL
	c.rx.remoteSGLLen = int(max(1, min(d.TargetSGL.Length, 1<<16)))
	c.peerBE = d.Flags&flagNet != 0
	if d.Flags&flagIOMap != 0 {
		n := scaleToValue(d.IOMapSize)
		c.remoteIOM = sge{Addr: d.TargetSGL.Addr + uint64(d.TargetSGL.Length)*sgeLen, Key: d.TargetSGL.Key, Length: uint32(n)}
		c.maps = make([]ioMapping, n)
	}
	putSGE(c.tl[0:], d.DataBuf, binary.NativeEndian) // the peer's first receive half is our target SGE 0
	c.rx.sseqComp = d.Credits
}

// start runs the connection: the first credits and the CM event loop.
func (c *Conn) start() {
	var ctx context.Context
	ctx, c.stop = context.WithCancel(context.Background())
	c.mu.Lock()
	c.connected, c.readable, c.writable = true, true, true
	c.process()
	if c.kaPeriod > 0 {
		c.startKeepAlive()
	}
	c.mu.Unlock()
	c.workers.Add(1)
	go c.cmLoop(ctx)
}

func (c *Conn) cmLoop(ctx context.Context) {
	defer c.workers.Done()
	for {
		ev, err := c.ch.GetEvent(ctx)
		if err != nil {
			return
		}
		if ev.ID != c.id {
			continue
		}
		switch ev.Type {
		case rdmacm.EventDisconnected, rdmacm.EventDeviceRemoval:
			c.mu.Lock()
			c.process() // a CTRL DISCONNECT may be waiting in the CQ
			if c.connected {
				c.connected = false
				if !c.rx.discReceived && c.err == nil && (c.readable || c.writable) {
					c.err = unix.ECONNRESET
				}
				c.readable, c.writable = false, false
			}
			c.mu.Unlock()
			c.wakeAll()
		}
	}
}

// arm requests an event for the CQ's next completion (ibv_req_notify_cq)
// unless one is already requested; a caller then polls once more before it
// sleeps, since completions that arrived before the arm raise no event.
// c.mu is held.
//
// As in librdmacm (rs_process_cq), the CQ is armed only by a caller about to
// sleep: a Read or Write that finds its completion by polling costs no event,
// no re-arm and no wake-up, so a busy connection runs without system calls
// besides its doorbells. The event disarms the CQ; the caller that read it
// polls the CQ and wakes the other sleepers, which arm again if they still
// have to wait.
func (c *Conn) arm() {
	if c.armed || c.tearing || c.closed {
		return
	}
	if err := c.cq.ReqNotify(false); err != nil {
		c.fail(err)
		return
	}
	c.armed = true
}

// readyToSleep arms the CQ and polls it once more; it reports whether ready
// holds now (the caller loops instead of sleeping).
func (c *Conn) readyToSleep(ready func() bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return true
	}
	c.arm()
	c.process()
	return ready()
}

// wakeAll makes every sleeper look again: the ones on their wake channels
// and the CQ waiter.
func (c *Conn) wakeAll() {
	poke(c.rwake)
	poke(c.wwake)
	poke(c.cwake)
	c.interruptCQWait()
}

// interruptCQWait wakes the CQ waiter, if there is one, to look again (its
// deadline changed, Close, a CM event). The caller changes what the waiter
// must see before it calls this: a caller that takes the role afterwards sees
// it, and one that has it is woken (a Wake before its wait starts is not
// lost).
func (c *Conn) interruptCQWait() {
	if c.cqWaiting.Load() {
		c.cc.Wake() // fails only after release, when nobody waits
	}
}

// sleep blocks until the CQ raises an event, wake fires, the deadline d
// (UnixNano, 0: none) passes (os.ErrDeadlineExceeded), or, when done is not
// nil, the conn is closed (net.ErrClosed). It returns nil when the caller
// should look again. The first caller to sleep reads the completion channel
// itself, so the wake-up costs no goroutine hand-off; while it does, the
// others wait on their wake channels, and it wakes them when it leaves. The
// caller armed the CQ and found nothing (readyToSleep).
func (c *Conn) sleep(wake chan struct{}, d int64, t *time.Timer, done chan struct{}) error {
	if c.cqWaiting.CompareAndSwap(false, true) {
		err := c.waitCQ(d, done)
		c.cqWaiting.Store(false)
		poke(c.rwake)
		poke(c.wwake)
		poke(c.cwake)
		return err
	}
	var tc <-chan time.Time
	if d != 0 {
		left := time.Until(time.Unix(0, d))
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		t.Reset(left)
		tc = t.C
		defer t.Stop()
	}
	select {
	case <-wake:
	case <-tc:
		return os.ErrDeadlineExceeded
	case <-done:
		return net.ErrClosed
	}
	return nil
}

// waitCQ is sleep for the CQ waiter: it waits in the kernel for one event
// (the channel waits in epoll_pwait2(2), uverbs.WaitEpoll, until the deadline d
// or a Wake: the other side's goroutine wakes the waiter often, which WaitRead
// would pay for with a QP each time) and polls the CQ.
func (c *Conn) waitCQ(d int64, done chan struct{}) error {
	if done != nil && c.isClosed() {
		return net.ErrClosed
	}
	var cq *uverbs.CQ
	var err error
	if d != c.ccDeadline {
		var dl time.Time
		if d != 0 {
			dl = time.Unix(0, d)
		}
		err = c.cc.SetDeadline(dl)
		c.ccDeadline = d
	}
	if err == nil {
		cq, err = c.cc.GetEvent(context.Background())
	}
	if err != nil {
		switch {
		case errors.Is(err, uverbs.ErrWoken):
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return os.ErrDeadlineExceeded
		}
		c.mu.Lock()
		if !c.tearing && !c.closed {
			c.fail(err)
		}
		c.mu.Unlock()
		return nil // the caller finds c.err
	}
	cq.AckEvents(1)
	c.mu.Lock()
	if !c.tearing {
		c.armed = false
		c.process()
	}
	c.mu.Unlock()
	return nil
}

// fail makes err the connection's error and stops the QP. c.mu is held.
func (c *Conn) fail(err error) {
	if c.err == nil {
		c.err = err
	}
	if c.connected {
		c.connected, c.readable, c.writable = false, false, false
		c.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState)
	}
}

// process polls the CQ dry (rs_poll_cq), reposts receives and sends credits
// when due. c.mu is held.
func (c *Conn) process() {
	c.updateCredits()
	for {
		n, err := c.cq.Poll(c.wc[:])
		if err != nil {
			c.fail(fmt.Errorf("rsocket: %w", err))
		}
		if n == 0 {
			break
		}
		recvs := 0
		for i := range c.wc[:n] {
			wc := &c.wc[i]
			if wc.WRID&recvWRIDFlag != 0 {
				if wc.Status != uverbs.WCSuccess {
					if wc.Status != uverbs.WCWRFlushErr {
						c.fail(fmt.Errorf("rsocket: receive completion: %w", wc.Err()))
					}
					continue
				}
				recvs++
				c.holdSends = false
				m, err := c.recvMsg(wc)
				if err != nil {
					c.fail(err)
					continue
				}
				if c.err != nil {
					continue
				}
				if err := c.rx.onRecv(m); err != nil {
					c.fail(err)
					continue
				}
				if c.rx.discReceived && c.connected {
					c.connected, c.readable, c.writable = false, false, false
				} else if c.rx.shutReceived && c.readable {
					if c.writable {
						c.readable = false
					} else {
						c.connected, c.readable = false, false
					}
				}
				continue
			}
			m := uint32(wc.WRID)
			if c.kaOut > 0 && wc.Status == uverbs.WCSuccess {
				c.kaSince = time.Now() // the peer acknowledges: probes queued behind sends are not late
			}
			switch msgOp(m) {
			case opSGL:
				c.rx.ctrlMaxSeqno++
			case opCtrl:
				c.rx.ctrlMaxSeqno++
				if msgData(m) == ctrlKeepalive {
					c.kaAcked()
				}
				if msgData(m) == ctrlDisc {
					c.connected, c.readable, c.writable = false, false, false
				}
			case opIOMapSGL:
				c.sqeAvail++
				if wc.WRID&msgSendFlag == 0 {
					c.sbufAvail += iomapLen
				}
			default:
				c.sqeAvail++
				c.sbufAvail += int(msgData(m))
			}
			if wc.Status != uverbs.WCSuccess && c.connected {
				if m == msg(opCtrl, ctrlKeepalive) {
					c.fail(fmt.Errorf("rsocket: keepalive probe: %w: %w", wc.Err(), unix.EIO))
				} else {
					c.fail(fmt.Errorf("rsocket: send completion: %w: %w", wc.Err(), unix.EIO))
				}
			}
		}
		if recvs > 0 && c.connected {
			if err := c.postRecvs(recvs); err != nil {
				c.fail(err)
			}
		}
		if n < len(c.wc) {
			break
		}
	}
	c.updateCredits()
}

// updateCredits sends the credit messages that are due (rs_update_credits).
func (c *Conn) updateCredits() {
	if c.connected && !c.holdSends && c.rx.creditsDue() {
		cr := c.rx.takeCredit()
		if !cr.publish {
			if err := c.postMsg(cr.imm); err != nil {
				c.fail(err)
			}
			return
		}
		slot := c.sbufSize + cr.slot*sgeLen
		o := binary.ByteOrder(binary.LittleEndian)
		if c.peerBE {
			o = binary.BigEndian
		}
		putSGE(c.sb[slot:], sge{Addr: c.rmr.Addr() + uint64(cr.offset), Key: c.rmr.RKey(), Length: uint32(len(c.rb) / 2)}, o)
		c.ssge[0] = c.smr.SGE(slot, sgeLen)
		c.swr[0] = uverbs.SendWR{WRID: uint64(cr.imm), SGL: c.ssge[:1], Opcode: uverbs.WRRDMAWriteWithImm, Imm: cr.imm,
			RemoteAddr: c.remoteSGL.Addr + uint64(cr.sgeIndex)*sgeLen, RKey: c.remoteSGL.Key}
		if err := c.postWriteMsg(cr.imm); err != nil {
			c.fail(err)
		}
	}
}

// target returns our current target SGE (the peer's receive buffer), written by the peer.
func (c *Conn) target() (addr uint64, key, length uint32) {
	b := c.tl[c.targetSGE*sgeLen:]
	return binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint32(b[8:]), binary.NativeEndian.Uint32(b[12:])
}

func (c *Conn) canSend() bool {
	_, _, l := c.target()
	if c.holdSends {
		return false
	}
	if c.msgSend {
		return c.sqeAvail >= 2 && c.sbufAvail >= sndLowat && c.sseqNo != c.rx.sseqComp && l != 0
	}
	return c.sqeAvail > 0 && c.sbufAvail >= sndLowat && c.sseqNo != c.rx.sseqComp && l != 0
}

// writeChunk sends p (len(p) <= what canSend allows) as one DATA message.
func (c *Conn) writeChunk(p []byte) error {
	addr, key := c.takeTarget(len(p))
	return c.postWrite(p, msg(opData, uint32(len(p))), uverbs.WRRDMAWriteWithImm, addr, key)
}

// writeChunkV sends the next n bytes of bufs, from buffer *i at offset *off
// on, as one DATA message (rsendv's chunk: copied from the buffers straight
// into the send ring, one WRITE for all of them), and advances *i and *off
// past them. n <= what canSend allows and what bufs hold from there.
func (c *Conn) writeChunkV(bufs [][]byte, i, off *int, n int) error {
	addr, key := c.takeTarget(n)
	a, b, nsge := c.reserve(n)
	gather(a, bufs, i, off)
	gather(b, bufs, i, off)
	return c.postReserved(n, nsge, msg(opData, uint32(n)), uverbs.WRRDMAWriteWithImm, addr, key)
}

// gather fills dst from bufs, starting at buffer *i, offset *off, and
// advances them (rs_copy_iov).
func gather(dst []byte, bufs [][]byte, i, off *int) {
	for len(dst) > 0 {
		k := copy(dst, bufs[*i][*off:])
		dst = dst[k:]
		if *off += k; *off == len(bufs[*i]) {
			*i, *off = *i+1, 0
		}
	}
}

// takeTarget takes n bytes of our current target SGE (the peer's receive
// buffer) for a DATA message and returns where they go; the message takes a
// credit.
func (c *Conn) takeTarget(n int) (uint64, uint32) {
	addr, key, length := c.target()
	c.sseqNo++
	b := c.tl[c.targetSGE*sgeLen:]
	binary.NativeEndian.PutUint64(b, addr+uint64(n))
	binary.NativeEndian.PutUint32(b[12:], length-uint32(n))
	if length == uint32(n) {
		if c.targetSGE++; c.targetSGE == sglSize {
			c.targetSGE = 0
		}
	}
	return addr, key
}

// postWrite copies p into the send ring (split over its end with two SGEs)
// and posts one RDMA WRITE of it (WITH IMM m when op says so: then message
// m, which in message-send mode is a plain WRITE and the SEND of m's word)
// to addr/key, with wr_id m for the completion's bookkeeping. It takes a
// send WQE (two for a message in message-send mode) and len(p) bytes of
// send buffer; the caller checked canSend and sized p.
func (c *Conn) postWrite(p []byte, m uint32, op uverbs.WROpcode, addr uint64, key uint32) error {
	a, b, nsge := c.reserve(len(p))
	copy(a, p)
	copy(b, p[len(a):])
	return c.postReserved(len(p), nsge, m, op, addr, key)
}

// reserve takes the next n bytes of the send ring for a WRITE: a, then b
// when they wrap over the ring's end (nil otherwise), described by the first
// nsge entries of c.ssge.
func (c *Conn) reserve(n int) (a, b []byte, nsge int) {
	if left := c.sbufSize - c.soff; n <= left {
		a = c.sb[c.soff : c.soff+n]
		c.ssge[0] = c.smr.SGE(c.soff, n)
		if c.soff += n; c.soff == c.sbufSize {
			c.soff = 0
		}
		return a, nil, 1
	}
	left := c.sbufSize - c.soff
	a, b = c.sb[c.soff:c.sbufSize], c.sb[:n-left]
	c.ssge[0] = c.smr.SGE(c.soff, left)
	c.ssge[1] = c.smr.SGE(0, n-left)
	c.soff = n - left
	return a, b, 2
}

// postReserved posts the WRITE of the n bytes reserve described (see postWrite).
func (c *Conn) postReserved(n, nsge int, m uint32, op uverbs.WROpcode, addr uint64, key uint32) error {
	c.sqeAvail--
	c.sbufAvail -= n
	var flags uverbs.SendFlags
	if n <= c.inline {
		flags = uverbs.SendInline
	}
	c.swr[0] = uverbs.SendWR{WRID: uint64(m), SGL: c.ssge[:nsge], Opcode: op, Flags: flags, RemoteAddr: addr, RKey: key}
	if op == uverbs.WRRDMAWriteWithImm {
		c.swr[0].Imm = m
		if c.msgSend {
			c.sqeAvail-- // the SEND of the word
		}
		return c.postWriteMsg(m)
	}
	_, err := c.qp.PostSend(c.swr[:1])
	return err
}

// lockSendable returns with c.mu held and canSend true, or with c.mu
// released and the error that stops sending (closed, not writable, failed,
// deadline). spun says whether the caller already polled for PollTime.
func (c *Conn) lockSendable(spun *bool) error {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return net.ErrClosed
		}
		if !c.canSend() {
			c.process()
		}
		if !c.writable || c.err != nil {
			err := c.err
			if err == nil {
				if c.rx.discReceived || !c.connected {
					err = unix.ECONNRESET
				} else {
					err = unix.EPIPE // after CloseWrite
				}
			}
			c.mu.Unlock()
			return err
		}
		if c.canSend() {
			return nil
		}
		c.mu.Unlock()
		if !*spun {
			*spun = true
			if c.spin(c.writeReady) {
				continue
			}
		}
		if c.readyToSleep(c.writeReady) {
			continue
		}
		if err := c.wait(c.wwake, &c.wdl, c.wtimer); err != nil {
			return err
		}
	}
}

// wait blocks until wake fires, the CQ raises an event, the deadline passes, or the conn is closed.
func (c *Conn) wait(wake chan struct{}, dl *atomic.Int64, t *time.Timer) error {
	return c.sleep(wake, dl.Load(), t, c.done)
}

// spin polls the CQ for up to the poll time before sleeping (librdmacm's polling_time).
func (c *Conn) spin(ready func() bool) bool {
	if c.pollTime <= 0 {
		return false
	}
	start := time.Now()
	for time.Since(start) < c.pollTime {
		c.mu.Lock()
		c.process()
		ok := ready()
		c.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func (c *Conn) opErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &net.OpError{Op: op, Net: "rdma", Source: c.local, Addr: c.remote, Err: err}
}

// Read reads received bytes (rrecv). After the peer's orderly close it
// returns io.EOF; after a reset, an error matching unix.ECONNRESET. After
// CloseRead it returns the bytes already received, then io.EOF without
// waiting. MSG_DONTWAIT is a read deadline (SetReadDeadline).
func (c *Conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if expired(&c.rdl) {
		return 0, c.opErr("read", os.ErrDeadlineExceeded)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.lockReadable(); err != nil {
		return 0, c.readErr("read", err)
	}
	n := c.rx.read(p, c.rb)
	c.updateCredits()
	c.mu.Unlock()
	return n, nil
}

// Peek is rrecv with MSG_PEEK: it waits, as Read does, until bytes are there
// and copies up to len(p) of them into p without consuming them: the next
// Read or Peek returns them again. It returns io.EOF where Read would, and
// honours the read deadline (MSG_DONTWAIT is a deadline in the past).
func (c *Conn) Peek(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if expired(&c.rdl) {
		return 0, c.opErr("peek", os.ErrDeadlineExceeded)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.lockReadable(); err != nil {
		return 0, c.readErr("peek", err)
	}
	n := c.rx.peek(p, c.rb)
	c.mu.Unlock()
	return n, nil
}

// ReadBuffers is a scatter read (rreadv, rrecvmsg without control data): it
// waits, as Read does, until bytes are there, then fills bufs in order with
// what has arrived, and returns the total. librdmacm's rreadv fills only the
// first buffer (a short read, which readv allows); ReadBuffers goes on into
// the next buffers while received bytes remain, in the same one pass under
// the connection's lock. Empty buffers are skipped; with no room at all it
// returns 0 at once. Errors and io.EOF are Read's.
func (c *Conn) ReadBuffers(bufs net.Buffers) (int64, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if expired(&c.rdl) {
		return 0, c.opErr("read", os.ErrDeadlineExceeded)
	}
	room := false
	for _, b := range bufs {
		if len(b) > 0 {
			room = true
			break
		}
	}
	if !room {
		return 0, nil
	}
	if err := c.lockReadable(); err != nil {
		return 0, c.readErr("read", err)
	}
	var n int64
	for _, b := range bufs {
		if !c.rx.haveData() {
			break
		}
		n += int64(c.rx.read(b, c.rb))
	}
	c.updateCredits()
	c.mu.Unlock()
	return n, nil
}

// readErr is the error of a read-side call: io.EOF as it is, the others in a *net.OpError.
func (c *Conn) readErr(op string, err error) error {
	if err == io.EOF {
		return err
	}
	return c.opErr(op, err)
}

// lockReadable returns with c.mu held and received bytes to read, or with
// c.mu released and the error that ends the wait: io.EOF (no bytes and not
// readable: the peer's DISCONNECT or SHUTDOWN, or CloseRead), the
// connection's error, net.ErrClosed, the read deadline. rmu is held.
func (c *Conn) lockReadable() error {
	spun := false
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return net.ErrClosed
		}
		if !c.rx.haveData() {
			c.process()
		}
		if c.rx.haveData() {
			return nil
		}
		readable, err := c.readable, c.err
		c.mu.Unlock()
		if err != nil {
			return err
		}
		if !readable {
			return io.EOF
		}
		if !spun {
			spun = true
			if c.spin(c.readReady) {
				continue
			}
		}
		if c.readyToSleep(c.readReady) {
			continue
		}
		if err := c.wait(c.rwake, &c.rdl, c.rtimer); err != nil {
			return err
		}
	}
}

// nextXfer is how many of the left bytes the next chunk of a write carries: at most *olen, which doubles up to
// maxTransfer after each chunk it limits (rsend's growing transfer size), and no more than the send buffer has
// free. c.mu held.
func (c *Conn) nextXfer(left int, olen *int) int {
	xfer := left
	if *olen < left {
		xfer = *olen
		if *olen < maxTransfer {
			*olen <<= 1
		}
	}
	return min(xfer, c.sbufAvail)
}

// Write sends p (rsend): copies into the send ring and RDMA-writes it into
// the peer's receive buffer in chunks of 2 KiB doubling up to 64 KiB.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if expired(&c.wdl) {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	done := 0
	olen := olapStart
	spun := false
	for done < len(p) {
		if err := c.lockSendable(&spun); err != nil {
			return done, c.opErr("write", err)
		}
		for done < len(p) && c.canSend() {
			xfer := c.nextXfer(len(p)-done, &olen)
			if _, _, l := c.target(); xfer > int(l) {
				xfer = int(l)
			}
			if err := c.writeChunk(p[done : done+xfer]); err != nil {
				c.fail(err)
				c.mu.Unlock()
				return done, c.opErr("write", err)
			}
			done += xfer
		}
		c.mu.Unlock()
	}
	return done, nil
}

// WriteBuffers is a gather write (rwritev, rsendmsg without control data,
// librdmacm's rsendv): it sends the bytes of bufs in order as one stream, in
// chunks of 2 KiB doubling up to 64 KiB as Write does, each chunk copied from
// the buffers it spans straight into the send ring and sent as one RDMA WRITE
// (no copy per buffer beyond Write's, no message per buffer). It returns the
// bytes sent and, when short, why (Write's errors). bufs is not modified.
// net.Buffers.WriteTo on a Conn makes one Write per buffer instead (the
// net package's gather path is for its own types).
func (c *Conn) WriteBuffers(bufs net.Buffers) (int64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if expired(&c.wdl) {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	i, off := 0, 0 // the next byte to send: bufs[i][off] (empty buffers are passed over by gather)
	done := 0
	olen := olapStart
	spun := false
	for done < total {
		if err := c.lockSendable(&spun); err != nil {
			return int64(done), c.opErr("write", err)
		}
		for done < total && c.canSend() {
			xfer := c.nextXfer(total-done, &olen)
			if _, _, l := c.target(); xfer > int(l) {
				xfer = int(l)
			}
			if err := c.writeChunkV(bufs, &i, &off, xfer); err != nil {
				c.fail(err)
				c.mu.Unlock()
				return int64(done), c.opErr("write", err)
			}
			done += xfer
		}
		c.mu.Unlock()
	}
	return int64(done), nil
}

// allSendsDone is rs_conn_all_sends_done.
func (c *Conn) allSendsDone() bool {
	return int(c.rx.ctrlMaxSeqno-c.rx.ctrlSeqno)+c.sqeAvail == int(c.sqSize) || !c.connected
}

// shutdown is rshutdown: how is unix.SHUT_RD, SHUT_WR or SHUT_RDWR. c.mu is
// held; it may be released while waiting (until deadline).
func (c *Conn) shutdown(how int, deadline time.Time) error {
	if c.connected {
		var ctrl uint32
		switch how {
		case unix.SHUT_RDWR:
			ctrl = ctrlDisc
			c.readable, c.writable = false, false
		case unix.SHUT_WR:
			c.writable = false
			ctrl = ctrlDisc
			if c.readable {
				ctrl = ctrlShutdown
			}
		default: // SHUT_RD: nothing goes on the wire while we may still send
			c.readable = false
			if c.writable {
				return nil
			}
			ctrl = ctrlDisc
		}
		if !c.waitLocked(func() bool { return c.rx.ctrlSeqno != c.rx.ctrlMaxSeqno && !c.holdSends || !c.connected }, deadline) {
			return os.ErrDeadlineExceeded
		}
		if c.connected {
			c.rx.ctrlSeqno++
			if err := c.postMsg(msg(opCtrl, ctrl)); err != nil {
				c.fail(err)
				return err
			}
		}
	}
	if c.connected && !c.waitLocked(c.allSendsDone, deadline) {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// waitLocked waits with c.mu held (released while sleeping) until cond holds
// or the deadline passes.
func (c *Conn) waitLocked(cond func() bool, deadline time.Time) bool {
	for {
		c.arm()
		c.process()
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		c.mu.Unlock()
		// Close calls this after marking the conn closed: sleep must not stop at done.
		c.sleep(c.cwake, time.Now().Add(min(left, 10*time.Millisecond)).UnixNano(), c.ctimer, nil)
		c.mu.Lock()
	}
}

// CloseWrite shuts down the sending side (rshutdown SHUT_WR): the peer reads
// EOF once it has read everything sent before; reading goes on.
func (c *Conn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr("close write", net.ErrClosed)
	}
	if !c.writable {
		return nil
	}
	return c.opErr("close write", c.shutdown(unix.SHUT_WR, time.Now().Add(5*time.Second)))
}

// CloseRead shuts down the receiving side (rshutdown SHUT_RD): Read, Peek
// and ReadBuffers return the bytes already received, then io.EOF at once
// instead of waiting, and a blocked Read returns. While the connection is
// still writable nothing is sent: the peer is not told (as with librdmacm,
// its writes go on landing in our buffer until that is full, and they are
// not reported); writing here goes on. After CloseWrite, CloseRead sends
// the rsockets DISCONNECT, as Close does (the peer reads EOF after what we
// sent, and its writes fail with ECONNRESET), waiting up to 5 s for our
// sends to complete. Close is still needed to release the connection.
func (c *Conn) CloseRead() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opErr("close read", net.ErrClosed)
	}
	err := c.shutdown(unix.SHUT_RD, time.Now().Add(5*time.Second))
	c.mu.Unlock()
	c.wakeAll()
	return c.opErr("close read", err)
}

// Close sends the rsockets DISCONNECT, waits (boundedly) for outstanding sends,
// then destroys the connection's id, QP, CQ, memory and channels. Blocked
// Read and Write calls return net.ErrClosed.
func (c *Conn) Close() error {
	first := false
	c.once.Do(func() {
		first = true
		c.mu.Lock()
		c.closed = true
		c.stopKeepAlive()
		close(c.done)
		c.mu.Unlock()
		c.interruptCQWait()
		// Blocked Read/Write return; wait for them so nothing touches the QP after teardown.
		c.rmu.Lock()
		c.wmu.Lock()
		c.mu.Lock()
		err := c.shutdown(unix.SHUT_RDWR, time.Now().Add(2*time.Second))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil // the peer is gone or stuck: tear down anyway
		}
		c.tearing = true
		c.mu.Unlock()
		c.stop() // the CM loop
		c.closeErr = errors.Join(err, c.release())
		c.workers.Wait()
		c.wmu.Unlock()
		c.rmu.Unlock()
	})
	if !first {
		return c.opErr("close", net.ErrClosed)
	}
	return c.opErr("close", c.closeErr)
}

// release frees everything: the connection's own objects, then the id
// (which sends DREQ if still connected) and its event channel. The id must go
// last: the last id of the device's shared PD and context (the process's,
// rdmacm's) releases them, and this connection's objects live on that PD.
func (c *Conn) release() error {
	err := c.releaseLocal()
	return errors.Join(err, c.id.Close(), c.ch.Close())
}

// releaseLocal frees what setup made (QP, MRs, CQ, completion channel,
// buffers), children first.
func (c *Conn) releaseLocal() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.qp != nil {
		add(c.id.DestroyQP())
	}
	for i := range c.maps {
		if c.maps[i].mr != nil {
			add(c.maps[i].mr.Close())
			c.maps[i] = ioMapping{}
		}
	}
	add(c.smr.Close())
	add(c.rmr.Close())
	add(c.tmr.Close())
	add(c.cq.Close())
	add(c.cc.Close())
	for _, b := range []*uverbs.Buffer{c.sbuf, c.rbuf, c.tbuf} {
		if b != nil {
			add(b.Close())
		}
	}
	return errors.Join(errs...)
}

// LocalAddr and RemoteAddr are the connection's IP addresses and ports.
func (c *Conn) LocalAddr() net.Addr  { return c.local }
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

func expired(dl *atomic.Int64) bool {
	d := dl.Load()
	return d != 0 && time.Now().UnixNano() >= d
}

func setDL(dl *atomic.Int64, t time.Time) {
	if t.IsZero() {
		dl.Store(0)
	} else {
		dl.Store(max(t.UnixNano(), 1))
	}
}

// SetDeadline, SetReadDeadline and SetWriteDeadline: blocked and future
// calls fail with os.ErrDeadlineExceeded once the time passes.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline of Read calls, pending ones included; on a closed Conn it fails with
// net.ErrClosed, as a net.TCPConn's does.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.setDeadline(&c.rdl, c.rwake, t) }

// SetWriteDeadline sets the deadline of Write calls, pending ones included; on a closed Conn it fails with
// net.ErrClosed.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.setDeadline(&c.wdl, c.wwake, t) }

// setDeadline sets the deadline dl and wakes the calls that wait on wake and on the CQ, so that they see it.
func (c *Conn) setDeadline(dl *atomic.Int64, wake chan struct{}, t time.Time) error {
	if c.isClosed() {
		return c.opErr("set", net.ErrClosed)
	}
	setDL(dl, t)
	poke(wake)
	c.interruptCQWait()
	return nil
}

// isClosed reports whether Close has begun (without taking c.mu, which a blocked call may hold while
// tearing down).
func (c *Conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
