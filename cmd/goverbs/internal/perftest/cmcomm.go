package perftest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
)

// destSize is sizeof(struct pingpong_dest) on x86-64 up to perftest 6.28: the size of perftest's rdma_cm key
// record and of the one receive its out-of-band QP keeps posted. wideDestSize is 6.29's, with
// tail_markers_vaddr (the data validation's) after vaddr; 6.29 posts receives of at least that size.
const (
	destSize     = 56
	wideDestSize = 64
)

// wideDestVersion is the first perftest release whose rdma_cm key record is wideDestSize bytes.
const wideDestVersion = 6.29

// destLen is the key record's size for the peer's layout.
func destLen(wide bool) int {
	if wide {
		return wideDestSize
	}
	return destSize
}

// cmComm is perftest's -z out-of-band channel: an RC QP connected with rdma_cm on the perftest port. Every
// record the TCP channel would carry goes as one SEND; the peer has exactly one 56-byte receive posted and
// re-posts it after each message, as perftest does.
type cmComm struct {
	conn    *rdmacm.Conn
	mem     *uverbs.Buffer
	mr      *uverbs.MR
	pending []byte
	wc      [4]uverbs.WC
}

const (
	cmRecvOff = 0
	cmSendOff = 64
	cmBufSize = 128
	cmWRID    = 1
)

func (c *cmComm) setup(conn *rdmacm.Conn) error {
	var err error
	if c.mem, err = uverbs.AllocBuffer(cmBufSize); err != nil {
		return err
	}
	if c.mr, err = conn.PD().RegMR(c.mem.Bytes(), uverbs.AccessLocalWrite); err != nil {
		return err
	}
	c.conn = conn
	return c.postRecv()
}

// postRecv posts the one receive, large enough for either layout of the key record (the larger takes any
// message an older peer sends).
func (c *cmComm) postRecv() error {
	_, err := c.conn.QP().PostRecv([]uverbs.RecvWR{{WRID: cmWRID, SGL: []uverbs.SGE{c.mr.SGE(cmRecvOff, wideDestSize)}}})
	return err
}

func (c *cmComm) opts(p *Params) *rdmacm.Options {
	var zero, rnr uint8 = 0, 7
	rr := zero
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		rr = uint8(p.OutReads)
	}
	retry := uint8(p.RetryCount)
	return &rdmacm.Options{
		Cap:                uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1},
		ResponderResources: &rr, InitiatorDepth: &rr, RetryCount: &retry, RNRRetryCount: &rnr,
		Backlog: p.NumQPs,
		Setup:   c.setup,
	}
}

// dialCM connects the client's channel to servername:port.
func dialCM(ctx context.Context, p *Params) (*cmComm, error) {
	addr, err := cmAddr(p.Servername, p.Port)
	if err != nil {
		return nil, err
	}
	c := &cmComm{}
	o := c.opts(p)
	if p.SourceIP != "" {
		if o.Source, err = cmAddr(p.SourceIP, 0); err != nil {
			return nil, err
		}
	}
	conn, err := rdmacm.Dial(ctx, addr, o)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.conn = conn
	return c, nil
}

// listenCM accepts the client's channel on 0.0.0.0 (or --source_ip):port; the listener is closed once the
// connection is accepted, as perftest destroys its listening id.
func listenCM(ctx context.Context, p *Params) (*cmComm, error) {
	host := "0.0.0.0"
	if p.SourceIP != "" {
		host = p.SourceIP
	}
	addr, err := cmAddr(host, p.Port)
	if err != nil {
		return nil, err
	}
	c := &cmComm{}
	l, err := rdmacm.Listen(addr, c.opts(p))
	if err != nil {
		return nil, err
	}
	defer l.Close()
	req, err := l.Accept(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := req.Accept(ctx, c.opts(p))
	if err != nil {
		c.Close()
		return nil, err
	}
	c.conn = conn
	return c, nil
}

func cmAddr(host string, port int) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			a, _ := netip.AddrFromSlice(v4)
			return netip.AddrPortFrom(a, uint16(port)), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%s has no IPv4 address", net.JoinHostPort(host, strconv.Itoa(port)))
}

