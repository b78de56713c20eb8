package pingpong

import (
	"github.com/goverbs/goverbs/uverbs/ibvtext"

	"fmt"
	"io"
	"math/rand"
	"os"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

// srqMaxQP is srq_pingpong's MAX_QP: the number of records each side sends (unused ones all zero), and one
// more than the largest -q it accepts.
const srqMaxQP = 256

var srqSpec = toolSpec{
	kind:      kindSRQ,
	optstring: "p:d:i:s:m:q:r:n:l:eog:c",
	long: []getopt.LongOption{loPort, loIBDev, loIBPort, loSize, loMTU,
		{Name: "num-qp", HasArg: getopt.RequiredArgument, Val: 'q'},
		loRxDepth, loIters, loSL, loEvents, loODP, loGIDIdx, loChk},
	usage:    srqUsage,
	defaults: options{port: 18515, ibPort: 1, size: 4096, mtu: uverbs.MTU1024, numQP: 16, rxDepth: 500, iters: 1000, gidx: -1},
}

func srqUsage(w io.Writer, prog string) {
	usageText(w, prog,
		useSize, useMTU,
		"  -q, --num-qp=<num>     number of QPs to use (default 16)\n",
		useRxDepth,
		"  -n, --iters=<iters>    number of exchanges per QP(default 1000)\n",
		useSL, useEvents, useGIDIdx, useODP, useChk,
	)
}

// MainSRQ runs ibv_srq_pingpong with args (without the program name) and returns its exit status.
func MainSRQ(prog string, args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseOptions(&srqSpec, prog, args, stdout, stderr)
	if !ok {
		return status
	}
	// num_qp and rx_depth are unsigned in rdma-core; the messages print them with %d.
	if uint32(o.numQP) > uint32(o.rxDepth) {
		fmt.Fprintf(stderr, "rx_depth %d is too small for %d QPs -- must have at least one receive per QP.\n",
			int32(o.rxDepth), int32(o.numQP))
		return 1
	}
	if uint32(o.numQP) >= srqMaxQP {
		fmt.Fprintf(stderr, "num_qp %d must be less than %d\n", int32(o.numQP), srqMaxQP-1)
		return 1
	}
	return runSRQ(o, stdout, stderr)
}

// srqPP is the state of one srq_pingpong run: num_qp RC QPs that share one SRQ and one CQ.
type srqPP struct {
	ctx       *uverbs.Context
	channel   *uverbs.CompChannel
	pd        *uverbs.PD
	buf       *uverbs.Buffer
	mr        *uverbs.MR
	cq        *uverbs.CQ
	srq       *uverbs.SRQ
	qps       []*uverbs.QP
	size      int
	rxDepth   int
	sendFlags uverbs.SendFlags
	pending   []int

	sendWR [1]uverbs.SendWR
	recvWR [1]uverbs.RecvWR
	sge    [1]uverbs.SGE
}

func (c *srqPP) close() {
	for i := len(c.qps) - 1; i >= 0; i-- {
		c.qps[i].Close()
	}
	c.srq.Close()
	c.cq.Close()
	c.mr.Close()
	c.pd.Close()
	c.channel.Close()
	c.ctx.Close()
	c.buf.Close()
}

// initSRQ is srq_pingpong's pp_init_ctx.
func initSRQ(dev uverbs.Device, o *options, stderr io.Writer) *srqPP {
	c := &srqPP{size: o.size, rxDepth: o.rxDepth, sendFlags: uverbs.SendSignaled, pending: make([]int, o.numQP)}
	var err error
	if c.buf, err = uverbs.AllocBuffer(o.size); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate work buf.\n")
		return nil
	}
	fail := func(msg string) *srqPP {
		fmt.Fprintf(stderr, "%s\n", msg)
		c.close()
		return nil
	}
	if c.ctx, err = dev.Open(); err != nil {
		return fail("Couldn't get context for " + dev.Name)
	}
	access := uverbs.AccessLocalWrite
	if o.odp {
		da, err := c.ctx.QueryDevice()
		if err != nil {
			return fail("Couldn't query device for its features")
		}
		const need = uverbs.ODPSend | uverbs.ODPSRQRecv
		if da.ODPGeneralCaps&uverbs.ODPSupport == 0 || da.ODPRCCaps&need != need {
			return fail("The device isn't ODP capable or does not support RC send, receive and srq with ODP")
		}
		access |= uverbs.AccessOnDemand
	}
	if o.events {
		if c.channel, err = c.ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: uverbs.WaitRead}); err != nil {
			return fail("Couldn't create completion channel")
		}
	}
	if c.pd, err = c.ctx.AllocPD(); err != nil {
		return fail("Couldn't allocate PD")
	}
	if c.mr, err = c.pd.RegMR(c.buf.Bytes(), access); err != nil {
		return fail("Couldn't register MR")
	}
	if c.cq, err = c.ctx.CreateCQ(uverbs.CQAttr{CQE: int(int32(uint32(o.rxDepth) + uint32(o.numQP))), Channel: c.channel}); err != nil {
		return fail("Couldn't create CQ")
	}
	if c.srq, err = c.pd.CreateSRQ(uverbs.SRQAttr{MaxWR: uint32(o.rxDepth), MaxSGE: 1}); err != nil {
		return fail("Couldn't create SRQ")
	}
	for i := 0; i < o.numQP; i++ {
		qp, err := c.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: c.cq, RecvCQ: c.cq, SRQ: c.srq,
			Cap: uverbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
		if err != nil {
			return fail(fmt.Sprintf("Couldn't create QP[%d]", i))
		}
		c.qps = append(c.qps, qp)
		if qa, err := qp.Query(uverbs.QPAttrCap); err == nil && int(qa.Cap.MaxInlineData) >= o.size {
			c.sendFlags |= uverbs.SendInline
		}
	}
	for i, qp := range c.qps {
		init := &uverbs.QPAttr{State: uverbs.QPStateInit, PKeyIndex: 0, PortNum: uint8(o.ibPort)}
		if err := qp.Modify(*init, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags); err != nil {
			return fail(fmt.Sprintf("Failed to modify QP[%d] to INIT", i))
		}
	}
	c.sge[0] = c.mr.SGE(0, o.size)
	c.recvWR[0] = uverbs.RecvWR{WRID: recvWRID, SGL: c.sge[:]}
	return c
}

