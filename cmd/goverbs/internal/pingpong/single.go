package pingpong

import (
	"github.com/goverbs/goverbs/uverbs/ibvtext"

	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// udQKey is the Q_Key ud_pingpong gives its QP and its sends.
const udQKey = 0x11111111

// grhSize is the room a UD receive leaves in front of the payload for the Global Routing Header.
const grhSize = 40

// pp is the state of one single-QP pingpong run (struct pingpong_context of rc, uc and ud_pingpong).
type pp struct {
	kind      kind
	ctx       *uverbs.Context
	channel   *uverbs.CompChannel
	pd        *uverbs.PD // with -U, a parent domain on basePD
	basePD    *uverbs.PD // -U only
	buf       *uverbs.Buffer
	mr        *uverbs.MR
	cq        *uverbs.CQ
	qp        *uverbs.QP
	ah        *uverbs.AH // ud only
	remQPN    uint32     // ud only: the destination of every send
	size      int
	rxDepth   int
	sendFlags uverbs.SendFlags
	pending   int
	newSend   bool // -N: sends go through the QP's work-request builder (ibv_wr_* in rc_pingpong)

	sendWR  [1]uverbs.SendWR
	recvWR  [1]uverbs.RecvWR
	sendSGE [1]uverbs.SGE
	recvSGE [1]uverbs.SGE
}

// payloadOff is where the message starts in the buffer: UD receives put the GRH first.
func (c *pp) payloadOff() int {
	if c.kind == kindUD {
		return grhSize
	}
	return 0
}

// payload is the bytes a send carries and a receive's message lands in.
func (c *pp) payload() []byte {
	off := c.payloadOff()
	return c.buf.Bytes()[off : off+c.size]
}

func (c *pp) close() {
	c.qp.Close()
	c.cq.Close()
	c.mr.Close()
	c.ah.Close()
	c.pd.Close()
	c.basePD.Close()
	c.channel.Close()
	c.ctx.Close()
	c.buf.Close()
}

// initSingle is pp_init_ctx of rc, uc and ud_pingpong.
func initSingle(dev uverbs.Device, k kind, o *options, stderr io.Writer) *pp {
	c := &pp{kind: k, size: o.size, rxDepth: o.rxDepth, sendFlags: uverbs.SendSignaled}
	var err error
	n := o.size + c.payloadOff()
	if n == 0 {
		n = 1
	}
	if c.buf, err = uverbs.AllocBuffer(n); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate work buf.\n")
		return nil
	}
	mem := c.buf.Bytes()
	for i := range mem {
		mem[i] = 0x7b
	}
	fail := func(msg string) *pp {
		fmt.Fprintf(stderr, "%s\n", msg)
		c.close()
		return nil
	}
	if c.ctx, err = dev.Open(); err != nil {
		return fail("Couldn't get context for " + dev.Name)
	}
	if k == kindUD {
		pa, err := c.ctx.QueryPort(o.ibPort)
		if err != nil {
			return fail(fmt.Sprintf("Unable to query port info for port %d", o.ibPort))
		}
		// 1 << (active_mtu + 7), compared with the size as a C int.
		if mtu := 1 << (int(pa.ActiveMTU) + 7); int(int32(o.size)) > mtu {
			return fail(fmt.Sprintf("Requested size larger than port MTU (%d)", mtu))
		}
	}
	if o.events {
		if c.channel, err = c.ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: uverbs.WaitRead}); err != nil {
			return fail("Couldn't create completion channel")
		}
	}
	if o.ccUnprotected {
		// rdma-core 65's -U: a parent domain on a base PD, allowing unprotected (shared) memory in
		// confidential-computing guests; the CQ is made in it. Providers without parent domains (rxe)
		// refuse it, in C and here.
		if c.basePD, err = c.ctx.AllocPD(); err != nil {
			return fail("Couldn't allocate base PD")
		}
		if c.pd, err = c.ctx.AllocParentDomain(uverbs.ParentDomainAttr{PD: c.basePD, AllowCCUnprotected: true}); err != nil {
			return fail("Couldn't allocate parent domain")
		}
	} else if c.pd, err = c.ctx.AllocPD(); err != nil {
		return fail("Couldn't allocate PD")
	}
	if o.odp || o.ts || o.dm {
		da, err := c.ctx.QueryDevice()
		if err != nil {
			return fail("Couldn't query device for its features")
		}
		const need = uverbs.ODPSend | uverbs.ODPRecv
		if o.odp && (da.ODPGeneralCaps&uverbs.ODPSupport == 0 || da.ODPRCCaps&need != need) {
			return fail("The device isn't ODP capable or does not support RC send and receive with ODP")
		}
		if o.implicit && da.ODPGeneralCaps&uverbs.ODPSupportImplicit == 0 {
			return fail("The device doesn't support implicit ODP")
		}
		if o.ts && da.TimestampMask == 0 {
			return fail("The device isn't completion timestamp capable")
		}
		if o.dm && da.MaxDMSize == 0 {
			return fail("Device doesn't support dm allocation")
		}
	}
	access := uverbs.AccessLocalWrite
	if o.odp {
		access |= uverbs.AccessOnDemand
	}
	if c.mr, err = c.pd.RegMR(c.buf.Bytes(), access); err != nil {
		return fail("Couldn't register MR")
	}
	if o.prefetch {
		// rc_pingpong -P: a synchronous PREFETCH_WRITE of the message's bytes; a failure is only reported.
		// rdma-core has rxe's advise_mr from v59: bookworm's 44 always prints EOPNOTSUPP (95) here on rxe, goverbs
		// asks the kernel (rxe prefetches from Linux 6.17).
		if err := c.pd.AdviseMR(uverbs.AdvicePrefetchWrite, uverbs.AdviseMRFlush, []uverbs.SGE{c.mr.SGE(0, o.size)}); err != nil {
			errno := -1
			var e unix.Errno
			if errors.As(err, &e) {
				errno = int(e)
			}
			fmt.Fprintf(stderr, "Couldn't prefetch MR(%d). Continue anyway\n", errno)
		}
	}
	if o.ccUnprotected {
		c.cq, err = c.ctx.CreateCQEx(uverbs.CQExAttr{CQE: o.rxDepth + 1, Channel: c.channel, ParentDomain: c.pd})
	} else {
		c.cq, err = c.ctx.CreateCQ(uverbs.CQAttr{CQE: o.rxDepth + 1, Channel: c.channel})
	}
	if err != nil {
		return fail("Couldn't create CQ")
	}
	qpType := map[kind]uverbs.QPType{kindRC: uverbs.QPTypeRC, kindUC: uverbs.QPTypeUC, kindUD: uverbs.QPTypeUD}[k]
	// -N: rc_pingpong creates the QP with ibv_create_qp_ex and IBV_QP_EX_WITH_SEND, and posts with ibv_wr_*.
	var sendOps uverbs.SendOps
	if o.newSend {
		sendOps, c.newSend = uverbs.SendOpSend, true
	}
	c.qp, err = c.pd.CreateQP(uverbs.QPInitAttr{Type: qpType, SendCQ: c.cq, RecvCQ: c.cq, SendOps: sendOps,
		Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: uint32(o.rxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return fail("Couldn't create QP")
	}
	if qa, err := c.qp.Query(uverbs.QPAttrCap); err == nil && int(qa.Cap.MaxInlineData) >= o.size {
		c.sendFlags |= uverbs.SendInline
	}
	init := &uverbs.QPAttr{State: uverbs.QPStateInit, PKeyIndex: 0, PortNum: uint8(o.ibPort)}
	mask := uverbs.QPAttrState | uverbs.QPAttrPKeyIndex | uverbs.QPAttrPort
	if k == kindUD {
		init.QKey = udQKey
		mask |= uverbs.QPAttrQKey
	} else {
		mask |= uverbs.QPAttrAccessFlags
	}
	if err := c.qp.Modify(*init, mask); err != nil {
		return fail("Failed to modify QP to INIT")
	}
	// A UD receive takes the GRH and the message; a UD send carries the message from behind the GRH room.
	c.recvSGE[0] = c.mr.SGE(0, o.size+c.payloadOff())
	c.sendSGE[0] = c.mr.SGE(c.payloadOff(), o.size)
	c.recvWR[0] = uverbs.RecvWR{WRID: recvWRID, SGL: c.recvSGE[:]}
	return c
}

func (c *pp) postRecv(n int) int {
	i := 0
	for ; i < n; i++ {
		if _, err := c.qp.PostRecv(c.recvWR[:]); err != nil {
			break
		}
	}
	return i
}

func (c *pp) postSend() error {
	if c.newSend {
		s := &c.sendSGE[0]
		return c.qp.StartWR().Send(sendWRID, c.sendFlags).SetSGE(s.LKey, s.Addr, s.Length).Complete()
	}
	c.sendWR[0] = uverbs.SendWR{WRID: sendWRID, SGL: c.sendSGE[:], Opcode: uverbs.WRSend, Flags: c.sendFlags}
	if c.kind == kindUD {
		c.sendWR[0].AH, c.sendWR[0].RemoteQPN, c.sendWR[0].RemoteQKey = c.ah.Data(), c.remQPN, udQKey
	}
	_, err := c.qp.PostSend(c.sendWR[:])
	return err
}

// remoteAV is the address of the remote side as the tools build it: its LID, and its GID only when the GID's
// interface id (the low 8 bytes) is set, with hop limit 1 (ud_pingpong: 64 since rdma-core 45).
func remoteAV(o *options, rem *dest) uverbs.AHAttr {
	av := uverbs.AHAttr{DLID: uint16(rem.lid), SL: uint8(o.sl), PortNum: uint8(o.ibPort)}
	var zero [8]byte
	if [8]byte(rem.gid[8:]) != zero {
		av.IsGlobal = true
		av.GRH.HopLimit = 1
		if o.udHopLimit {
			av.GRH.HopLimit = 64
		}
		av.GRH.DGID = rem.gid
		av.GRH.SGIDIndex = uint8(o.gidx)
	}
	return av
}

// connect is pp_connect_ctx: RC and UC move the QP to RTR and RTS towards the remote QP (RC with its
// read/atomic and retry settings), UD moves it to RTS and creates the address handle of the remote side. The
// error's text is the message the tool prints.
func (c *pp) connect(o *options, myPSN int, rem *dest) error {
	if c.kind == kindUD {
		if err := c.qp.Modify(uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
			return errors.New("Failed to modify QP to RTR")
		}
		rts := &uverbs.QPAttr{State: uverbs.QPStateRTS, SQPSN: uint32(myPSN)}
		if err := c.qp.Modify(*rts, uverbs.QPAttrState|uverbs.QPAttrSQPSN); err != nil {
			return errors.New("Failed to modify QP to RTS")
		}
		ah, err := c.pd.CreateAH(remoteAV(o, rem))
		if err != nil {
			return errors.New("Failed to create AH")
		}
		c.ah, c.remQPN = ah, uint32(rem.qpn)
		return nil
	}
	rtr := &uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: o.mtu, DestQPN: uint32(rem.qpn), RQPSN: uint32(rem.psn),
		AHAttr: remoteAV(o, rem)}
	mask := uverbs.QPAttrState | uverbs.QPAttrAV | uverbs.QPAttrPathMTU | uverbs.QPAttrDestQPN | uverbs.QPAttrRQPSN
	if c.kind == kindRC {
		rtr.MaxDestRdAtomic, rtr.MinRNRTimer = 1, 12
		mask |= uverbs.QPAttrMaxDestRdAtomic | uverbs.QPAttrMinRNRTimer
	}
	if err := c.qp.Modify(*rtr, mask); err != nil {
		return errors.New("Failed to modify QP to RTR")
	}
	rts := *rtr
	rts.State, rts.SQPSN = uverbs.QPStateRTS, uint32(myPSN)
	mask = uverbs.QPAttrState | uverbs.QPAttrSQPSN
	if c.kind == kindRC {
		rts.Timeout, rts.RetryCnt, rts.RNRRetry, rts.MaxRdAtomic = 14, 7, 7, 1
		mask |= uverbs.QPAttrTimeout | uverbs.QPAttrRetryCnt | uverbs.QPAttrRNRRetry | uverbs.QPAttrMaxQPRdAtomic
	}
	if err := c.qp.Modify(rts, mask); err != nil {
		return errors.New("Failed to modify QP to RTS")
	}
	return nil
}

