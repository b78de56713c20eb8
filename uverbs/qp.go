package uverbs

import (
	"fmt"
	"sync"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// QPInitAttr are the options of CreateQP (struct ibv_qp_init_attr).
type QPInitAttr struct {
	Type   QPType
	SendCQ *CQ
	RecvCQ *CQ
	SRQ    *SRQ
	// XRCD is the XRC domain of an XRC receive (target) QP, which has no PD, CQs or queues of its own.
	XRCD *XRCD
	Cap  QPCap
	// SigAll makes every send request generate a completion, whatever its SendSignaled flag.
	SigAll bool
	// SendOps are the operations the QP's work-request builder (StartWR) may post
	// (ibv_qp_init_attr_ex.send_ops_flags); 0 for a QP posted with PostSend only. A provider refuses
	// operations it does not build for the QP's type with ErrNotSupported, as its libibverbs counterpart does.
	SendOps SendOps
}

// QP is a queue pair.
type QP struct {
	pd      *PD
	ctx     *Context
	handle  uint32
	uhandle uint64
	qpn     uint32
	typ     QPType
	cap     QPCap
	prov    provider.QP
	state   QPState
	sendOps SendOps
	wrbOnce sync.Once
	wrb     *WRBuilder // StartWR's, made at the first one
	life

	// The local half of a connection (Endpoint), guarded by mu.
	local    Endpoint
	localGID *GIDEntry
	hasLocal bool
}

// CreateQP creates a queue pair (ibv_create_qp) through the QP_CREATE ioctl: validate, let the provider take
// part (its driver data and rings), issue the command, record the result.
func (pd *PD) CreateQP(attr QPInitAttr) (*QP, error) {
	c := pd.ctx
	op := "create QP (" + attr.Type.String() + ")"
	if err := pd.checkCreateQP(&attr); err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	if err := c.checkSendOps(attr.Type, attr.SendOps); err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	dom, err := pd.enterDomain()
	if err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	qp, err := pd.createQP(c, op, &attr, dom)
	pd.exitDomain(err == nil)
	return qp, err
}

// createQP is CreateQP once its attributes are checked and its parent domain, if any, entered.
func (pd *PD) createQP(c *Context, op string, attr *QPInitAttr, dom provider.ParentDomain) (*QP, error) {
	if err := c.addObject(); err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	qp := &QP{pd: pd, ctx: c, typ: attr.Type, sendOps: attr.SendOps}
	qp.uhandle = c.handles.add(qp)
	p := provider.QPParams{Type: attr.Type, Cap: attr.Cap, SigAll: attr.SigAll, HasSRQ: attr.SRQ != nil,
		Handle: qp.uhandle, SendCQ: attr.SendCQ.provOrNil(), RecvCQ: attr.RecvCQ.provOrNil(), ParentDomain: dom}
	if attr.SRQ != nil {
		p.SRQ = attr.SRQ.prov
	}
	if attr.Type == QPTypeRC {
		// Which optional RC opcodes the device has; unknown (a failed query) means none, so they are refused
		// as not supported rather than failing in the device.
		caps, _ := c.deviceCaps()
		p.DeviceCaps = uint64(caps)
	}
	var made qpCreated
	prov, res, err := c.prov.CreateQP(p, func(req provider.QPParams, uhwIn, uhwOut []byte) (provider.QPResult, error) {
		var err error
		made, err = c.cmdCreateQP(pd, attr, req, uhwIn, uhwOut)
		return provider.QPResult{Cap: made.cap, QPN: made.qpn, Handle: made.handle}, err
	})
	if err != nil {
		if made.created {
			c.cmdDestroyQP(made.handle)
		}
		c.handles.del(qp.uhandle)
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "%s with cap %+v", op, attr.Cap)
	}
	qp.handle, qp.qpn, qp.cap, qp.prov = res.Handle, res.QPN, res.Cap, prov
	return qp, nil
}

// checkCreateQP validates CreateQP's attributes and that every object they name is open.
func (pd *PD) checkCreateQP(attr *QPInitAttr) error {
	switch {
	case attr.Type == QPTypeXRCRecv:
		if attr.XRCD == nil {
			return fmt.Errorf("an XRC receive QP needs an XRC domain: %w", unix.EINVAL)
		}
	case attr.SendCQ == nil || (attr.RecvCQ == nil && attr.Type != QPTypeXRCSend):
		return fmt.Errorf("send and receive CQs are required: %w", unix.EINVAL)
	}
	if err := pd.checkOpen(); err != nil {
		return err
	}
	for _, o := range []struct {
		name string
		l    interface{ checkOpen() error }
		set  bool
	}{{"send CQ", attr.SendCQ, attr.SendCQ != nil}, {"receive CQ", attr.RecvCQ, attr.RecvCQ != nil},
		{"XRCD", attr.XRCD, attr.XRCD != nil}, {"SRQ", attr.SRQ, attr.SRQ != nil}} {
		if o.set {
			if err := o.l.checkOpen(); err != nil {
				return fmt.Errorf("%s: %w", o.name, err)
			}
		}
	}
	return nil
}