func (c *srqPP) postRecv(n int) int {
	i := 0
	for ; i < n; i++ {
		if _, err := c.srq.PostRecv(c.recvWR[:]); err != nil {
			break
		}
	}
	return i
}

func (c *srqPP) postSend(qp int) error {
	c.sendWR[0] = uverbs.SendWR{WRID: sendWRID, SGL: c.sge[:], Opcode: uverbs.WRSend, Flags: c.sendFlags}
	_, err := c.qps[qp].PostSend(c.sendWR[:])
	return err
}

// findQP is the index of the QP numbered qpn, or -1.
func (c *srqPP) findQP(qpn uint32) int {
	for i, qp := range c.qps {
		if qp.QPN() == qpn {
			return i
		}
	}
	return -1
}

// connect moves every QP to RTR and RTS towards the remote QP of the same index. As in rdma-core, the GRH of
// every QP is built from the first remote record's GID.
func (c *srqPP) connect(o *options, my, rem []dest) error {
	for i, qp := range c.qps {
		av := remoteAV(o, &rem[0])
		av.DLID = uint16(rem[i].lid)
		rtr := &uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: o.mtu, DestQPN: uint32(rem[i].qpn), RQPSN: uint32(rem[i].psn),
			MaxDestRdAtomic: 1, MinRNRTimer: 12, AHAttr: av}
		if err := qp.Modify(*rtr, uverbs.QPAttrState|uverbs.QPAttrAV|uverbs.QPAttrPathMTU|uverbs.QPAttrDestQPN|
			uverbs.QPAttrRQPSN|uverbs.QPAttrMaxDestRdAtomic|uverbs.QPAttrMinRNRTimer); err != nil {
			return fmt.Errorf("Failed to modify QP[%d] to RTR", i)
		}
		rts := *rtr
		rts.State, rts.Timeout, rts.RetryCnt, rts.RNRRetry, rts.SQPSN, rts.MaxRdAtomic = uverbs.QPStateRTS, 14, 7, 7, uint32(my[i].psn), 1
		if err := qp.Modify(rts, uverbs.QPAttrState|uverbs.QPAttrTimeout|uverbs.QPAttrRetryCnt|uverbs.QPAttrRNRRetry|
			uverbs.QPAttrSQPSN|uverbs.QPAttrMaxQPRdAtomic); err != nil {
			return fmt.Errorf("Failed to modify QP[%d] to RTS", i)
		}
	}
	return nil
}

