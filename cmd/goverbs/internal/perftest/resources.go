package perftest

import (
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/uverbs"
)

// session is the verbs side of one test run: the device context, PD, buffer and MR, CQs, QPs and AHs, the
// prepared work requests and the data-path counters (perftest's struct pingpong_context, "ctx" in its C).
type session struct {
	// cmQKey is the qkey of the peer's UD QP when rdma_cm made it (-R); 0 means perftest's own DEF_QKEY.
	cmQKey uint32
	p      *Params
	dev    uverbs.Device
	vc     *uverbs.Context
	ch     *uverbs.CompChannel
	pd     *uverbs.PD // with --no_lock, the parent domain on basePD and td (perftest's ctx->pad)
	basePD *uverbs.PD // --no_lock only (ctx->pd)
	td     *uverbs.TD // --no_lock only
	buf    *uverbs.Buffer
	mr     *uverbs.MR
	sendCQ *uverbs.CQ
	recvCQ *uverbs.CQ
	qps    []*uverbs.QP
	ahs    []*uverbs.AH

	base          uint64 // address of the buffer
	buffSize      int
	sendQPBufSize int
	size          uint64 // message size the buffer was laid out for (ctx->size)

	my, rem []Dest

	cmClose func() // -R: disconnects and destroys the rdma_cm ids and their QPs

	sge   []uverbs.SGE // num_qps * post_list
	wr    []uverbs.SendWR
	rsge  []uverbs.SGE
	rwr   []uverbs.RecvWR
	scnt  []uint64
	ccnt  []uint64
	myAdr []uint64
	remAd []uint64
	rxAdr []uint64
	wc    []uverbs.WC

	tposted, tcompleted []int64
	rposted             int
	rcntQP, postedQP    []uint64
	dur                 duration
	rate                float64 // counter ticks per microsecond, for --latency_gap
}

func (s *session) close() {
	if s.cmClose != nil {
		s.cmClose()
	}
	for _, ah := range s.ahs {
		ah.Close()
	}
	for _, q := range s.qps {
		q.Close()
	}
	s.sendCQ.Close()
	if s.recvCQ != s.sendCQ {
		s.recvCQ.Close()
	}
	s.mr.Close()
	s.pd.Close()
	s.td.Close()
	s.basePD.Close()
	s.ch.Close()
	if s.vc != nil {
		s.vc.Close()
	}
	s.buf.Close()
}

func buffSize(size uint64, cycle int) uint64 {
	if size < uint64(cycle) {
		return uint64(cycle)
	}
	return size
}

func inc(size uint64, line int) uint64 {
	l := uint64(line)
	if size > l {
		return (size + l - 1) / l * l
	}
	return l
}

// findDevice is ctx_find_dev: the named device or the first one.
func findDevice(name string, stderr io.Writer) (uverbs.Device, bool) {
	devs, err := uverbs.Devices()
	if err != nil || len(devs) == 0 {
		fmt.Fprintf(stderr, " Did not detect devices \n")
		fmt.Fprintf(stderr, " If device exists, check if driver is up\n")
		return uverbs.Device{}, false
	}
	if name == "" {
		return devs[0], true
	}
	for _, d := range devs {
		if d.Name == name {
			return d, true
		}
	}
	fmt.Fprintf(stderr, "IB device %s not found\n", name)
	return uverbs.Device{}, false
}

// transportName is perftest's transport_str of the device's transport, which libibverbs derives from its node
// type: IB for a CA, switch or router, IW for an RNIC (iWARP: siw), Unknown for the rest (usNIC).
func transportName(nt uverbs.NodeType) string {
	switch nt {
	case netlinkrdma.NodeTypeCA, netlinkrdma.NodeTypeSwitch, netlinkrdma.NodeTypeRouter:
		return "IB"
	case netlinkrdma.NodeTypeRNIC:
		return "IW"
	}
	return "Unknown"
}