// provOrNil is the CQ's provider object, nil for no CQ.
func (cq *CQ) provOrNil() provider.CQ {
	if cq == nil {
		return nil
	}
	return cq.prov
}

// QPN is the QP number.
func (qp *QP) QPN() uint32 { return qp.qpn }

// Type is the QP's transport type.
func (qp *QP) Type() QPType { return qp.typ }

// Cap are the capacities the kernel granted.
func (qp *QP) Cap() QPCap { return qp.cap }

// Handle is the kernel's handle.
func (qp *QP) Handle() uint32 { return qp.handle }

// State is the last state this QP was moved to through Modify.
func (qp *QP) State() QPState { return qp.state }

// PostSend posts send work requests and rings the doorbell once (ibv_post_send). It returns how many were
// posted; on error wrs[n] is the first request not posted. It allocates nothing.
//
// A send queue slot is free again as soon as its request completes, not when its completion is polled, so a
// poster must also bound the completions it has not polled yet (for example one credit per request, capped at the
// CQ's size): a CQ that overflows stops the QP, with rdma-core exactly as here.
//
// Errors (package doc, "Data-path errors") name the verb, the device and the cause and unwrap to the errno
// rdma-core returns; after Close they match ErrClosed.
//
//go:nosplit
func (qp *QP) PostSend(wrs []SendWR) (int, error) {
	// nosplit (PostSend, PostRecv, CQ.Poll): a small frame whose only call is the provider's, so the stack-bound
	// check is left out (2 instructions a call, as on mlx5's post path); the linker verifies that the frame fits
	// the stack guard, and the provider's methods check their own. The success path reads neither the context
	// nor its error table.
	if !qp.g.Enter() {
		return 0, qp.ctx.dpErrs.get(opPostSend, provider.Destroyed)
	}
	n, st := qp.prov.PostSend(wrs)
	qp.g.Exit()
	if st != provider.OK {
		return n, qp.ctx.dpErrs.get(opPostSend, st)
	}
	return n, nil
}

// PostRecv posts receive work requests (ibv_post_recv). It returns how many were posted; on error wrs[n] is
// the first request not posted. It allocates nothing.
//
//go:nosplit
func (qp *QP) PostRecv(wrs []RecvWR) (int, error) {
	if !qp.g.Enter() {
		return 0, qp.ctx.dpErrs.get(opPostRecv, provider.Destroyed)
	}
	n, st := qp.prov.PostRecv(wrs)
	qp.g.Exit()
	if st != provider.OK {
		return n, qp.ctx.dpErrs.get(opPostRecv, st)
	}
	return n, nil
}

// Close destroys the QP (ibv_destroy_qp).
func (qp *QP) Close() error {
	if qp == nil {
		return nil
	}
	return qp.life.close(func() error {
		c := qp.ctx
		if _, err := c.cmdDestroyQP(qp.handle); err != nil {
			return wrapf(c.dev.Name, err, "destroy QP %#x", qp.qpn)
		}
		qp.prov.Destroyed()
		c.handles.del(qp.uhandle)
		qp.pd.dropUser()
		c.dropObject()
		return nil
	})
}

// QPAttrMask selects the QPAttr fields a Modify sets or a Query returns (IBV_QP_*).
type QPAttrMask uint32

// QP attribute mask bits.
const (
	QPAttrState            QPAttrMask = 1 << 0
	QPAttrCurState         QPAttrMask = 1 << 1
	QPAttrEnSQDAsyncNotify QPAttrMask = 1 << 2
	QPAttrAccessFlags      QPAttrMask = 1 << 3
	QPAttrPKeyIndex        QPAttrMask = 1 << 4
	QPAttrPort             QPAttrMask = 1 << 5
	QPAttrQKey             QPAttrMask = 1 << 6
	QPAttrAV               QPAttrMask = 1 << 7
	QPAttrPathMTU          QPAttrMask = 1 << 8
	QPAttrTimeout          QPAttrMask = 1 << 9
	QPAttrRetryCnt         QPAttrMask = 1 << 10
	QPAttrRNRRetry         QPAttrMask = 1 << 11
	QPAttrRQPSN            QPAttrMask = 1 << 12
	QPAttrMaxQPRdAtomic    QPAttrMask = 1 << 13
	QPAttrAltPath          QPAttrMask = 1 << 14
	QPAttrMinRNRTimer      QPAttrMask = 1 << 15
	QPAttrSQPSN            QPAttrMask = 1 << 16
	QPAttrMaxDestRdAtomic  QPAttrMask = 1 << 17
	QPAttrPathMigState     QPAttrMask = 1 << 18
	QPAttrCap              QPAttrMask = 1 << 19
	QPAttrDestQPN          QPAttrMask = 1 << 20
)

