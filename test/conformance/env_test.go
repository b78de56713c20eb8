package conformance

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// The device under test is labtest.Device(): the -device flag (registered by package labtest), $GOVERBS_DEVICE,
// rxe0 in the lab, else the first device.
var (
	portFlag = flag.Int("port", 1, "port of the device under test")
	gidFlag  = flag.Int("gid", -1, "GID index for traffic (-1: the first RoCE v2 IPv4 GID, else the first valid one)")
)

// Default traffic parameters, as rdma-core's tests/base.py sets them.
const (
	pathMTU     = uverbs.MTU1024
	rdAtomic    = 1
	minRNRTimer = 12
	timeout     = 14
	retryCnt    = 7
	rnrRetry    = 7
	udQKey      = 0x11111111
	grhSize     = 40
	iters       = 10   // messages per traffic test (pyverbs uses 10 in most tests)
	msgSize     = 1024 // RC/UC message size
	udMsgSize   = 512  // UD payload (below the path MTU)
)

// hangGuard bounds every wait for a completion so a lost completion fails the test instead of hanging it.
// It is not a timing assertion: on the slowest lab (QEMU TCG) a round trip takes tens of milliseconds.
const hangGuard = 60 * time.Second

// env is one open device context with its queried attributes.
type env struct {
	t    *testing.T
	ctx  *uverbs.Context
	dev  *uverbs.DeviceAttr
	port *uverbs.PortAttr
	pnum int
	gid  uverbs.GIDEntry
	// sharedPD, when set, is the PD every player of this env uses instead of one of its own (an imported PD).
	sharedPD *uverbs.PD
}

// newEnv opens the device under test for t (closed at cleanup, after every object t created).
func newEnv(t *testing.T) *env {
	t.Helper()
	labtest.Require(t)
	ctx, err := uverbs.Open(labtest.Device())
	require.NoError(t, err, "open %s", labtest.Device())
	t.Cleanup(func() { require.NoError(t, ctx.Close(), "close context") })
	dev, err := ctx.QueryDevice()
	require.NoError(t, err)
	port, err := ctx.QueryPort(*portFlag)
	require.NoError(t, err)
	e := &env{t: t, ctx: ctx, dev: dev, port: port, pnum: *portFlag}
	e.gid = e.pickGID()
	return e
}

// pickGID chooses the traffic GID as rdma-core's tests do with --gid: the flag, else the first RoCE v2 GID of an
// IPv4 address (index 1 on a freshly created rxe), else the first valid GID of the port.
func (e *env) pickGID() uverbs.GIDEntry {
	if *gidFlag >= 0 {
		g, err := e.ctx.QueryGID(e.pnum, *gidFlag)
		require.NoError(e.t, err)
		return g
	}
	tbl, err := e.ctx.QueryGIDTable()
	require.NoError(e.t, err)
	var first *uverbs.GIDEntry
	for i := range tbl {
		g := &tbl[i]
		if g.Port != e.pnum || g.GID.IsZero() {
			continue
		}
		if first == nil {
			first = g
		}
		if g.Type == uverbs.GIDTypeRoCEv2 && g.GID.Addr().Is4In6() {
			return *g
		}
	}
	require.NotNil(e.t, first, "port %d has no valid GID", e.pnum)
	return *first
}

// emptyGIDIndex is the first index below limit of the test port's GID table with no entry, or -1.
func (e *env) emptyGIDIndex(limit int) int {
	tbl, err := e.ctx.QueryGIDTable()
	require.NoError(e.t, err)
	used := map[int]bool{}
	for _, g := range tbl {
		if g.Port == e.pnum {
			used[g.Index] = true
		}
	}
	for i := 0; i < limit; i++ {
		if !used[i] {
			return i
		}
	}
	return -1
}

// requireActive skips traffic tests when the port cannot carry traffic, as rdma-core's RDMATestCase does.
func (e *env) requireActive() {
	e.t.Helper()
	if e.port.State != uverbs.PortActive {
		e.t.Skipf("port %d of %s is %v, not ACTIVE: no traffic possible", e.pnum, e.ctx.Name(), e.port.State)
	}
}

// cleanup closes c when the test ends.
func cleanup[T interface{ Close() error }](t *testing.T, c T) T {
	t.Helper()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close %T: %v", c, err)
		}
	})
	return c
}