// runSingle is main() of rc, uc and ud_pingpong after option parsing.
func runSingle(k kind, o *options, stdout, stderr io.Writer) int {
	pageSize := os.Getpagesize()
	dev, ok := findDevice(o.devName, stderr)
	if !ok {
		return 1
	}
	c := initSingle(dev, k, o, stderr)
	if c == nil {
		return 1
	}
	routs, pa, ok := startRecv(c.postRecv, c.rxDepth, c.ctx, c.cq, o, stderr)
	if !ok {
		return 1
	}
	var err error
	my := dest{lid: int(pa.LID)}
	if k != kindUD && pa.LinkLayer != uverbs.LinkLayerEthernet && my.lid == 0 {
		fmt.Fprintf(stderr, "Couldn't get local LID\n")
		return 1
	}
	my.qpn = int(c.qp.QPN())
	my.psn = int(rand.Int31() & 0xffffff)
	if o.gidx >= 0 {
		if my.gid, err = queryGID(c.ctx, o.ibPort, o.gidx); err != nil {
			if k == kindUD {
				fmt.Fprintf(stderr, "Could not get local gid for gid index %d\n", o.gidx)
			} else {
				fmt.Fprintf(stderr, "can't read sgid of index %d\n", o.gidx)
			}
			return 1
		}
	}
	sep := ","
	if k == kindUD {
		sep = ":" // ud_pingpong's local line has a colon before the GID
	}
	printDest(stdout, "local address: ", &my, sep)

	var rem *dest
	if o.server != "" {
		rem, ok = clientExchange(o.server, int(o.port), my, stderr)
	} else {
		rem, ok = serverExchange(int(o.port), my, func(rem *dest) error { return c.connect(o, my.psn, rem) }, stderr)
	}
	if !ok {
		return 1
	}
	printDest(stdout, "remote address:", rem, ",")
	if o.server != "" {
		if err := c.connect(o, my.psn, rem); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
	}

	c.pending = recvWRID
	if o.server != "" {
		if o.validate {
			markPages(c.payload(), pageSize)
		}
		if err := c.postSend(); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send\n")
			return 1
		}
		c.pending |= sendWRID
	}

	var wc [2]uverbs.WC
	elapsed, numEvents, ok := pingLoop(o, c.channel, c.cq, wc[:], func(wc *uverbs.WC, ne int, scnt, rcnt *int) bool {
		if !c.parseWC(wc, scnt, rcnt, &routs, o.iters, stderr) {
			if k == kindRC {
				fmt.Fprintf(stderr, "parse WC failed %d\n", ne)
			}
			return false
		}
		return true
	}, stderr)
	if !ok {
		return 1
	}
	steps := []closeStep{{c.qp.Close, "Couldn't destroy QP"}, {c.cq.Close, "Couldn't destroy CQ"},
		{c.mr.Close, "Couldn't deregister MR"}}
	if k == kindUD {
		steps = append(steps, closeStep{c.ah.Close, "Couldn't destroy AH"})
	}
	steps = append(steps, closeStep{c.pd.Close, "Couldn't deallocate PD"}, closeStep{c.basePD.Close, "Couldn't deallocate base PD"},
		closeStep{c.channel.Close, "Couldn't destroy completion channel"}, closeStep{c.ctx.Close, "Couldn't release context"})
	return finish(o, stdout, stderr, elapsed, numEvents, c.cq, c.payload(), steps, c.buf)
}

// parseWC handles one completion (rc_pingpong's parse_single_wc, inline in uc and ud_pingpong): count it,
// replenish receives, and post the next send once both the previous send and receive have completed.
func (c *pp) parseWC(wc *uverbs.WC, scnt, rcnt, routs *int, iters int, stderr io.Writer) bool {
	if wc.Status != uverbs.WCSuccess {
		fmt.Fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", ibvtext.WCStatus(wc.Status), wc.Status, int(wc.WRID))
		return false
	}
	switch int(wc.WRID) {
	case sendWRID:
		*scnt++
	case recvWRID:
		*routs--
		if *routs <= 1 {
			*routs += c.postRecv(c.rxDepth - *routs)
			if *routs < c.rxDepth {
				fmt.Fprintf(stderr, "Couldn't post receive (%d)\n", *routs)
				return false
			}
		}
		*rcnt++
	default:
		fmt.Fprintf(stderr, "Completion for unknown wr_id %d\n", int(wc.WRID))
		return false
	}
	c.pending &^= int(wc.WRID)
	if *scnt < iters && c.pending == 0 {
		if err := c.postSend(); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send\n")
			return false
		}
		c.pending = recvWRID | sendWRID
	}
	return true
}