func runSRQ(o *options, stdout, stderr io.Writer) int {
	// num_wc and the CQ size are C ints: num_qp + rx_depth wraps as it does there.
	numWC := max(int(int32(uint32(o.numQP)+uint32(o.rxDepth))), 1)
	pageSize := os.Getpagesize()
	dev, ok := findDevice(o.devName, stderr)
	if !ok {
		return 1
	}
	c := initSRQ(dev, o, stderr)
	if c == nil {
		return 1
	}
	routs, pa, ok := startRecv(c.postRecv, c.rxDepth, c.ctx, c.cq, o, stderr)
	if !ok {
		return 1
	}
	var err error
	my := make([]dest, srqMaxQP)
	for i, qp := range c.qps {
		my[i] = dest{lid: int(pa.LID), qpn: int(qp.QPN()), psn: int(rand.Int31() & 0xffffff)}
		if pa.LinkLayer != uverbs.LinkLayerEthernet && my[i].lid == 0 {
			fmt.Fprintf(stderr, "Couldn't get local LID\n")
			return 1
		}
		if o.gidx >= 0 {
			if my[i].gid, err = queryGID(c.ctx, o.ibPort, o.gidx); err != nil {
				fmt.Fprintf(stderr, "Could not get local gid for gid index %d\n", o.gidx)
				return 1
			}
		}
		printDest(stdout, "local address: ", &my[i], ",")
	}

	var rem []dest
	if o.server != "" {
		rem, ok = srqClientExchange(o.server, int(o.port), my, stderr)
	} else {
		rem, ok = srqServerExchange(int(o.port), my, func(rem []dest) error { return c.connect(o, my, rem) }, stderr)
	}
	if !ok {
		return 1
	}
	for i := range c.qps {
		printDest(stdout, "remote address:", &rem[i], ",")
	}
	if o.server != "" {
		if err := c.connect(o, my, rem); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
		if o.validate {
			markPages(c.buf.Bytes(), pageSize)
		}
		for i := range c.qps {
			if err := c.postSend(i); err != nil {
				fmt.Fprintf(stderr, "Couldn't post send\n")
				return 1
			}
			c.pending[i] = sendWRID | recvWRID
		}
	} else {
		for i := range c.qps {
			c.pending[i] = recvWRID
		}
	}

	elapsed, numEvents, ok := pingLoop(o, c.channel, c.cq, make([]uverbs.WC, numWC),
		func(wc *uverbs.WC, _ int, scnt, rcnt *int) bool {
			return c.parseWC(wc, scnt, rcnt, &routs, o.iters, stderr)
		}, stderr)
	if !ok {
		return 1
	}
	var steps []closeStep
	for i, qp := range c.qps {
		steps = append(steps, closeStep{qp.Close, fmt.Sprintf("Couldn't destroy QP[%d]", i)})
	}
	steps = append(steps, closeStep{c.srq.Close, "Couldn't destroy SRQ"}, closeStep{c.cq.Close, "Couldn't destroy CQ"},
		closeStep{c.mr.Close, "Couldn't deregister MR"}, closeStep{c.pd.Close, "Couldn't deallocate PD"},
		closeStep{c.channel.Close, "Couldn't destroy completion channel"}, closeStep{c.ctx.Close, "Couldn't release context"})
	return finish(o, stdout, stderr, elapsed, numEvents, c.cq, c.buf.Bytes(), steps, c.buf)
}

// parseWC handles one completion of srq_pingpong's loop: find its QP, count it, replenish the SRQ once no
// more than one receive per QP is left, and post that QP's next send once its send and receive completed.
func (c *srqPP) parseWC(wc *uverbs.WC, scnt, rcnt, routs *int, iters int, stderr io.Writer) bool {
	if wc.Status != uverbs.WCSuccess {
		fmt.Fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", ibvtext.WCStatus(wc.Status), wc.Status, int(wc.WRID))
		return false
	}
	qpi := c.findQP(wc.QPNum)
	if qpi < 0 {
		fmt.Fprintf(stderr, "Couldn't find QPN %06x\n", wc.QPNum)
		return false
	}
	switch int(wc.WRID) {
	case sendWRID:
		*scnt++
	case recvWRID:
		*routs--
		if *routs <= len(c.qps) {
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
	c.pending[qpi] &^= int(wc.WRID)
	if *scnt < iters && c.pending[qpi] == 0 {
		if err := c.postSend(qpi); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send\n")
			return false
		}
		c.pending[qpi] = recvWRID | sendWRID
	}
	return true
}