func (e *env) pd() *uverbs.PD {
	if e.sharedPD != nil {
		return e.sharedPD
	}
	pd, err := e.ctx.AllocPD()
	require.NoError(e.t, err)
	return cleanup(e.t, pd)
}

func (e *env) cq(n int) *uverbs.CQ {
	cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: n})
	require.NoError(e.t, err)
	return cleanup(e.t, cq)
}

func (e *env) buffer(n int) *uverbs.Buffer {
	b, err := uverbs.AllocBuffer(n)
	require.NoError(e.t, err)
	return cleanup(e.t, b)
}

// skipIfUnsupported skips when err says the device lacks the feature, as pyverbs does on EOPNOTSUPP.
func skipIfUnsupported(t *testing.T, err error, what string) {
	t.Helper()
	if errors.Is(err, uverbs.ErrNotSupported) {
		t.Skipf("%s is not supported by the device: %v", what, err)
	}
}

// playerOpts describe one side of a loopback pair (pyverbs' "resources").
type playerOpts struct {
	qpType   uverbs.QPType
	mrAccess uverbs.Access
	qpAccess uverbs.Access
	msgSize  int
	cqDepth  int
	cap      uverbs.QPCap
	channel  *uverbs.CompChannel
	srq      bool
	zero     bool                 // zero-length messages (pyverbs' *_zero_size tests)
	noRNR    bool                 // rnr_retry 0: the first RNR NAK fails the send
	cqEx     bool                 // an extended CQ (CreateCQEx with the standard fields), polled with StartPoll … EndPoll
	cqFlags  uverbs.CQCreateFlags // its creation flags
	sendOps  uverbs.SendOps       // an extended QP: post goes through its work-request builder
	viaCM    bool                 // no QP yet: pairCM creates it on the player's rdma_cm id (iWARP)
}

func (o *playerOpts) defaults() {
	if o.qpType == 0 {
		o.qpType = uverbs.QPTypeRC
	}
	if o.mrAccess == 0 {
		o.mrAccess = uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic
	}
	if o.qpAccess == 0 {
		o.qpAccess = uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic
	}
	if o.msgSize == 0 && !o.zero {
		o.msgSize = msgSize
		if o.qpType == uverbs.QPTypeUD {
			o.msgSize = udMsgSize
		}
	}
	if o.cqDepth == 0 {
		o.cqDepth = 100
	}
	if o.cap == (uverbs.QPCap{}) {
		o.cap = uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	}
}

// player is one side of a loopback pair: PD, CQ, QP and a registered buffer. The buffer is laid out as
// [send area | receive area]; UD receive areas are GRH + message.
type player struct {
	e    *env
	o    playerOpts
	pd   *uverbs.PD
	cq   *uverbs.CQ
	srq  *uverbs.SRQ
	qp   *uverbs.QP
	buf  *uverbs.Buffer
	mr   *uverbs.MR
	peer *player
	ah   *uverbs.AH // UD: address of the peer
	psn  uint32
	// rkey, when set, is the key peers use for this player's memory instead of its MR's (a memory window).
	rkey uint32
}

// remoteKey is the key peers use to reach this player's receive area.
func (p *player) remoteKey() uint32 {
	if p.rkey != 0 {
		return p.rkey
	}
	return p.mr.RKey()
}

func (e *env) newPlayer(o playerOpts) *player {
	e.t.Helper()
	o.defaults()
	if e.iwarp() {
		switch {
		case o.qpType == uverbs.QPTypeUD:
			e.skipIWARP(gapUD)
		case o.qpType == uverbs.QPTypeUC:
			e.skipIWARP(gapUC)
		case o.sendOps != 0:
			e.skipIWARP(gapExtQP)
		}
	}
	p := &player{e: e, o: o}
	p.pd = e.pd()
	var cq *uverbs.CQ
	var err error
	if o.cqEx {
		cq, err = e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: o.cqDepth, Channel: o.channel, WCFlags: uverbs.WCStandardFlags, Flags: o.cqFlags})
	} else {
		cq, err = e.ctx.CreateCQ(uverbs.CQAttr{CQE: o.cqDepth, Channel: o.channel})
	}
	require.NoError(e.t, err)
	p.cq = cleanup(e.t, cq)
	p.buf = e.buffer(2*o.msgSize + grhSize + 64)
	mr, err := p.pd.RegMR(p.buf.Bytes(), o.mrAccess)
	require.NoError(e.t, err)
	p.mr = cleanup(e.t, mr)
	init := uverbs.QPInitAttr{Type: o.qpType, SendCQ: p.cq, RecvCQ: p.cq, Cap: o.cap, SendOps: o.sendOps}
	if o.srq {
		srq, err := p.pd.CreateSRQ(uverbs.SRQAttr{MaxWR: 64, MaxSGE: 1})
		skipIfUnsupported(e.t, err, "SRQ")
		require.NoError(e.t, err)
		p.srq = cleanup(e.t, srq)
		init.SRQ = srq
	}
	if o.viaCM {
		return p
	}
	qp, err := p.pd.CreateQP(init)
	skipIfUnsupported(e.t, err, fmt.Sprintf("QP type %d", o.qpType))
	require.NoError(e.t, err)
	p.qp = cleanup(e.t, qp)
	p.psn = qp.QPN() & 0xffffff // any PSN; a distinct one per side
	return p
}