// roNonCompliant is check_pcie_relaxed_ordering_compliant negated: an Intel root port known to mishandle
// relaxed ordering is present.
func roNonCompliant() bool {
	ents, _ := filepath.Glob("/sys/bus/pci/devices/*")
	for _, e := range ents {
		v, err1 := os.ReadFile(filepath.Join(e, "vendor"))
		d, err2 := os.ReadFile(filepath.Join(e, "device"))
		if err1 != nil || err2 != nil {
			continue
		}
		var vid, did uint64
		fmt.Sscanf(strings.TrimSpace(string(v)), "0x%x", &vid)
		fmt.Sscanf(strings.TrimSpace(string(d)), "0x%x", &did)
		if vid == 0x8086 && (did >= 0x6f01 && did <= 0x6f0e || did == 0x2f01) {
			return true
		}
	}
	return false
}

// setMTU is set_mtu: the user's MTU (bounded by the port's active one) or the port's active MTU.
func setMTU(p *Params, pa *uverbs.PortAttr, stdout, stderr io.Writer) int {
	active := int(pa.ActiveMTU)
	if p.MTU == 0 {
		return active
	}
	var m int
	switch p.MTU {
	case 256:
		m = 1
	case 512:
		m = 2
	case 1024:
		m = 3
	case 2048:
		m = 4
	case 4096:
		m = 5
	default:
		fmt.Fprintf(stderr, " Invalid MTU - %d \n", p.MTU)
		fmt.Fprintf(stderr, " Please choose mtu from {256,512,1024,2048,4096}\n")
		fmt.Fprintf(stderr, " Will run with the port active mtu - %d\n", active)
		m = active
	}
	if m > active {
		fmt.Fprintf(stdout, "Requested mtu is higher than active mtu \n")
		fmt.Fprintf(stdout, "Changing to active mtu - %d\n", active)
		m = active
	}
	return m
}

// checkODP is perftest 6.24's check_odp_support: the device must support ODP, and on RC the operations this
// side performs (send, receive or both for SEND; write, read or atomics) must be among its RC ODP caps; UC is
// refused, UD not checked.
func (s *session) checkODP(stderr io.Writer) error {
	p := s.p
	a, err := s.vc.QueryDevice()
	if err != nil {
		fmt.Fprintf(stderr, " Couldn't query device for On-Demand Paging capabilities.\n")
		return err
	}
	if a.ODPGeneralCaps&uverbs.ODPSupport == 0 {
		fmt.Fprintf(stderr, " The device does not support On-Demand Paging.\n")
		return uverbs.ErrNotSupported
	}
	switch p.Conn {
	case ConnUC:
		fmt.Fprintf(stderr, " ODP is not available on UC transport.\n")
		return uverbs.ErrNotSupported
	case ConnUD:
		return nil
	}
	caps, conn := a.ODPRCCaps, connStr[p.Conn]
	var need uverbs.ODPTransportCap
	var what string
	switch {
	case p.Verb == VerbSend && !p.Duplex && !p.Server:
		need, what = uverbs.ODPSend, "Send is"
	case p.Verb == VerbSend && !p.Duplex:
		if caps&(uverbs.ODPRecv|uverbs.ODPSRQRecv) == 0 {
			fmt.Fprintf(stderr, " ODP Recv is not supported for %s transport.\n", conn)
			return uverbs.ErrNotSupported
		}
		return nil
	case p.Verb == VerbSend:
		if caps&uverbs.ODPSend == 0 || caps&(uverbs.ODPRecv|uverbs.ODPSRQRecv) == 0 {
			fmt.Fprintf(stderr, " ODP bidirectional Send is not supported for %s transport.\n", conn)
			return uverbs.ErrNotSupported
		}
		return nil
	case p.Verb == VerbWrite:
		need, what = uverbs.ODPWrite, "Write is"
	case p.Verb == VerbRead:
		need, what = uverbs.ODPRead, "Read is"
	default:
		need, what = uverbs.ODPAtomic, "Atomics are"
	}
	if caps&need == 0 {
		fmt.Fprintf(stderr, " ODP %s not supported for %s transport.\n", what, conn)
		return uverbs.ErrNotSupported
	}
	return nil
}