var errCMComm = errors.New("rdma_cm channel")

// wait polls cq until it yields one completion, sleeping on the connection's completion channel in between.
func (c *cmComm) wait(cq *uverbs.CQ) (uverbs.WC, error) {
	armed := false
	for {
		n, err := cq.Poll(c.wc[:1])
		if err != nil {
			return uverbs.WC{}, err
		}
		if n == 1 {
			if c.wc[0].Status != 0 || c.wc[0].WRID != cmWRID {
				return c.wc[0], fmt.Errorf("%w: bad completion status %d wr_id %d", errCMComm, c.wc[0].Status, c.wc[0].WRID)
			}
			return c.wc[0], nil
		}
		if !armed {
			if err := cq.ReqNotify(false); err != nil {
				return uverbs.WC{}, err
			}
			armed = true
			continue
		}
		got, err := c.conn.CompChannel().GetEvent(context.Background())
		if err != nil {
			return uverbs.WC{}, err
		}
		got.AckEvents(1)
		armed = false
	}
}

// Write sends p as one message.
func (c *cmComm) Write(p []byte) (int, error) {
	if len(p) > cmBufSize-cmSendOff {
		return 0, fmt.Errorf("%w: %d-byte record", errCMComm, len(p))
	}
	copy(c.mem.Bytes()[cmSendOff:], p)
	wr := []uverbs.SendWR{{WRID: cmWRID, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{c.mr.SGE(cmSendOff, len(p))}}}
	if _, err := c.conn.QP().PostSend(wr); err != nil {
		return 0, err
	}
	if _, err := c.wait(c.conn.SendCQ()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read returns the bytes of the next message (what is left of it when p is shorter).
func (c *cmComm) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		wc, err := c.wait(c.conn.RecvCQ())
		if err != nil {
			return 0, err
		}
		c.pending = append(c.pending[:0], c.mem.Bytes()[cmRecvOff:cmRecvOff+int(wc.ByteLen)]...)
		if err := c.postRecv(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// Close releases the exchange's connection as perftest's process exit does: the QP is destroyed while it is
// still in RTS, then the MR, then the id (the kernel sends the DREQ) and its channel, with no wait for a
// DISCONNECTED that perftest never answers (it never reads its event channel again).
//
// Not rdmacm.Conn.Close, which first moves the QP to ERR: rxe acknowledges a received SEND only after posting
// its completion, so a QP moved to ERR in the microseconds after our last Read saw that completion drops the
// ACK, and the peer, whose retry count is 7 (infinite on rxe), retransmits its last SEND for ever while it
// busy-polls for that send's completion (perftest's rdma_write_keys). That was the teardown hang of
// docs/perftest.md: a C server that printed its result and never exited after a goverbs client.
func (c *cmComm) Close() error {
	var errs []error
	var id *rdmacm.ID
	if c.conn != nil {
		id = c.conn.ID()
		errs = append(errs, id.DestroyQP())
		c.conn = nil
	}
	if c.mr != nil {
		errs = append(errs, c.mr.Close())
		c.mr = nil
	}
	if id != nil {
		errs = append(errs, id.Close(), id.Channel().Close())
	}
	if c.mem != nil {
		errs = append(errs, c.mem.Close())
		c.mem = nil
	}
	return errors.Join(errs...)
}

// encodeDest is rdma_write_keys' record: struct pingpong_dest with every field big-endian (perftest is built
// with HAVE_ENDIAN) and the padding after rkey zero; wide is 6.29's layout, whose tail_markers_vaddr (zero:
// goverbs offers no data validation) shifts the GID and what follows by 8 bytes.
func encodeDest(d *Dest, gidIndex int, wide bool) []byte {
	b := make([]byte, destLen(wide))
	binary.BigEndian.PutUint32(b[0:], uint32(d.LID))
	binary.BigEndian.PutUint32(b[4:], uint32(int32(d.OutReads)))
	binary.BigEndian.PutUint32(b[8:], d.QPN)
	binary.BigEndian.PutUint32(b[12:], d.PSN)
	binary.BigEndian.PutUint32(b[16:], d.RKey)
	binary.BigEndian.PutUint64(b[24:], d.VAddr)
	g := gidOffset(wide)
	copy(b[g:g+16], d.GID[:])
	binary.BigEndian.PutUint32(b[g+16:], d.SRQN)
	binary.BigEndian.PutUint32(b[g+20:], uint32(int32(gidIndex)))
	return b
}

// decodeDest is rdma_read_keys: it takes everything but the SRQ number, the GID index and 6.29's
// tail_markers_vaddr, which perftest ignores (the last without data validation).
func decodeDest(b []byte, wide bool) Dest {
	g := gidOffset(wide)
	return Dest{LID: uint16(binary.BigEndian.Uint32(b[0:])), OutReads: int(int32(binary.BigEndian.Uint32(b[4:]))),
		QPN: binary.BigEndian.Uint32(b[8:]), PSN: binary.BigEndian.Uint32(b[12:]), RKey: binary.BigEndian.Uint32(b[16:]),
		VAddr: binary.BigEndian.Uint64(b[24:]), GID: [16]byte(b[g : g+16])}
}

// gidOffset is where the GID starts in the key record: after vaddr, and after 6.29's tail_markers_vaddr.
func gidOffset(wide bool) int {
	if wide {
		return 40
	}
	return 32
}

// perftest's client connects its rdma_cm QPs up to 10 times, 100 ms apart.
const (
	cmConnectTries = 10
	cmConnectDelay = 100 * time.Millisecond
)

// cmConnectQPs is create_rdma_cm_connection (-R): a handshake, the test QPs made on rdma_cm ids with the
// session's PD and CQs and connected through rdma_cm on the perftest port (the server accepts -q requests and
// sets min_rnr_timer on RC QPs afterwards, as perftest), then another handshake.
func (r *runner) cmConnectQPs() error {
	p, s := r.p, r.sess
	// The server listens before the handshake that precedes the connection, not after it as perftest does:
	// a client that connects as soon as the handshake is over then always finds the listener (perftest's
	// client retries a REJECTED RC connect, but a UD one that comes back UNREACHABLE makes it give up, and
	// its server then waits for ever — seen with the C pair on 7.3).
	if !p.Server {
		if _, err := r.conn.Keys(&Dest{}, p.GIDIndex != -1); err != nil {
			return err
		}
	}
	ch, err := rdmacm.NewChannel()
	if err != nil {
		return err
	}
	var ids []*rdmacm.ID
	s.cmClose = func() {
		if !p.Server {
			for _, id := range ids {
				id.Disconnect()
			}
			for left := len(ids); left > 0; {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				ev, err := ch.GetEvent(ctx)
				cancel()
				if err != nil {
					break
				}
				if ev.Type == rdmacm.EventDisconnected {
					left--
				}
			}
		}
		for _, id := range ids {
			id.DestroyQP()
			id.Close()
		}
		s.qps = nil
		ch.Close()
	}
	var zero uint8
	rr := zero
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		rr = uint8(p.OutReads)
	}
	// UD QPs are connected in the UDP port space (SIDR); when the server sends too (latency tests, duplex
	// bandwidth) the client then tells it its QPN in a SEND_WITH_IMM, as perftest does.
	ps, qpt := rdmacm.PortSpaceTCP, uverbs.QPTypeRC
	udBack := false
	if p.Conn == ConnUD {
		ps, qpt = rdmacm.PortSpaceUDP, uverbs.QPTypeUD
		udBack = p.Kind == KindLat || p.Duplex
	}
	param := &rdmacm.ConnParam{ResponderResources: rr, InitiatorDepth: rr, RetryCount: uint8(p.RetryCount),
		RNRRetryCount: uint8(p.RetryCount)}
	attr := rdmacm.QPInitAttr{PD: s.pd, SendCQ: s.sendCQ, RecvCQ: s.recvCQ, Cap: uverbs.QPCap{
		MaxSendWR: uint32(p.TxDepth), MaxSendSGE: 1, MaxRecvWR: uint32(p.RxDepth), MaxRecvSGE: 1,
		MaxInlineData: uint32(p.InlineSize)}}
	wait := func(want rdmacm.EventType) (*rdmacm.Event, error) {
		ev, err := ch.GetEvent(context.Background())
		if err != nil {
			return nil, err
		}
		if ev.Type != want {
			return ev, fmt.Errorf("RDMA CM event error:\nEvent: %s; error: %d.", ev.Type, ev.Status)
		}
		return ev, nil
	}
	if p.Server {
		host := "0.0.0.0"
		if p.SourceIP != "" {
			host = p.SourceIP
		}
		addr, err := cmAddr(host, p.Port)
		if err != nil {
			return err
		}
		l, err := ch.CreateID(ps, qpt)
		if err != nil {
			return err
		}
		defer l.Close()
		if err := l.Bind(addr); err != nil {
			return err
		}
		if err := l.Listen(p.NumQPs); err != nil {
			return err
		}
		if _, err := r.conn.Keys(&Dest{}, p.GIDIndex != -1); err != nil {
			return err
		}
		for len(ids) < p.NumQPs {
			ev, err := wait(rdmacm.EventConnectRequest)
			if err != nil {
				return err
			}
			id := ev.ID
			ids = append(ids, id)
			qp, err := id.CreateQP(attr)
			if err != nil {
				return err
			}
			if udBack {
				// rdma_cm_request_ud_connection_parameters: a receive for the client's QPN message.
				sge := []uverbs.SGE{{Addr: s.base, Length: udAddition + 4, LKey: s.mr.LKey()}}
				if _, err := qp.PostRecv([]uverbs.RecvWR{{SGL: sge}}); err != nil {
					return fmt.Errorf("Failed to post receive for connection %d for RDMA CM UD request connection parameters.", len(ids)-1)
				}
				param.QPNum = qp.QPN()
			}
			if err := id.Accept(param); err != nil {
				return err
			}
			if p.Conn == ConnRC {
				if err := qp.Modify(uverbs.QPAttr{MinRNRTimer: minRNRTimer}, uverbs.QPAttrMinRNRTimer); err != nil {
					return err
				}
			}
			if udBack {
				if err := s.cmUDFromClient(id, qp); err != nil {
					return err
				}
			}
			s.qps = append(s.qps, qp)
		}
	} else {
		dst, err := cmAddr(p.Servername, p.Port)
		if err != nil {
			return err
		}
		var src netip.AddrPort
		if p.SourceIP != "" {
			if src, err = cmAddr(p.SourceIP, 0); err != nil {
				return err
			}
		}
		// One connection attempt per QP; a failed attempt's id and QP are destroyed.
		connect := func() (*rdmacm.ID, *uverbs.QP, *rdmacm.Event, error) {
			id, err := ch.CreateID(ps, qpt)
			if err != nil {
				return nil, nil, nil, err
			}
			var qp *uverbs.QP
			fail := func(err error) (*rdmacm.ID, *uverbs.QP, *rdmacm.Event, error) {
				if qp != nil {
					id.DestroyQP()
				}
				id.Close()
				return nil, nil, nil, err
			}
			if err := id.ResolveAddr(src, dst, 2000*time.Millisecond); err != nil {
				return fail(err)
			}
			if _, err := wait(rdmacm.EventAddrResolved); err != nil {
				return fail(err)
			}
			if err := id.ResolveRoute(2000 * time.Millisecond); err != nil {
				return fail(err)
			}
			if _, err := wait(rdmacm.EventRouteResolved); err != nil {
				return fail(err)
			}
			if qp, err = id.CreateQP(attr); err != nil {
				return fail(err)
			}
			if err := id.Connect(param); err != nil {
				return fail(err)
			}
			ev, err := wait(rdmacm.EventEstablished)
			if err != nil {
				return fail(err)
			}
			return id, qp, ev, nil
		}
		for i := 0; i < p.NumQPs; i++ {
			// The server creates its listening id only after the handshake both sides just made, so a quick
			// client can be rejected (no listener yet): perftest's client tries 10 times, 100 ms apart
			// (rdma_cm_client_connection), and so does this one.
			var id *rdmacm.ID
			var qp *uverbs.QP
			var ev *rdmacm.Event
			var err error
			for try := 1; ; try++ {
				if id, qp, ev, err = connect(); err == nil {
					break
				}
				if try == cmConnectTries {
					return fmt.Errorf("%v\nFailed to connect RDMA CM client, tried %d times.", err, cmConnectTries)
				}
				time.Sleep(cmConnectDelay)
			}
			ids = append(ids, id)
			s.qps = append(s.qps, qp)
			if p.Conn == ConnUD {
				if err := s.cmUDToServer(qp, ev, udBack); err != nil {
					return err
				}
			}
		}
	}
	_, err = r.conn.Keys(&Dest{}, p.GIDIndex != -1)
	return err
}

// cmUDToServer is rdma_cm_establish_ud_connection on the client: an AH to the server from the ESTABLISHED
// event's UD parameters, its qkey for the test's sends, and (send) the QPN message the server waits for.
func (s *session) cmUDToServer(qp *uverbs.QP, ev *rdmacm.Event, send bool) error {
	ah, err := s.pd.CreateAH(ev.UD.AHAttr)
	if err != nil {
		return fmt.Errorf("Failed to create AH for RDMA CM connection.")
	}
	s.ahs = append(s.ahs, ah)
	s.cmQKey = ev.UD.QKey
	if !send {
		return nil
	}
	wr := []uverbs.SendWR{{Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled, Imm: qp.QPN(),
		SGL: []uverbs.SGE{{Addr: s.base, Length: 4, LKey: s.mr.LKey()}},
		AH:  ah.Data(), RemoteQPN: ev.UD.QPNum, RemoteQKey: ev.UD.QKey}}
	if _, err := qp.PostSend(wr); err != nil {
		return fmt.Errorf("Failed to post send for connection %d for RDMA CM UD send connection parameters.", len(s.ahs)-1)
	}
	wc, err := pollOne(s.sendCQ)
	if err != nil || wc.Status != uverbs.WCSuccess || wc.Opcode != uverbs.WCSend || wc.WRID != 0 {
		return fmt.Errorf("Failed to poll CQ.\nBad WQE status when trying to send UD connection parameters in RDMA CM:\n Status: %d ; ID: %d.", wc.Status, wc.WRID)
	}
	return nil
}

// cmUDFromClient is rdma_cm_initialize_ud_connection_parameters on the server: the client's QPN message gives
// the AH (from its GRH) and the QPN; the qkey is this QP's own (rdma_cm's).
func (s *session) cmUDFromClient(id *rdmacm.ID, qp *uverbs.QP) error {
	wc, err := pollOne(s.recvCQ)
	if err != nil || wc.Status != uverbs.WCSuccess || wc.Opcode&uverbs.WCRecv == 0 || wc.WRID != 0 {
		return fmt.Errorf("Failed to poll CQ.\nBad WQE status when trying to create AH for UD connection in RDMA CM:\n Status: %d ; ID: %d.", wc.Status, wc.WRID)
	}
	attr, err := s.vc.AHAttrFromWC(id.PortNum(), &wc, s.buf.Bytes()[:uverbs.GRHSize])
	if err != nil {
		return err
	}
	ah, err := s.pd.CreateAH(attr)
	if err != nil {
		return err
	}
	s.ahs = append(s.ahs, ah)
	qa, err := qp.Query(uverbs.QPAttrQKey)
	if err != nil {
		return err
	}
	s.cmQKey = qa.QKey
	return nil
}

// pollOne waits for one completion on cq (perftest spins without a bound; this gives up after a minute).
func pollOne(cq *uverbs.CQ) (uverbs.WC, error) {
	wc := make([]uverbs.WC, 1)
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := cq.Poll(wc)
		if err != nil {
			return wc[0], err
		}
		if n == 1 {
			return wc[0], nil
		}
		if time.Now().After(deadline) {
			return wc[0], fmt.Errorf("no completion after a minute")
		}
		runtime.Gosched()
	}
}