// pair creates two players and connects them to each other (pyverbs' create_players + pre_run).
func (e *env) pair(o playerOpts) (client, server *player) {
	e.t.Helper()
	e.requireActive()
	if e.iwarp() {
		return e.pairCM(o)
	}
	client, server = e.newPlayer(o), e.newPlayer(o)
	client.connect(server)
	server.connect(client)
	return client, server
}

func (p *player) ahAttr() uverbs.AHAttr {
	return uverbs.AHAttr{IsGlobal: true, PortNum: uint8(p.e.pnum),
		GRH: uverbs.GlobalRoute{DGID: p.e.gid.GID, SGIDIndex: uint8(p.e.gid.Index), HopLimit: 1}}
}

// toInit moves the QP RESET->INIT with the attributes its type needs (for the state-machine cases that stop
// there; connect brings a QP all the way with the library's Connect / ActivateUD).
func (p *player) toInit() error {
	a := &uverbs.QPAttr{State: uverbs.QPStateInit, PKeyIndex: 0, PortNum: uint8(p.e.pnum)}
	mask := uverbs.QPAttrState | uverbs.QPAttrPKeyIndex | uverbs.QPAttrPort
	if p.o.qpType == uverbs.QPTypeUD {
		a.QKey = udQKey
		mask |= uverbs.QPAttrQKey
	} else {
		a.AccessFlags = p.o.qpAccess
		mask |= uverbs.QPAttrAccessFlags
	}
	return p.qp.Modify(*a, mask)
}

// endpoint is the player's half of a connection: its QP's Endpoint on the suite's port and GID, with the
// player's PSN and the suite's Q_Key.
func (p *player) endpoint() uverbs.Endpoint {
	ep, err := p.qp.Endpoint(&uverbs.EndpointOptions{Port: p.e.pnum, GIDIndex: p.e.gid.Index, PSN: p.psn, QKey: udQKey})
	require.NoError(p.e.t, err)
	return ep
}

// connect brings the QP to RTS towards remote with the library's one-call set-up (uverbs.QP.Connect, or
// ActivateUD and an AH of remote for UD) and pyverbs' attributes.
func (p *player) connect(remote *player) {
	t := p.e.t
	t.Helper()
	p.e.skipIWARP(gapHandConnect)
	p.peer = remote
	p.endpoint()
	if p.o.qpType == uverbs.QPTypeUD {
		require.NoError(t, p.qp.ActivateUD(nil))
		attr, err := p.qp.AHAttrTo(remote.endpoint())
		require.NoError(t, err)
		ah, err := p.pd.CreateAH(attr)
		require.NoError(t, err)
		p.ah = cleanup(t, ah)
		return
	}
	o := uverbs.DefaultConnectOptions()
	o.MTU, o.Access = pathMTU, p.o.qpAccess
	if p.o.noRNR {
		o.RNRRetry = 0
	}
	require.NoError(t, p.qp.Connect(remote.endpoint(), &o))
}

// restate moves an errored QP back to RTS: RESET, then INIT, RTR, RTS (pyverbs' restate_qps).
func (p *player) restate() {
	t := p.e.t
	t.Helper()
	p.e.skipIWARP(gapHandConnect)
	require.NoError(t, p.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateReset}, uverbs.QPAttrState))
	p.connect(p.peer)
}

// sendOff and recvOff locate the two halves of the player's buffer.
func (p *player) sendOff() int { return 0 }
func (p *player) recvOff() int { return p.o.msgSize + 64 }

