package rdmacm

import (
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// SRQInitAttr are the options of ID.CreateSRQ (struct ibv_srq_init_attr_ex as rdma_create_srq_ex takes it).
type SRQInitAttr struct {
	// PD defaults to the device's PD shared by the process's ids (librdmacm's id->pd).
	PD *uverbs.PD
	// Attr sizes the SRQ (max_wr, max_sge) and arms its limit.
	Attr uverbs.SRQAttr
	// XRCD, when set, makes an XRC SRQ in that domain (IBV_SRQT_XRC), completing into CQ, which it then
	// needs. librdmacm would open a domain and make a CQ itself when they are not given; goverbs asks for
	// both (EINVAL without the CQ).
	XRCD *uverbs.XRCD
	CQ   *uverbs.CQ
}

// CreateSRQ creates the id's shared receive queue (rdma_create_srq, rdma_create_srq_ex) on the id's device:
// a basic SRQ, or an XRC SRQ when attr.XRCD is set. CreateQP then gives the id's QP this SRQ when its
// QPInitAttr names none, Connect and Accept tell the peer the QP receives through an SRQ, and Close destroys
// the SRQ after the QP. An id has at most one SRQ (ErrState for a second).
func (id *ID) CreateSRQ(attr SRQInitAttr) (*uverbs.SRQ, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "create SRQ"
	if err := id.check(op); err != nil {
		return nil, err
	}
	if id.srq != nil {
		return nil, opErr(op, id.kid, errState("id already has SRQ %#x", id.srq.SRQN()))
	}
	if err := id.acquireDeviceLocked(); err != nil {
		return nil, err
	}
	pd := attr.PD
	if pd == nil {
		pd = id.dev.pd
	}
	var srq *uverbs.SRQ
	var err error
	switch {
	case attr.XRCD == nil:
		srq, err = pd.CreateSRQ(attr.Attr)
	case attr.CQ == nil:
		err = fmt.Errorf("an XRC SRQ needs a CQ: %w", unix.EINVAL)
	default:
		srq, err = pd.CreateXRCSRQ(attr.XRCD, attr.CQ, attr.Attr)
	}
	if err != nil {
		return nil, opErr(op, id.kid, err)
	}
	id.srq = srq
	return srq, nil
}

// SRQ is the SRQ CreateSRQ made (librdmacm's id->srq), nil before or after DestroySRQ.
func (id *ID) SRQ() *uverbs.SRQ { id.mu.Lock(); defer id.mu.Unlock(); return id.srq }

// DestroySRQ destroys the id's SRQ (rdma_destroy_srq). The kernel refuses (EBUSY) while a QP uses it:
// destroy the QP first (DestroyQP), as Close does. Without an SRQ it does nothing.
func (id *ID) DestroySRQ() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("destroy SRQ"); err != nil {
		return err
	}
	return id.destroySRQLocked()
}

func (id *ID) destroySRQLocked() error {
	if id.srq == nil {
		return nil
	}
	if err := id.srq.Close(); err != nil {
		return opErr("destroy SRQ", id.kid, err)
	}
	id.srq = nil
	return nil
}