var qpAttrMaskNames = [...]string{"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT",
	"QKEY", "AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
	"MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN"}

// String names the set bits as enum ibv_qp_attr_mask does, without its IBV_QP_ prefix ("STATE|PORT"; "0" for
// none).
func (m QPAttrMask) String() string { return enumstr.Flags(qpAttrMaskNames[:], uint64(m)) }

// GlobalRoute is the GRH part of an address (struct ibv_global_route).
type GlobalRoute struct {
	DGID         GID
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
}

// AHAttr is an address vector (struct ibv_ah_attr).
type AHAttr struct {
	GRH         GlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  Rate // RateMax: the port's rate
	IsGlobal    bool
	PortNum     uint8
}

// QPAttr are a QP's attributes (struct ibv_qp_attr).
type QPAttr struct {
	State            QPState
	CurState         QPState
	PathMTU          MTU
	PathMigState     uint8
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPN          uint32
	AccessFlags      Access
	Cap              QPCap
	AHAttr           AHAttr
	AltAHAttr        AHAttr
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	EnSQDAsyncNotify uint8
	SQDraining       uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	SQSigAll         bool
}

func qpDest(a *AHAttr) abi.IbUverbsQpDest {
	d := abi.IbUverbsQpDest{FlowLabel: a.GRH.FlowLabel, Dlid: a.DLID, SgidIndex: a.GRH.SGIDIndex,
		HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass, Sl: a.SL, SrcPathBits: a.SrcPathBits,
		StaticRate: uint8(a.StaticRate), PortNum: a.PortNum}
	d.Dgid = a.GRH.DGID
	if a.IsGlobal {
		d.IsGlobal = 1
	}
	return d
}

func ahAttrFromDest(d *abi.IbUverbsQpDest) AHAttr {
	return AHAttr{GRH: GlobalRoute{DGID: d.Dgid, FlowLabel: d.FlowLabel, SGIDIndex: d.SgidIndex,
		HopLimit: d.HopLimit, TrafficClass: d.TrafficClass}, DLID: d.Dlid, SL: d.Sl, SrcPathBits: d.SrcPathBits,
		StaticRate: Rate(d.StaticRate), IsGlobal: d.IsGlobal != 0, PortNum: d.PortNum}
}

// Modify changes the QP's attributes selected by mask (ibv_modify_qp), through the MODIFY_QP command; the
// kernel checks the state transition and the attributes each transition requires. A provider that takes part
// in the command (mlx5 with ECE options set by SetECE) sends the extended MODIFY_QP with its driver data.
func (qp *QP) Modify(attr QPAttr, mask QPAttrMask) error {
	c := qp.ctx
	if err := qp.enter(); err != nil {
		return wrapf(c.dev.Name, err, "modify QP %#x", qp.qpn)
	}
	defer qp.exit()
	in := c.modifyQPIn(qp, &attr, mask)
	var err error
	if m, ok := qp.prov.(provider.QPModifier); ok {
		err = m.Modify(func(extended bool, uhwIn, uhwOut []byte) error {
			return c.cmdModifyQP(in, extended, 0, uhwIn, uhwOut)
		})
	} else {
		err = c.cmdModifyQP(in, false, 0, nil, nil)
	}
	if err != nil {
		if mask&QPAttrState != 0 {
			return wrapf(c.dev.Name, err, "modify QP %#x %s->%s (mask %#x)", qp.qpn, qp.state, attr.State, uint32(mask))
		}
		return wrapf(c.dev.Name, err, "modify QP %#x (mask %#x)", qp.qpn, uint32(mask))
	}
	if mask&QPAttrState != 0 {
		qp.state = attr.State
		qp.prov.StateChanged(attr.State)
	}
	return nil
}