func (p *player) sendSGE(n int) []uverbs.SGE {
	if n == 0 {
		return nil
	}
	return []uverbs.SGE{p.mr.SGE(p.sendOff(), n)}
}

func (p *player) recvLen() int {
	if p.o.qpType == uverbs.QPTypeUD {
		return p.o.msgSize + grhSize
	}
	return p.o.msgSize
}

// postRecv posts one receive of the whole receive area.
func (p *player) postRecv(wrid uint64) {
	t := p.e.t
	t.Helper()
	wr := []uverbs.RecvWR{{WRID: wrid}}
	if p.recvLen() > 0 {
		wr[0].SGL = []uverbs.SGE{p.mr.SGE(p.recvOff(), p.recvLen())}
	}
	var err error
	if p.srq != nil {
		_, err = p.srq.PostRecv(wr)
	} else {
		_, err = p.qp.PostRecv(wr)
	}
	require.NoError(t, err)
}

// sendWR is a send of n bytes from the send area to the peer.
func (p *player) sendWR(op uverbs.WROpcode, n int) uverbs.SendWR {
	wr := uverbs.SendWR{WRID: uint64(op)<<32 | 1, Opcode: op, Flags: uverbs.SendSignaled, SGL: p.sendSGE(n)}
	if p.o.qpType == uverbs.QPTypeUD {
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = p.ah.Data(), p.peer.qp.QPN(), udQKey
	}
	return wr
}

// post posts wr with PostSend, or, on an extended QP (playerOpts.sendOps), builds it with the QP's work-request
// builder: the operation's method, SetInlineData for an inline request (its bytes read from the send area),
// SetSGEList otherwise, SetUDAddr on UD.
func (p *player) post(wr uverbs.SendWR) {
	p.e.t.Helper()
	if p.o.sendOps == 0 {
		_, err := p.qp.PostSend([]uverbs.SendWR{wr})
		require.NoError(p.e.t, err, "post %v", wr.Opcode)
		return
	}
	require.NoError(p.e.t, p.build(p.qp.StartWR(), wr).Complete(), "build and complete %v", wr.Opcode)
}

// build adds wr to the chain b through the builder's methods.
func (p *player) build(b *uverbs.WRBuilder, wr uverbs.SendWR) *uverbs.WRBuilder {
	flags := wr.Flags &^ uverbs.SendInline
	switch wr.Opcode {
	case uverbs.WRSend:
		b.Send(wr.WRID, flags)
	case uverbs.WRSendWithImm:
		b.SendImm(wr.WRID, flags, wr.Imm)
	case uverbs.WRSendWithInv:
		b.SendInv(wr.WRID, flags, wr.Imm)
	case uverbs.WRRDMAWrite:
		b.RDMAWrite(wr.WRID, flags, wr.RKey, wr.RemoteAddr)
	case uverbs.WRRDMAWriteWithImm:
		b.RDMAWriteImm(wr.WRID, flags, wr.RKey, wr.RemoteAddr, wr.Imm)
	case uverbs.WRRDMARead:
		b.RDMARead(wr.WRID, flags, wr.RKey, wr.RemoteAddr)
	case uverbs.WRAtomicCmpAndSwp:
		b.AtomicCmpSwp(wr.WRID, flags, wr.RKey, wr.RemoteAddr, wr.CompareAdd, wr.Swap)
	case uverbs.WRAtomicFetchAndAdd:
		b.AtomicFetchAdd(wr.WRID, flags, wr.RKey, wr.RemoteAddr, wr.CompareAdd)
	case uverbs.WRAtomicWrite:
		b.AtomicWrite(wr.WRID, flags, wr.RKey, wr.RemoteAddr, wr.Swap)
	case uverbs.WRFlush:
		b.Flush(wr.WRID, flags, wr.RKey, wr.RemoteAddr, wr.Flush.Length, wr.Flush.Type, wr.Flush.Level)
	case uverbs.WRLocalInv:
		b.LocalInv(wr.WRID, flags, wr.Imm)
	default:
		p.e.t.Fatalf("no builder counterpart for %v", wr.Opcode)
	}
	if wr.Flags&uverbs.SendInline != 0 {
		var bufs [][]byte
		for _, s := range wr.SGL {
			off := int(s.Addr - p.mr.Addr())
			bufs = append(bufs, p.buf.Bytes()[off:off+int(s.Length)])
		}
		b.SetInlineDataList(bufs)
	} else if wr.Opcode != uverbs.WRFlush && wr.Opcode != uverbs.WRLocalInv {
		b.SetSGEList(wr.SGL)
	}
	if wr.AH != nil {
		b.SetUDAddr(p.ah, wr.RemoteQPN, wr.RemoteQKey)
	}
	return b
}

