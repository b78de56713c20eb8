package uverbs

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// SRQAttr are a shared receive queue's attributes (struct ibv_srq_attr).
type SRQAttr struct {
	MaxWR  uint32
	MaxSGE uint32
	Limit  uint32 // the SRQ-limit event fires when fewer than Limit WRs remain posted (0 = disarmed)
}

// SRQ is a shared receive queue.
type SRQ struct {
	pd      *PD
	ctx     *Context
	handle  uint32
	uhandle uint64
	srqn    uint32
	attr    SRQAttr
	prov    provider.SRQ
	life
}

// CreateSRQ creates a basic shared receive queue (ibv_create_srq) through the SRQ_CREATE ioctl.
func (pd *PD) CreateSRQ(attr SRQAttr) (*SRQ, error) { return pd.createSRQ(attr, nil, nil) }

// CreateXRCSRQ creates an XRC shared receive queue in the XRC domain xrcd, completing into cq
// (ibv_create_srq_ex with IBV_SRQT_XRC). Devices without XRC answer ErrNotSupported.
func (pd *PD) CreateXRCSRQ(xrcd *XRCD, cq *CQ, attr SRQAttr) (*SRQ, error) {
	if xrcd == nil || cq == nil {
		return nil, wrap("create XRC SRQ", pd.ctx.dev.Name, fmt.Errorf("an XRC SRQ needs an XRC domain and a CQ: %w", unix.EINVAL))
	}
	if err := xrcd.checkOpen(); err != nil {
		return nil, wrap("create XRC SRQ", pd.ctx.dev.Name, fmt.Errorf("XRCD: %w", err))
	}
	if err := cq.checkOpen(); err != nil {
		return nil, wrap("create XRC SRQ", pd.ctx.dev.Name, fmt.Errorf("CQ: %w", err))
	}
	return pd.createSRQ(attr, xrcd, cq)
}

func (pd *PD) createSRQ(attr SRQAttr, xrcd *XRCD, cq *CQ) (*SRQ, error) {
	c := pd.ctx
	if err := pd.checkOpen(); err != nil {
		return nil, wrap("create SRQ", c.dev.Name, err)
	}
	dom, err := pd.enterDomain()
	if err != nil {
		return nil, wrap("create SRQ", c.dev.Name, err)
	}
	srq, err := pd.createSRQIn(attr, xrcd, cq, dom)
	pd.exitDomain(err == nil)
	return srq, err
}

// createSRQIn is createSRQ once pd is known open and its parent domain, if any, entered.
func (pd *PD) createSRQIn(attr SRQAttr, xrcd *XRCD, cq *CQ, dom provider.ParentDomain) (*SRQ, error) {
	c := pd.ctx
	if err := c.addObject(); err != nil {
		return nil, wrap("create SRQ", c.dev.Name, err)
	}
	srq := &SRQ{pd: pd, ctx: c}
	srq.uhandle = c.handles.add(srq)
	p := provider.SRQParams{MaxWR: attr.MaxWR, MaxSGE: attr.MaxSGE, Limit: attr.Limit, Handle: srq.uhandle, ParentDomain: dom}
	var made srqCreated
	prov, res, err := c.prov.CreateSRQ(p, func(req provider.SRQParams, uhwIn, uhwOut []byte) (provider.SRQResult, error) {
		var err error
		made, err = c.cmdCreateSRQ(pd, xrcd, cq, req, uhwIn, uhwOut)
		return provider.SRQResult{MaxWR: made.maxWR, MaxSGE: made.maxSGE, SRQN: made.srqn, Handle: made.handle}, err
	})
	if err != nil {
		if made.created {
			c.cmdDestroySRQ(made.handle)
		}
		c.handles.del(srq.uhandle)
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "create SRQ (max_wr %d, max_sge %d)", attr.MaxWR, attr.MaxSGE)
	}
	srq.handle, srq.srqn, srq.prov = res.Handle, res.SRQN, prov
	srq.attr = SRQAttr{MaxWR: res.MaxWR, MaxSGE: res.MaxSGE, Limit: attr.Limit}
	return srq, nil
}