// initResources is alloc_ctx + ctx_init: buffer, PD, MR, CQs, QPs moved to INIT.
func (s *session) initResources(stderr io.Writer) error {
	p := s.p
	var err error
	s.size = p.Size
	s.rate = ticksPerUsec()
	nq := p.NumQPs
	s.buffSize = int(inc(buffSize(s.size, p.CycleBuffer), p.CacheLine)) * 2 * nq
	s.sendQPBufSize = s.buffSize / nq / 2
	if p.Conn == ConnUD {
		s.buffSize += p.CacheLine
	}
	if p.UseEvent {
		if s.ch, err = s.vc.CreateCompChannel(&uverbs.CompChannelOptions{Wait: uverbs.WaitRead}); err != nil {
			fmt.Fprintf(stderr, "Couldn't create completion channel\n")
			return err
		}
	}
	if s.pd, err = s.vc.AllocPD(); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate PD\n")
		return err
	}
	if p.NoLock {
		// --no_lock: a thread domain and a parent domain on the PD, in which the QPs, CQs and MR are made (no
		// locks on their data path where the provider has them: mlx5; rxe has no thread domains, and fails
		// here as perftest does).
		s.basePD, s.pd = s.pd, nil
		if s.td, err = s.vc.AllocTD(); err != nil {
			fmt.Fprintf(stderr, "Couldn't allocate TD\n")
			return err
		}
		if s.pd, err = s.vc.AllocParentDomain(uverbs.ParentDomainAttr{PD: s.basePD, TD: s.td}); err != nil {
			fmt.Fprintf(stderr, "Couldn't allocate PAD\n")
			return err
		}
	}
	if p.UseODP {
		if err := s.checkODP(stderr); err != nil {
			fmt.Fprintf(stderr, "failed to create mr\n")
			fmt.Fprintf(stderr, "Failed to create MR\n")
			return err
		}
	}
	if s.buf, err = uverbs.AllocBuffer(s.buffSize); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate work buf.\n")
		return err
	}
	mem := s.buf.Bytes()
	s.base = uint64(uintptr(unsafe.Pointer(&mem[0])))
	access := uverbs.AccessLocalWrite
	switch p.Verb {
	case VerbWrite:
		access |= uverbs.AccessRemoteWrite
	case VerbRead:
		access |= uverbs.AccessRemoteRead
	case VerbAtomic:
		access |= uverbs.AccessRemoteAtomic
	}
	if p.UseODP {
		access |= uverbs.AccessOnDemand
	}
	if s.mr, err = s.pd.RegMR(mem, access); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate MR\n")
		return err
	}
	if !(p.Verb == VerbWrite && p.Kind == KindLat) {
		rand.Read(mem)
	}
	if s.sendCQ, err = s.createCQ(p.TxDepth*nq, p); err != nil {
		fmt.Fprintf(stderr, "Couldn't create CQ\n")
		return err
	}
	s.recvCQ = s.sendCQ
	if p.Verb == VerbSend {
		if s.recvCQ, err = s.createCQ(p.RxDepth*nq, p); err != nil {
			fmt.Fprintf(stderr, "Couldn't create a receiver CQ\n")
			return err
		}
	}
	typ := map[int]uverbs.QPType{ConnRC: uverbs.QPTypeRC, ConnUC: uverbs.QPTypeUC, ConnUD: uverbs.QPTypeUD}[p.Conn]
	for i := 0; i < nq && !p.WorkRDMACM; i++ { // with -R the QPs are made on the rdma_cm ids (cmConnectQPs)
		qp, err := s.pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: s.sendCQ, RecvCQ: s.recvCQ,
			Cap: uverbs.QPCap{MaxSendWR: uint32(p.TxDepth), MaxSendSGE: 1, MaxRecvWR: uint32(p.RxDepth), MaxRecvSGE: 1,
				MaxInlineData: uint32(p.InlineSize)}})
		if err != nil {
			fmt.Fprintf(stderr, "Couldn't create QP\n")
			fmt.Fprintf(stderr, "Failed to create QP.\n")
			return err
		}
		s.qps = append(s.qps, qp)
		a := &uverbs.QPAttr{State: uverbs.QPStateInit, PKeyIndex: uint16(p.PKeyIndex), PortNum: uint8(p.IBPort)}
		mask := uverbs.QPAttrState | uverbs.QPAttrPKeyIndex | uverbs.QPAttrPort
		if p.Conn == ConnUD {
			a.QKey = defQKey
			mask |= uverbs.QPAttrQKey
		} else {
			switch p.Verb {
			case VerbAtomic:
				a.AccessFlags = uverbs.AccessRemoteAtomic
			case VerbRead:
				a.AccessFlags = uverbs.AccessRemoteRead
			case VerbWrite:
				a.AccessFlags = uverbs.AccessRemoteWrite
			case VerbSend:
				a.AccessFlags = uverbs.AccessRemoteWrite | uverbs.AccessLocalWrite
			}
			mask |= uverbs.QPAttrAccessFlags
		}
		if err := qp.Modify(*a, mask); err != nil {
			fmt.Fprintf(stderr, "Failed to modify QP to INIT, ret=%d\n", 1)
			return err
		}
	}
	// Data-path arrays.
	pl := p.PostList
	s.sge = make([]uverbs.SGE, nq*pl)
	s.wr = make([]uverbs.SendWR, nq*pl)
	s.scnt = make([]uint64, nq)
	s.ccnt = make([]uint64, nq)
	s.myAdr = make([]uint64, nq)
	s.remAd = make([]uint64, nq)
	s.rxAdr = make([]uint64, nq)
	s.rsge = make([]uverbs.SGE, nq)
	s.rwr = make([]uverbs.RecvWR, nq)
	s.wc = make([]uverbs.WC, 16)
	s.rcntQP = make([]uint64, nq)
	s.postedQP = make([]uint64, nq)
	return nil
}