// poll waits for n completions on cq (bounded by hangGuard) and returns them.
func poll(t *testing.T, cq *uverbs.CQ, n int) []uverbs.WC {
	t.Helper()
	wcs := make([]uverbs.WC, n)
	got := 0
	deadline := time.Now().Add(hangGuard)
	for got < n {
		var k int
		var err error
		if cq.Extended() {
			k, err = pollEx(cq, wcs[got:])
		} else {
			k, err = cq.Poll(wcs[got:])
		}
		require.NoError(t, err, "poll CQ")
		got += k
		if got < n {
			if time.Now().After(deadline) {
				t.Fatalf("got %d of %d completions within %v", got, n, hangGuard)
			}
			runtime.Gosched()
		}
	}
	return wcs
}

// pollEx is Poll through an extended CQ's StartPoll, NextPoll and EndPoll: up to len(wcs) completions.
func pollEx(cq *uverbs.CQ, wcs []uverbs.WC) (int, error) {
	wc, err := cq.StartPoll()
	if wc == nil {
		return 0, err
	}
	n := 0
	for ; wc != nil; n++ {
		wcs[n] = *wc
		if n+1 == len(wcs) {
			n++
			break
		}
		wc, err = cq.NextPoll()
	}
	cq.EndPoll()
	return n, err
}

// pollOne waits for one completion.
func pollOne(t *testing.T, cq *uverbs.CQ) uverbs.WC {
	t.Helper()
	return poll(t, cq, 1)[0]
}

// requireSuccess fails unless every completion succeeded.
func requireSuccess(t *testing.T, wcs ...uverbs.WC) {
	t.Helper()
	for _, wc := range wcs {
		require.Equal(t, uverbs.WCSuccess, wc.Status, "completion %+v: %s", wc, wc.Status.String())
	}
}

// requireStatus fails unless wc has status want.
func requireStatus(t *testing.T, want uverbs.WCStatus, wc uverbs.WC) {
	t.Helper()
	require.Equal(t, want.String(), wc.Status.String(), "completion %+v", wc)
}

// requireStatusIn fails unless wc has one of the statuses in want (devices differ in which of the spec's
// statuses they report for some errors; the accepted set is named per case).
func requireStatusIn(t *testing.T, wc uverbs.WC, want ...uverbs.WCStatus) {
	t.Helper()
	for _, w := range want {
		if wc.Status == w {
			return
		}
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = w.String()
	}
	t.Fatalf("completion %+v: status %q, want one of %q", wc, wc.Status.String(), names)
}

// requireErrno fails unless err wraps errno.
func requireErrno(t *testing.T, err error, errno unix.Errno, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.ErrorIs(t, err, errno, msgAndArgs...)
}

// fill writes a recognisable pattern for message i into b.
func fill(b []byte, i int) {
	for k := range b {
		b[k] = byte(i + k)
	}
}

// checkFill verifies the pattern of fill.
// awaitFill waits (bounded by hangGuard) until b holds fill's pattern i, then checks it.
func awaitFill(t *testing.T, b []byte, i int) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); runtime.Gosched() {
		if filled(b, i) {
			return
		}
	}
	checkFill(t, b, i)
}

// fillMismatch is the first k where b[k] is not fill's byte(i+k), or -1.
func fillMismatch(b []byte, i int) int {
	for k := range b {
		if b[k] != byte(i+k) {
			return k
		}
	}
	return -1
}

func filled(b []byte, i int) bool { return fillMismatch(b, i) < 0 }

func checkFill(t *testing.T, b []byte, i int) {
	t.Helper()
	if k := fillMismatch(b, i); k >= 0 {
		t.Fatalf("message %d byte %d: got %#x want %#x", i, k, b[k], byte(i+k))
	}
}

// eachWay runs pyverbs' traffic rounds: iters of them, each a message from client to server, then one from
// server to client; step gets the round and the sending and receiving player.
func eachWay(client, server *player, step func(i int, s, r *player)) {
	for i := 0; i < iters; i++ {
		step(i, client, server)
		step(i, server, client)
	}
}