// SRQN is the SRQ number.
func (srq *SRQ) SRQN() uint32 { return srq.srqn }

// Handle is the kernel's handle.
func (srq *SRQ) Handle() uint32 { return srq.handle }

// Attr are the capacities the kernel granted at creation (and the limit last set).
func (srq *SRQ) Attr() SRQAttr { return srq.attr }

// PostRecv posts receive work requests to the SRQ (ibv_post_srq_recv).
// It returns how many were posted; on error wrs[n] is the first request not posted. It allocates nothing.
func (srq *SRQ) PostRecv(wrs []RecvWR) (int, error) {
	if !srq.g.Enter() {
		return 0, srq.ctx.dpErrs.get(opPostSRQRecv, provider.Destroyed)
	}
	n, st := srq.prov.PostRecv(wrs)
	srq.g.Exit()
	if st != provider.OK {
		return n, srq.ctx.dpErrs.get(opPostSRQRecv, st)
	}
	return n, nil
}

// SRQAttrMask selects the SRQAttr fields SRQ.Modify changes (IBV_SRQ_*).
type SRQAttrMask uint32

// SRQ attribute mask bits.
const (
	SRQAttrMaxWR SRQAttrMask = 1 << 0 // resize the SRQ
	SRQAttrLimit SRQAttrMask = 1 << 1 // arm the SRQ-limit event
)

var srqAttrMaskNames = [...]string{"MAX_WR", "LIMIT"}

func (m SRQAttrMask) String() string { return enumstr.Flags(srqAttrMaskNames[:], uint64(m)) }

// Modify changes the SRQ's size (SRQAttrMaxWR, where the device can resize) or arms its limit event
// (SRQAttrLimit) (ibv_modify_srq).
func (srq *SRQ) Modify(attr SRQAttr, mask SRQAttrMask) error {
	c := srq.ctx
	if err := srq.enter(); err != nil {
		return wrapf(c.dev.Name, err, "modify SRQ %#x", srq.srqn)
	}
	defer srq.exit()
	in := &abi.IbUverbsModifySrq{SrqHandle: srq.handle, AttrMask: uint32(mask), MaxWr: attr.MaxWR, SrqLimit: attr.Limit}
	err := srq.prov.Modify(attr.MaxWR, func(uhwIn, uhwOut []byte) error {
		return c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_MODIFY_SRQ, CoreIn: rawcmd.Bytes(in), UHWIn: uhwIn, UHWOut: uhwOut})
	})
	if err != nil {
		return wrapf(c.dev.Name, err, "modify SRQ %#x (mask %v)", srq.srqn, mask)
	}
	if mask&SRQAttrLimit != 0 {
		srq.attr.Limit = attr.Limit
	}
	if mask&SRQAttrMaxWR != 0 {
		srq.attr.MaxWR = attr.MaxWR
	}
	return nil
}

// Query returns the SRQ's attributes (ibv_query_srq).
func (srq *SRQ) Query() (SRQAttr, error) {
	c := srq.ctx
	if err := srq.enter(); err != nil {
		return SRQAttr{}, wrapf(c.dev.Name, err, "query SRQ %#x", srq.srqn)
	}
	defer srq.exit()
	in := &abi.IbUverbsQuerySrq{SrqHandle: srq.handle}
	out := new(abi.IbUverbsQuerySrqResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_QUERY_SRQ, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		return SRQAttr{}, wrapf(c.dev.Name, err, "query SRQ %#x", srq.srqn)
	}
	return SRQAttr{MaxWR: out.MaxWr, MaxSGE: out.MaxSge, Limit: out.SrqLimit}, nil
}

// Close destroys the SRQ (ibv_destroy_srq). The kernel refuses (EBUSY) while QPs use it.
func (srq *SRQ) Close() error {
	if srq == nil {
		return nil
	}
	return srq.life.close(func() error {
		c := srq.ctx
		if err := c.cmdDestroySRQ(srq.handle); err != nil {
			return wrapf(c.dev.Name, err, "destroy SRQ %#x", srq.srqn)
		}
		srq.prov.Destroyed()
		c.handles.del(srq.uhandle)
		srq.pd.dropUser()
		c.dropObject()
		return nil
	})
}