// modifyQPIn is MODIFY_QP's core request for attr and mask on qp.
func (c *Context) modifyQPIn(qp *QP, attr *QPAttr, mask QPAttrMask) *abi.IbUverbsModifyQp {
	return &abi.IbUverbsModifyQp{
		Dest: qpDest(&attr.AHAttr), AltDest: qpDest(&attr.AltAHAttr), QpHandle: qp.handle, AttrMask: uint32(mask),
		Qkey: attr.QKey, RqPsn: attr.RQPSN, SqPsn: attr.SQPSN, DestQpNum: attr.DestQPN,
		QpAccessFlags: uint32(attr.AccessFlags), PkeyIndex: attr.PKeyIndex, AltPkeyIndex: attr.AltPKeyIndex,
		QpState: uint8(attr.State), CurQpState: uint8(attr.CurState), PathMtu: uint8(attr.PathMTU),
		PathMigState: attr.PathMigState, EnSqdAsyncNotify: attr.EnSQDAsyncNotify, MaxRdAtomic: attr.MaxRdAtomic,
		MaxDestRdAtomic: attr.MaxDestRdAtomic, MinRnrTimer: attr.MinRNRTimer, PortNum: attr.PortNum,
		Timeout: attr.Timeout, RetryCnt: attr.RetryCnt, RnrRetry: attr.RNRRetry, AltPortNum: attr.AltPortNum,
		AltTimeout: attr.AltTimeout,
	}
}

// Query returns the QP's current attributes (ibv_query_qp) and its creation attributes' capacities.
func (qp *QP) Query(mask QPAttrMask) (*QPAttr, error) {
	c := qp.ctx
	if err := qp.enter(); err != nil {
		return nil, wrapf(c.dev.Name, err, "query QP %#x", qp.qpn)
	}
	defer qp.exit()
	in := &abi.IbUverbsQueryQp{QpHandle: qp.handle, AttrMask: uint32(mask)}
	out := new(abi.IbUverbsQueryQpResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_QUERY_QP, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		return nil, wrapf(c.dev.Name, err, "query QP %#x", qp.qpn)
	}
	a := &QPAttr{
		State: QPState(out.QpState), CurState: QPState(out.CurQpState), PathMTU: MTU(out.PathMtu),
		PathMigState: out.PathMigState, QKey: out.Qkey, RQPSN: out.RqPsn, SQPSN: out.SqPsn, DestQPN: out.DestQpNum,
		AccessFlags: Access(out.QpAccessFlags), PKeyIndex: out.PkeyIndex, AltPKeyIndex: out.AltPkeyIndex,
		SQDraining: out.SqDraining, MaxRdAtomic: out.MaxRdAtomic, MaxDestRdAtomic: out.MaxDestRdAtomic,
		MinRNRTimer: out.MinRnrTimer, PortNum: out.PortNum, Timeout: out.Timeout, RetryCnt: out.RetryCnt,
		RNRRetry: out.RnrRetry, AltPortNum: out.AltPortNum, AltTimeout: out.AltTimeout, SQSigAll: out.SqSigAll != 0,
		Cap: QPCap{MaxSendWR: out.MaxSendWr, MaxRecvWR: out.MaxRecvWr, MaxSendSGE: out.MaxSendSge,
			MaxRecvSGE: out.MaxRecvSge, MaxInlineData: out.MaxInlineData},
		AHAttr: ahAttrFromDest(&out.Dest), AltAHAttr: ahAttrFromDest(&out.AltDest),
	}
	return a, nil
}

// AttachMcast attaches the QP (UD) to a multicast group (ibv_attach_mcast).
func (qp *QP) AttachMcast(gid GID, lid uint16) error {
	return qp.mcast(abi.IB_USER_VERBS_CMD_ATTACH_MCAST, "attach QP %#x to multicast group %v", gid, lid)
}

// DetachMcast detaches the QP from a multicast group (ibv_detach_mcast).
func (qp *QP) DetachMcast(gid GID, lid uint16) error {
	return qp.mcast(abi.IB_USER_VERBS_CMD_DETACH_MCAST, "detach QP %#x from multicast group %v", gid, lid)
}

// mcast sends ATTACH_MCAST or DETACH_MCAST, whose commands (struct ib_uverbs_attach_mcast and
// ib_uverbs_detach_mcast) have one layout; errors are wrapped with what (formatted with the QPN and the GID).
func (qp *QP) mcast(cmd uint32, what string, gid GID, lid uint16) error {
	if err := qp.enter(); err != nil {
		return wrapf(qp.ctx.dev.Name, err, what, qp.qpn, gid)
	}
	defer qp.exit()
	in := &abi.IbUverbsAttachMcast{Gid: gid, QpHandle: qp.handle, Mlid: lid}
	if err := qp.ctx.write(&rawcmd.Write{Cmd: cmd, CoreIn: rawcmd.Bytes(in)}); err != nil {
		return wrapf(qp.ctx.dev.Name, err, what, qp.qpn, gid)
	}
	return nil
}