// traffic is pyverbs' u.traffic: iters messages client->server then server->client, each received, polled and
// checked. op is WRSend or WRSendWithImm (or WRRDMAWriteWithImm, which consumes a receive).
func traffic(t *testing.T, client, server *player, op uverbs.WROpcode) {
	t.Helper()
	if op == uverbs.WRSendWithImm || op == uverbs.WRRDMAWriteWithImm {
		client.e.skipIWARP(gapImm)
	}
	eachWay(client, server, func(i int, s, r *player) {
		n := s.o.msgSize
		r.postRecv(uint64(i))
		fill(s.buf.Bytes()[s.sendOff():s.sendOff()+n], i)
		wr := s.sendWR(op, n)
		if op == uverbs.WRSendWithImm || op == uverbs.WRRDMAWriteWithImm {
			wr.Imm = uint32(0x1000 + i)
		}
		if op == uverbs.WRRDMAWriteWithImm {
			wr.RemoteAddr, wr.RKey = r.mr.IOVA()+uint64(r.recvOff()), r.remoteKey()
		}
		s.post(wr)
		swc := pollOne(t, s.cq)
		rwc := pollOne(t, r.cq)
		requireSuccess(t, swc, rwc)
		require.Equal(t, uint64(i), rwc.WRID)
		require.Equal(t, wr.WRID, swc.WRID)
		require.Equal(t, r.qp.QPN(), rwc.QPNum)
		require.Equal(t, s.qp.QPN(), swc.QPNum)
		switch op {
		case uverbs.WRRDMAWriteWithImm:
			require.Equal(t, uverbs.WCRecvRDMAWithImm, rwc.Opcode)
		default:
			require.Equal(t, uverbs.WCRecv, rwc.Opcode)
			want := uint32(n)
			if r.o.qpType == uverbs.QPTypeUD {
				want += grhSize
			}
			require.Equal(t, want, rwc.ByteLen)
		}
		if op != uverbs.WRSend {
			require.NotZero(t, rwc.Flags&uverbs.WCWithImm, "completion %+v lacks immediate data", rwc)
			require.Equal(t, uint32(0x1000+i), rwc.Imm)
		}
		got := r.buf.Bytes()[r.recvOff():]
		if r.o.qpType == uverbs.QPTypeUD {
			require.NotZero(t, rwc.Flags&uverbs.WCWithGRH, "UD receive without GRH: %+v", rwc)
			require.Equal(t, s.qp.QPN(), rwc.SrcQP)
			got = got[grhSize:]
		}
		checkFill(t, got[:n], i)
	})
}

// rdmaTraffic is pyverbs' u.rdma_traffic for RDMA WRITE and READ: iters operations each way on the peer's
// receive area, each polled and the data checked at the destination.
func rdmaTraffic(t *testing.T, client, server *player, op uverbs.WROpcode) {
	t.Helper()
	eachWay(client, server, func(i int, s, r *player) {
		n := s.o.msgSize
		wr := s.sendWR(op, n)
		wr.RemoteAddr, wr.RKey = r.mr.IOVA()+uint64(r.recvOff()), r.remoteKey()
		if op == uverbs.WRRDMARead {
			fill(r.buf.Bytes()[r.recvOff():r.recvOff()+n], i)
		} else {
			fill(s.buf.Bytes()[s.sendOff():s.sendOff()+n], i)
		}
		s.post(wr)
		requireSuccess(t, pollOne(t, s.cq))
		switch {
		case op == uverbs.WRRDMARead:
			checkFill(t, s.buf.Bytes()[s.sendOff():s.sendOff()+n], i)
		case s.o.qpType == uverbs.QPTypeUC:
			// UC has no acknowledgements: the requester's completion says the message left, not that the
			// responder placed it (rxe on 6.5+ runs the responder from a workqueue that can lag). Wait for
			// the bytes, bounded.
			awaitFill(t, r.buf.Bytes()[r.recvOff():r.recvOff()+n], i)
		default:
			checkFill(t, r.buf.Bytes()[r.recvOff():r.recvOff()+n], i)
		}
	})
}

// rdmaWriteOnce posts one RDMA WRITE of n bytes from s to r (rkey, raddr) and returns its completion.
func rdmaWriteOnce(t *testing.T, s *player, rkey uint32, raddr uint64, n int) uverbs.WC {
	t.Helper()
	wr := s.sendWR(uverbs.WRRDMAWrite, n)
	wr.RemoteAddr, wr.RKey = raddr, rkey
	s.post(wr)
	return pollOne(t, s.cq)
}
