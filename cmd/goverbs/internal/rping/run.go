package rping

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
)

// setupQP: a PD, a completion channel, one CQ of 32 for both directions
// (armed), and an RC QP of 16 send / 2 receive WRs (rping_setup_qp).
func (c *cb) setupQP(id *rdmacm.ID) error {
	ctx, _, err := id.Device()
	if err != nil {
		c.errf("ibv_alloc_pd failed\n")
		return err
	}
	if c.pd, err = ctx.AllocPD(); err != nil {
		c.errf("ibv_alloc_pd failed\n")
		return err
	}
	if c.compCh, err = ctx.CreateCompChannel(nil); err != nil {
		c.errf("ibv_create_comp_channel failed\n")
		return err
	}
	if c.cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: sqDepth * 2, Channel: c.compCh}); err != nil {
		c.errf("ibv_create_cq failed\n")
		return err
	}
	if err := c.cq.ReqNotify(false); err != nil {
		c.errf("ibv_create_cq failed\n")
		return err
	}
	qcap := uverbs.QPCap{MaxSendWR: sqDepth, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}
	if c.selfQP {
		c.qp, err = c.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: c.cq, RecvCQ: c.cq, Cap: qcap})
		if err != nil {
			c.perror("ibv_create_qp", err)
			return err
		}
		err = c.modify(&uverbs.QPAttr{State: uverbs.QPStateInit, PortNum: id.PortNum()},
			uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags)
		if err != nil {
			c.perror("ibv_modify_qp", err)
		}
		return err
	}
	c.qp, err = id.CreateQP(rdmacm.QPInitAttr{PD: c.pd, SendCQ: c.cq, RecvCQ: c.cq, Cap: qcap})
	if err != nil {
		c.perror("rdma_create_qp", err)
	}
	return err
}

func (c *cb) freeQP(id *rdmacm.ID) {
	if c.selfQP {
		if c.qp != nil {
			c.qp.Close()
		}
	} else if id != nil {
		id.DestroyQP()
	}
	c.qp = nil
	if c.cq != nil {
		c.cq.Close()
	}
	if c.compCh != nil {
		c.compCh.Close()
	}
	if c.pd != nil {
		c.pd.Close()
	}
}

func (c *cb) setupBuffers() error {
	var err error
	reg := func(n int, access uverbs.Access, what string) (*uverbs.Buffer, *uverbs.MR, error) {
		b, err := uverbs.AllocBuffer(n)
		if err != nil {
			c.errf("%s malloc failed\n", what)
			return nil, nil, err
		}
		mr, err := c.pd.RegMR(b.Bytes(), access)
		if err != nil {
			c.errf("%s reg_mr failed\n", what)
			b.Close()
			return nil, nil, err
		}
		return b, mr, nil
	}
	rw := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
	if c.recvBuf, c.recvMR, err = reg(infoSize, uverbs.AccessLocalWrite, "recv_buf"); err != nil {
		return err
	}
	if c.sendBuf, c.sendMR, err = reg(infoSize, 0, "send_buf"); err != nil {
		return err
	}
	if c.rdmaBuf, c.rdmaMR, err = reg(c.size, rw, "rdma_buf"); err != nil {
		return err
	}
	if !c.server {
		if c.startBuf, c.startMR, err = reg(c.size, rw, "start_buf"); err != nil {
			return err
		}
	}
	// rping_setup_wr
	c.rqWR = []uverbs.RecvWR{{SGL: []uverbs.SGE{c.recvMR.SGE(0, infoSize)}}}
	c.sqWR = []uverbs.SendWR{{Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{c.sendMR.SGE(0, infoSize)}}}
	c.rdmaSGL = []uverbs.SGE{c.rdmaMR.SGE(0, c.size)}
	c.rdmaWR = []uverbs.SendWR{{Flags: uverbs.SendSignaled, SGL: c.rdmaSGL}}
	return nil
}

func (c *cb) freeBuffers() {
	for _, mr := range []*uverbs.MR{c.recvMR, c.sendMR, c.rdmaMR, c.startMR} {
		if mr != nil {
			mr.Close()
		}
	}
	for _, b := range []*uverbs.Buffer{c.recvBuf, c.sendBuf, c.rdmaBuf, c.startBuf} {
		b.Close()
	}
}