// bufAddr is ctx->buf[i].
func (s *session) bufAddr(i int) uint64 { return s.base + uint64(i)*buffSize(s.size, s.p.CycleBuffer) }

// bestGIDIndex is get_best_gid_index: the first IPv4-mapped GID unless --ipv6 (then the first other one).
func bestGIDIndex(vc *uverbs.Context, port int, tblLen int, ipv6 bool) int {
	idx := 0
	cur, err := vc.QueryGID(port, 0)
	if err != nil {
		return 0
	}
	for i := 1; i < tblLen; i++ {
		rival, err := vc.QueryGID(port, i)
		if err != nil {
			continue
		}
		v4, rv4 := isV4Mapped(cur.GID), isV4Mapped(rival.GID)
		if (rv4 && !v4 && !ipv6) || (!rv4 && v4 && ipv6) {
			idx, cur = i, rival
		}
	}
	return idx
}

func isV4Mapped(g uverbs.GID) bool {
	for i := 0; i < 10; i++ {
		if g[i] != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}

// setUpConnection is set_up_connection: fills the local Dest of every QP.
func (s *session) setUpConnection(pa *uverbs.PortAttr) error {
	p := s.p
	var gid uverbs.GID
	if p.GIDIndex != -1 {
		if !p.UseGIDUser {
			p.GIDIndex = bestGIDIndex(s.vc, p.IBPort, pa.GIDTblLen, p.IPv6)
		}
		g, err := s.vc.QueryGID(p.IBPort, p.GIDIndex)
		if err != nil {
			return err
		}
		gid = g.GID
	}
	s.my = make([]Dest, p.NumQPs)
	s.rem = make([]Dest, p.NumQPs)
	for i := range s.my {
		s.my[i] = Dest{LID: pa.LID, QPN: s.qps[i].QPN(), PSN: uint32(rand.Int31()) & 0xffffff, RKey: s.mr.RKey(),
			OutReads: p.OutReads, VAddr: s.bufAddr(p.NumQPs + i), GID: gid}
	}
	return nil
}

// connect is ctx_connect: RTR (and RTS where this side sends), and the UD address handles.
func (s *session) connect(stderr io.Writer) error {
	p := s.p
	if p.WorkRDMACM {
		return nil // rdma_cm connected the QPs
	}
	for i, qp := range s.qps {
		d := &s.rem[i]
		a := &uverbs.QPAttr{State: uverbs.QPStateRTR}
		a.AHAttr = uverbs.AHAttr{DLID: d.LID, SL: uint8(p.SL), PortNum: uint8(p.IBPort)}
		if p.GIDIndex != -1 {
			a.AHAttr.IsGlobal = true
			a.AHAttr.GRH = uverbs.GlobalRoute{DGID: d.GID, SGIDIndex: uint8(p.GIDIndex), HopLimit: 0xff,
				TrafficClass: uint8(p.TrafficClass)}
			if n := len(p.FlowLabels); n > 0 {
				a.AHAttr.GRH.FlowLabel = uint32(p.FlowLabels[i%n])
			}
		}
		mask := uverbs.QPAttrState
		if p.Conn != ConnUD {
			a.PathMTU = uverbs.MTU(p.CurrMTU)
			a.DestQPN = d.QPN
			a.RQPSN = d.PSN
			mask |= uverbs.QPAttrAV | uverbs.QPAttrPathMTU | uverbs.QPAttrDestQPN | uverbs.QPAttrRQPSN
			if p.Conn == ConnRC {
				a.MaxDestRdAtomic = uint8(s.my[i].OutReads)
				a.MinRNRTimer = minRNRTimer
				mask |= uverbs.QPAttrMinRNRTimer | uverbs.QPAttrMaxDestRdAtomic
			}
		}
		if err := qp.Modify(*a, mask); err != nil {
			fmt.Fprintf(stderr, "Failed to modify QP %d to RTR\n", qp.QPN())
			return err
		}
		if p.Kind == KindLat || !p.Server || p.Duplex {
			r := &uverbs.QPAttr{State: uverbs.QPStateRTS, SQPSN: s.my[i].PSN}
			rmask := uverbs.QPAttrState | uverbs.QPAttrSQPSN
			if p.Conn == ConnRC {
				r.Timeout, r.RetryCnt, r.RNRRetry, r.MaxRdAtomic = uint8(p.QPTimeout), 7, 7, uint8(d.OutReads)
				rmask |= uverbs.QPAttrTimeout | uverbs.QPAttrRetryCnt | uverbs.QPAttrRNRRetry | uverbs.QPAttrMaxQPRdAtomic
			}
			if err := qp.Modify(*r, rmask); err != nil {
				fmt.Fprintf(stderr, "Failed to modify QP to RTS\n")
				return err
			}
			if p.Conn == ConnUD {
				ah, err := s.pd.CreateAH(a.AHAttr)
				if err != nil {
					fmt.Fprintf(stderr, "Failed to create AH\n")
					return err
				}
				s.ahs = append(s.ahs, ah)
			}
		}
	}
	return nil
}

// setSendWQEs is ctx_set_send_reg_wqes.
func (s *session) setSendWQEs() {
	p := s.p
	pl := p.PostList
	for i := 0; i < p.NumQPs; i++ {
		base := i * pl
		s.sge[base].Addr = s.bufAddr(i)
		s.scnt[i], s.ccnt[i] = 0, 0
		s.myAdr[i] = s.bufAddr(i)
		s.remAd[i] = s.rem[i].VAddr
		for j := 0; j < pl; j++ {
			k := base + j
			sge := &s.sge[k]
			sge.Length = uint32(p.Size)
			sge.LKey = s.mr.LKey()
			if j > 0 {
				sge.Addr = s.sge[k-1].Addr
				if p.Kind == KindBW && p.Size <= uint64(p.CycleBuffer/2) {
					s.incLoc(sge, uint64(j-1), s.myAdr[i])
				}
			}
			w := &s.wr[k]
			*w = uverbs.SendWR{WRID: uint64(i), SGL: s.sge[k : k+1]}
			if (j+1)%p.CQMod == 0 {
				w.Flags = uverbs.SendSignaled
			}
			switch p.Verb {
			case VerbSend:
				w.Opcode = uverbs.WRSend
			case VerbWrite:
				w.Opcode = uverbs.WRRDMAWrite
			case VerbRead:
				w.Opcode = uverbs.WRRDMARead
			case VerbAtomic:
				w.Opcode = uverbs.WRAtomicFetchAndAdd
				if p.AtomicType == atomicCmpAndSwap {
					w.Opcode = uverbs.WRAtomicCmpAndSwp
				}
			}
			switch p.Verb {
			case VerbWrite, VerbRead, VerbAtomic:
				w.RKey = s.rem[i].RKey
				w.RemoteAddr = s.rem[i].VAddr
				if j > 0 {
					w.RemoteAddr = s.wr[k-1].RemoteAddr
					if p.Kind == KindBW && (p.Verb == VerbAtomic || p.Size <= uint64(p.CycleBuffer/2)) {
						s.incRem(w, uint64(j-1), s.remAd[i])
					}
				}
				if p.Verb == VerbAtomic {
					if p.AtomicType == atomicFetchAndAdd {
						w.CompareAdd = 1
					} else {
						w.Swap = 0
					}
				}
			case VerbSend:
				if p.Conn == ConnUD {
					w.AH = s.ahs[i].Data()
					w.RemoteQPN = s.rem[i].QPN
					w.RemoteQKey = s.udQKey()
				}
			}
			if (p.Verb == VerbSend || p.Verb == VerbWrite) && p.Size <= uint64(p.InlineSize) {
				w.Flags |= uverbs.SendInline
			}
		}
	}
}

func (s *session) incLoc(sge *uverbs.SGE, cnt uint64, prim uint64) {
	step := inc(s.p.Size, s.p.CacheLine)
	sge.Addr += step
	if (cnt+1)%(uint64(s.p.CycleBuffer)/step) == 0 {
		sge.Addr = prim
	}
}

func (s *session) incRem(w *uverbs.SendWR, cnt uint64, prim uint64) {
	step := inc(s.p.Size, s.p.CacheLine)
	w.RemoteAddr += step
	if (cnt+1)%(uint64(s.p.CycleBuffer)/step) == 0 {
		w.RemoteAddr = prim
	}
}

// setRecvWQEs is ctx_set_recv_wqes: pre-posts rx_depth receives per QP.
func (s *session) setRecvWQEs(stderr io.Writer) error {
	p := s.p
	size := p.RxDepth
	s.rposted = size
	for i := 0; i < p.NumQPs; i++ {
		sge := &s.rsge[i]
		sge.Addr = s.base + uint64(p.NumQPs+i)*uint64(s.sendQPBufSize)
		if p.Conn == ConnUD {
			sge.Addr += uint64(p.CacheLine - udAddition)
		}
		s.rxAdr[i] = sge.Addr
		sge.Length = uint32(p.Size)
		if p.Conn == ConnUD {
			sge.Length += udAddition
		}
		sge.LKey = s.mr.LKey()
		s.rwr[i] = uverbs.RecvWR{WRID: uint64(i), SGL: s.rsge[i : i+1]}
		for j := 0; j < size; j++ {
			if _, err := s.qps[i].PostRecv(s.rwr[i : i+1]); err != nil {
				fmt.Fprintf(stderr, "Couldn't post recv Qp = %d: counter=%d\n", i, j)
				return err
			}
			if p.Kind == KindBW && p.Size <= uint64(p.CycleBuffer/2) {
				s.incLoc(sge, uint64(j), s.rxAdr[i])
			}
		}
		sge.Addr = s.rxAdr[i]
	}
	return nil
}

// udQKey is the qkey UD sends carry: perftest's DEF_QKEY, or rdma_cm's when it made the QPs.
func (s *session) udQKey() uint32 {
	if s.cmQKey != 0 {
		return s.cmQKey
	}
	return defQKey
}

// createCQ is create_reg_cqs' CQ: in the parent domain with --no_lock (an extended CQ whose parent_domain is
// ctx->pad), else a plain one.
func (s *session) createCQ(cqe int, p *Params) (*uverbs.CQ, error) {
	if s.basePD != nil {
		return s.vc.CreateCQEx(uverbs.CQExAttr{CQE: cqe, Channel: s.ch, CompVector: p.EQNum, ParentDomain: s.pd})
	}
	return s.vc.CreateCQ(uverbs.CQAttr{CQE: cqe, Channel: s.ch, CompVector: p.EQNum})
}