// poll takes at most one completion (the one place that calls CQ.Poll); a failed poll is -1, as
// ibv_poll_cq's negative return.
func (c *cb) poll(wc []uverbs.WC) int {
	n, err := c.cq.Poll(wc)
	if err != nil {
		return -1
	}
	return n
}

// modify is the one place that calls QP.Modify.
func (c *cb) modify(a *uverbs.QPAttr, m uverbs.QPAttrMask) error { return c.qp.Modify(*a, m) }

// cqHandler is rping_cq_event_handler: 0 to go on, non-zero to stop the CQ thread.
func (c *cb) cqHandler(wc []uverbs.WC) int {
	flushed := 0
	var ret int
	for ret = c.poll(wc); ret == 1; ret = c.poll(wc) {
		w := &wc[0]
		if w.Status != uverbs.WCSuccess {
			if w.Status == uverbs.WCWRFlushErr {
				flushed = 1
				continue
			}
			c.errf("cq completion failed status %d\n", w.Status)
			return c.cqError(-1)
		}
		switch w.Opcode {
		case uverbs.WCSend:
			c.debugf("send completion\n")
		case uverbs.WCRDMAWrite:
			c.debugf("rdma write completion\n")
			c.setState(stRDMAWriteComplete)
			c.post()
		case uverbs.WCRDMARead:
			c.debugf("rdma read completion\n")
			c.setState(stRDMAReadComplete)
			c.post()
		case uverbs.WCRecv:
			c.debugf("recv completion\n")
			var ret int
			if c.server {
				ret = c.serverRecv(w)
			} else {
				ret = c.clientRecv(w)
			}
			if ret != 0 {
				c.errf("recv wc error: %d\n", ret)
				return c.cqError(ret)
			}
			if _, err := c.qp.PostRecv(c.rqWR); err != nil {
				c.errf("post recv error: %d\n", -1)
				return c.cqError(-1)
			}
			c.post()
		default:
			c.debugf("unknown!!!!! completion\n")
			return c.cqError(-1)
		}
	}
	if ret != 0 {
		c.errf("poll error %d\n", ret)
		return c.cqError(ret)
	}
	return flushed
}

func (c *cb) cqError(ret int) int {
	c.setState(stError)
	c.post()
	return ret
}

func (c *cb) serverRecv(w *uverbs.WC) int {
	if w.ByteLen != infoSize {
		c.errf("Received bogus data, size %d\n", w.ByteLen)
		return -1
	}
	b := c.recvBuf.Bytes()
	c.remoteAddr = binary.BigEndian.Uint64(b[0:8])
	c.remoteRKey = binary.BigEndian.Uint32(b[8:12])
	c.remoteLen = binary.BigEndian.Uint32(b[12:16])
	c.debugf("Received rkey %x addr %x len %d from peer\n", c.remoteRKey, c.remoteAddr, c.remoteLen)
	c.mu.Lock()
	if c.state <= stConnected || c.state == stRDMAWriteComplete {
		c.state = stRDMAReadAdv
	} else {
		c.state = stRDMAWriteAdv
	}
	c.mu.Unlock()
	return 0
}

func (c *cb) clientRecv(w *uverbs.WC) int {
	if w.ByteLen != infoSize {
		c.errf("Received bogus data, size %d\n", w.ByteLen)
		return -1
	}
	c.mu.Lock()
	if c.state == stRDMAReadAdv {
		c.state = stRDMAWriteAdv
	} else {
		c.state = stRDMAWriteComplete
	}
	c.mu.Unlock()
	return 0
}

// startCQThread starts rping.c's CQ thread. In goverbs the main goroutine is that thread: its waits (see wait)
// read the completion channel and run the handler themselves, so a completion wakes the main flow without a
// hand-off between goroutines (which, on the lab's one CPU, cost rping 12 % more instructions per ping than
// rping.c; docs/perf.md). The returned stop ends it as pthread_join after the disconnect does: the handler
// runs until the flush the disconnect causes, bounded like the pthread_cancel it stands for.
func (c *cb) startCQThread() (stop func()) {
	c.cqOn = true
	c.waitCh.Store(c.compCh)
	return func() {
		deadline := time.Now().Add(2 * time.Second)
		for c.cqOn && time.Now().Before(deadline) {
			c.compCh.SetDeadline(deadline)
			if !c.cqStep() {
				break
			}
		}
		c.cqOn = false
		c.waitCh.Store(nil)
		c.compCh.SetDeadline(time.Time{})
	}
}

// wait is sem_wait. While the CQ thread runs, the main goroutine waits by reading completion events and
// running the handler until something is posted; a post from the CM goroutine interrupts its read.
func (c *cb) wait() {
	for c.cqOn {
		select {
		case <-c.sem:
			return
		default:
		}
		if !c.cqStep() {
			c.cqOn = false // the thread ended: only the CM goroutine posts from now on
		}
	}
	<-c.sem
}

// cqStep is one turn of rping_cq_thread: wait for a completion event, re-arm, handle, acknowledge. It reports
// whether the thread goes on. A woken wait (postCM) goes on; so does one whose deadline passed, which only
// stop sets, and stop ends it quietly then, as pthread_cancel does.
func (c *cb) cqStep() bool {
	cq, err := c.compCh.GetEvent(context.Background())
	if err != nil {
		if errors.Is(err, uverbs.ErrWoken) || errors.Is(err, os.ErrDeadlineExceeded) {
			return true // woken by postCM, or stop's deadline passed (stop checks it)
		}
		c.errf("Failed to get cq event!\n")
		return false
	}
	if cq != c.cq {
		c.errf("Unknown CQ!\n")
		return false
	}
	if err := c.cq.ReqNotify(false); err != nil {
		c.errf("Failed to set notify!\n")
		return false
	}
	ret := c.cqHandler(c.wc[:])
	c.cq.AckEvents(1)
	return ret == 0
}

func (c *cb) formatSend(buf *uverbs.Buffer, mr *uverbs.MR) {
	b := c.sendBuf.Bytes()
	binary.BigEndian.PutUint64(b[0:8], mr.Addr())
	binary.BigEndian.PutUint32(b[8:12], mr.RKey())
	binary.BigEndian.PutUint32(b[12:16], uint32(c.size))
	c.debugf("RDMA addr %x rkey %x len %d\n", mr.Addr(), mr.RKey(), c.size)
}

// await is sem_wait and the check that the CM or CQ handler has moved to state want; another state is
// reported as rping.c does ("wait for RDMA_READ_ADV state 10") and fails it.
func (c *cb) await(want int, what string) bool {
	c.wait()
	if st := c.getState(); st != want {
		c.errf("%s state %d\n", what, st)
		return false
	}
	return true
}

// sendAndAwait posts wr, then awaits state want.
func (c *cb) sendAndAwait(wr []uverbs.SendWR, want int, what string) bool {
	return c.postSend(wr) == nil && c.await(want, what)
}

func (c *cb) postSend(wr []uverbs.SendWR) error {
	_, err := c.qp.PostSend(wr)
	if err != nil {
		c.errf("post send error %d\n", -1)
	}
	return err
}

func cstrlen(b []byte) int {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return i
	}
	return len(b)
}

func (c *cb) testServer() int {
	ret := 0
	rdma := c.rdmaBuf.Bytes()
	for {
		if !c.await(stRDMAReadAdv, "wait for RDMA_READ_ADV") {
			ret = -1
			break
		}
		c.rdmaWR[0].Opcode = uverbs.WRRDMARead
		c.rdmaWR[0].RKey, c.rdmaWR[0].RemoteAddr = c.remoteRKey, c.remoteAddr
		c.rdmaSGL[0].Length = c.remoteLen
		if !c.sendAndAwait(c.rdmaWR, stRDMAReadComplete, "wait for RDMA_READ_COMPLETE") {
			ret = -1
			break
		}
		if c.verbose > 0 {
			c.outf("server ping data: %s\n", rdma[:cstrlen(rdma)])
		}
		if !c.sendAndAwait(c.sqWR, stRDMAWriteAdv, "wait for RDMA_WRITE_ADV") {
			ret = -1
			break
		}
		c.rdmaWR[0].Opcode = uverbs.WRRDMAWrite
		c.rdmaWR[0].RKey, c.rdmaWR[0].RemoteAddr = c.remoteRKey, c.remoteAddr
		c.rdmaSGL[0].Length = uint32(cstrlen(rdma) + 1)
		if !c.sendAndAwait(c.rdmaWR, stRDMAWriteComplete, "wait for RDMA_WRITE_COMPLETE") {
			ret = -1
			break
		}
		if err := c.postSend(c.sqWR); err != nil {
			ret = -1
			break
		}
	}
	if c.getState() == stDisconnected {
		return 0
	}
	return ret
}

func (c *cb) testClient() int {
	ret := 0
	start := byte(65)
	sb, rdma := c.startBuf.Bytes(), c.rdmaBuf.Bytes()
	for ping := 0; c.count == 0 || ping < c.count; ping++ {
		c.setState(stRDMAReadAdv)
		// snprintf(start_buf, size, "rdma-ping-%d: ", ping), then the letters.
		hdr := fmt.Appendf(sb[:0], "rdma-ping-%d: ", ping)
		cc := len(hdr)
		if cc > c.size-1 {
			cc = c.size - 1
		}
		ch := start
		for i := cc; i < c.size; i++ {
			sb[i] = ch
			ch++
			if ch > 122 {
				ch = 65
			}
		}
		start++
		if start > 122 {
			start = 65
		}
		sb[c.size-1] = 0

		c.formatSend(c.startBuf, c.startMR)
		if !c.sendAndAwait(c.sqWR, stRDMAWriteAdv, "wait for RDMA_WRITE_ADV") {
			ret = -1
			break
		}
		c.formatSend(c.rdmaBuf, c.rdmaMR)
		if !c.sendAndAwait(c.sqWR, stRDMAWriteComplete, "wait for RDMA_WRITE_COMPLETE") {
			ret = -1
			break
		}
		if c.validate > 0 && !bytes.Equal(sb[:c.size], rdma[:c.size]) {
			c.errf("data mismatch!\n")
			ret = -1
			break
		}
		if c.verbose > 0 {
			c.outf("ping data: %s\n", rdma[:cstrlen(rdma)])
		}
	}
	if c.getState() == stDisconnected {
		return 0
	}
	return ret
}

func (c *cb) connParam() *rdmacm.ConnParam {
	p := &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	if c.selfQP {
		p.QPNum = c.qp.QPN()
	}
	return p
}

// selfModify moves a self-created QP INIT -> RTR -> RTS with the CM's attributes.
func (c *cb) selfModify(id *rdmacm.ID) error {
	for _, s := range []uverbs.QPState{uverbs.QPStateInit, uverbs.QPStateRTR, uverbs.QPStateRTS} {
		a, m, err := id.InitQPAttr(s)
		if err != nil {
			return err
		}
		if err := c.modify(a, m); err != nil {
			return err
		}
	}
	return nil
}

func (c *cb) accept(id *rdmacm.ID) int {
	c.debugf("accepting client connection request\n")
	var err error
	if c.selfQP {
		if err = c.selfModify(id); err != nil {
			return -1
		}
		err = id.Accept(c.connParam())
	} else {
		err = id.Accept(nil)
	}
	if err != nil {
		c.perror("rdma_accept", err)
		return -1
	}
	c.wait()
	if st := c.getState(); st == stError {
		c.errf("wait for CONNECTED state %d\n", st)
		return -1
	}
	return 0
}

func (c *cb) disconnect(id *rdmacm.ID) {
	if c.selfQP && c.qp != nil {
		c.modify(&uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState)
	}
	id.Disconnect()
}

func (c *cb) bindServer() int {
	if err := c.cmID.Bind(netip.AddrPortFrom(c.addr, c.port)); err != nil {
		c.perror("rdma_bind_addr", err)
		return -1
	}
	if err := c.cmID.Listen(3); err != nil {
		c.perror("rdma_listen", err)
		return -1
	}
	return 0
}

func (c *cb) runServer() int {
	if ret := c.bindServer(); ret != 0 {
		return ret
	}
	if !c.await(stConnectRequest, "wait for CONNECT_REQUEST") {
		return -1
	}
	c.mu.Lock()
	child := c.child
	c.mu.Unlock()
	// Everything made on the child's device goes before the child id,
	// which holds the device context.
	defer child.Close()
	if err := c.setupQP(child); err != nil {
		c.errf("setup_qp failed: %d\n", cerr(err))
		c.freeQP(child)
		return cerr(err)
	}
	defer c.freeQP(child)
	if err := c.setupBuffers(); err != nil {
		c.errf("rping_setup_buffers failed: %d\n", cerr(err))
		return cerr(err)
	}
	defer c.freeBuffers()
	if _, err := c.qp.PostRecv(c.rqWR); err != nil {
		c.errf("ibv_post_recv failed: %d\n", cerr(err))
		return cerr(err)
	}
	stopCQ := c.startCQThread()
	if ret := c.accept(child); ret != 0 {
		c.errf("connect error %d\n", ret)
		stopCQ()
		return ret
	}
	ret := c.testServer()
	if ret != 0 {
		c.errf("rping server failed: %d\n", ret)
	}
	c.disconnect(child)
	stopCQ()
	return ret
}

func (c *cb) runPersistentServer() int {
	if ret := c.bindServer(); ret != 0 {
		return ret
	}
	for {
		if !c.await(stConnectRequest, "wait for CONNECT_REQUEST") {
			return -1
		}
		c.mu.Lock()
		child := c.child
		c.mu.Unlock()
		// One connection at a time: rping.c's per-connection threads share
		// one callback block copy each; this serves them in turn.
		if err := c.setupQP(child); err != nil {
			c.errf("setup_qp failed: %d\n", cerr(err))
			continue
		}
		if err := c.setupBuffers(); err == nil {
			if _, err := c.qp.PostRecv(c.rqWR); err == nil {
				stopCQ := c.startCQThread()
				if c.accept(child) == 0 {
					c.testServer()
				} else {
					c.errf("connect error %d\n", -1)
				}
				c.disconnect(child)
				stopCQ()
			}
		}
		c.freeBuffers()
		c.freeQP(child)
		c.recvMR, c.sendMR, c.rdmaMR, c.startMR = nil, nil, nil, nil
		c.recvBuf, c.sendBuf, c.rdmaBuf, c.startBuf = nil, nil, nil, nil
		c.pd, c.compCh, c.cq = nil, nil, nil
		child.Close()
		c.setState(stIdle)
	}
}

func (c *cb) bindClient() int {
	dst := netip.AddrPortFrom(c.addr, c.port)
	var src netip.AddrPort
	if c.src.IsValid() {
		src = netip.AddrPortFrom(c.src, 0)
	}
	if err := c.cmID.ResolveAddr(src, dst, resolveTime); err != nil {
		c.perror("rdma_resolve_addr", err)
		return -1
	}
	if !c.await(stRouteResolved, "waiting for addr/route resolution") {
		return -1
	}
	return 0
}

func (c *cb) connectClient() int {
	if err := c.cmID.Connect(c.connParam()); err != nil {
		c.perror("rdma_connect", err)
		return -1
	}
	if !c.await(stConnected, "wait for CONNECTED") {
		return -1
	}
	if c.selfQP {
		if err := c.selfModify(c.cmID); err != nil {
			c.perror("rping_modify_qp", err)
			return -1
		}
		if err := c.cmID.Establish(); err != nil {
			c.perror("rdma_establish", err)
			return -1
		}
	}
	return 0
}

func (c *cb) runClient() int {
	if ret := c.bindClient(); ret != 0 {
		return ret
	}
	if err := c.setupQP(c.cmID); err != nil {
		c.errf("setup_qp failed: %d\n", cerr(err))
		c.freeQP(c.cmID)
		return cerr(err)
	}
	defer c.freeQP(c.cmID)
	if err := c.setupBuffers(); err != nil {
		c.errf("rping_setup_buffers failed: %d\n", cerr(err))
		return cerr(err)
	}
	defer c.freeBuffers()
	if _, err := c.qp.PostRecv(c.rqWR); err != nil {
		c.errf("ibv_post_recv failed: %d\n", cerr(err))
		return cerr(err)
	}
	stopCQ := c.startCQThread()
	if ret := c.connectClient(); ret != 0 {
		c.errf("connect error %d\n", ret)
		stopCQ()
		return ret
	}
	ret := c.testClient()
	if ret != 0 {
		c.errf("rping client failed: %d\n", ret)
	}
	c.disconnect(c.cmID)
	stopCQ()
	// rping.c's CM thread usually reports the peer's DREP before the
	// program ends; wait for it (bounded) so the output is the same.
	deadline := time.After(2 * time.Second)
	for c.getState() != stDisconnected {
		select {
		case <-c.sem:
		case <-deadline:
			return ret
		}
	}
	return ret
}

// cerr is the positive errno C's setup functions return.
func cerr(err error) int { return int(cstdErrno(err)) }
