package uverbs

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// CQ is a completion queue.
type CQ struct {
	ctx     *Context
	handle  uint32
	uhandle uint64
	cqe     int
	prov    provider.CQ
	channel *CompChannel

	// Close waits until the events acknowledged reach the number the kernel reports having delivered.
	// AckEvents adds without a lock and takes evMu only when Close has begun waiting (ackWaiter).
	evMu      sync.Mutex
	evCond    *sync.Cond
	eventsAck atomic.Uint32
	ackWaiter atomic.Bool
	ex        *cqCursor // CreateCQEx's: the extended poll's state; nil for CreateCQ's
	domain    *PD       // the parent domain it was made in (CQExAttr.ParentDomain), or nil
	life
}

// CQAttr are the options of CreateCQ.
type CQAttr struct {
	CQE        int          // minimum number of entries
	Channel    *CompChannel // completion channel, or nil
	CompVector int          // completion vector, < Context.NumCompVectors()
}

// CreateCQ creates a completion queue (ibv_create_cq) through the CQ_CREATE ioctl.
func (c *Context) CreateCQ(attr CQAttr) (*CQ, error) {
	if attr.CQE < 1 {
		return nil, wrap("create CQ", c.dev.Name, fmt.Errorf("cqe %d: %w", attr.CQE, unix.EINVAL))
	}
	if attr.Channel != nil {
		// A closed channel's fd number may already belong to another file: the channel stays open (its Close
		// waits) until the CQ is counted as its user.
		if err := attr.Channel.enter(); err != nil {
			return nil, wrap("create CQ", c.dev.Name, fmt.Errorf("completion channel: %w", err))
		}
		defer attr.Channel.exit()
	}
	return c.createCQ(attr, 0)
}

// createCQ is CreateCQ once attr.Channel, if any, is known to stay open: its caller entered it, or it is the
// channel's own kicker, made while the channel closes. kflags are the kernel's CQ flags (IB_UVERBS_CQ_FLAGS_*).
func (c *Context) createCQ(attr CQAttr, kflags uint32) (*CQ, error) {
	return c.createCQIn(attr, kflags, nil, nil)
}

// createCQIn is createCQ in a parent domain: domain (nil for none) is entered, and dom is its provider object.
func (c *Context) createCQIn(attr CQAttr, kflags uint32, domain *PD, dom provider.ParentDomain) (*CQ, error) {
	if err := c.addObject(); err != nil {
		return nil, wrap("create CQ", c.dev.Name, err)
	}
	cq := &CQ{ctx: c, channel: attr.Channel, domain: domain}
	cq.evCond = sync.NewCond(&cq.evMu)
	cq.uhandle = c.handles.add(cq)
	p := provider.CQParams{CQE: attr.CQE, CompVector: uint32(attr.CompVector), Handle: cq.uhandle, ParentDomain: dom}
	var made cqCreated
	prov, res, err := c.prov.CreateCQ(p, func(req provider.CQParams, uhwIn, uhwOut []byte) (provider.CQResult, error) {
		var err error
		made, err = c.cmdCreateCQ(attr.Channel, kflags, req, uhwIn, uhwOut)
		return provider.CQResult{CQE: made.cqe, Handle: made.handle}, err
	})
	if err != nil {
		if made.created {
			c.cmdDestroyCQ(made.handle)
		}
		c.handles.del(cq.uhandle)
		c.dropObject()
		flags := ""
		if kflags&abi.IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN != 0 {
			flags = ", IGNORE_OVERRUN"
		}
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "create CQ (cqe %d, vector %d%s)", attr.CQE, attr.CompVector, flags)
	}
	cq.handle, cq.cqe, cq.prov = res.Handle, res.CQE, prov
	if attr.Channel != nil {
		attr.Channel.mu.Lock()
		attr.Channel.cqs++
		attr.Channel.mu.Unlock()
	}
	return cq, nil
}

// CQE is the number of entries the CQ holds.
func (cq *CQ) CQE() int { return cq.cqe }

// Handle is the kernel's handle.
func (cq *CQ) Handle() uint32 { return cq.handle }

// Poll fills wc with up to len(wc) completions and returns how many (ibv_poll_cq). It allocates nothing. The
// error is non-nil only when polling itself failed (ibv_poll_cq < 0): the CQ is closed (ErrClosed), or the
// device wrote a completion the provider cannot match to a queue (EIO); the n completions before it are valid.
// A failed work request is not a Poll error: it is a completion whose WC.Err is non-nil.
//
//go:nosplit
func (cq *CQ) Poll(wc []WC) (int, error) {
	if !cq.g.Enter() {
		return 0, cq.ctx.dpErrs.get(opPollCQ, provider.Destroyed)
	}
	n, st := cq.prov.Poll(wc)
	cq.g.Exit()
	if st != provider.OK {
		return n, cq.ctx.dpErrs.get(opPollCQ, st)
	}
	return n, nil
}

// ReqNotify arms the CQ: the next completion (only solicited ones if solicitedOnly) raises an event on its
// completion channel (ibv_req_notify_cq).
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if err := cq.enter(); err != nil {
		return wrapf(cq.ctx.dev.Name, err, "arm CQ %#x", cq.handle)
	}
	err := cq.prov.Arm(solicitedOnly)
	cq.exit()
	if err != nil {
		return wrapf(cq.ctx.dev.Name, err, "arm CQ %#x", cq.handle)
	}
	return nil
}

// AckEvents acknowledges n completion events received for this CQ (ibv_ack_cq_events).
func (cq *CQ) AckEvents(n int) {
	cq.eventsAck.Add(uint32(n))
	if cq.ackWaiter.Load() { // Close stores ackWaiter before it reads the count: one of the two sees the other
		cq.evMu.Lock()
		cq.evCond.Broadcast()
		cq.evMu.Unlock()
	}
}

// Resize changes the CQ's size to at least cqe entries (ibv_resize_cq).
func (cq *CQ) Resize(cqe int) error {
	c := cq.ctx
	if err := cq.enter(); err != nil {
		return wrapf(c.dev.Name, err, "resize CQ %#x", cq.handle)
	}
	defer cq.exit()
	n, err := cq.prov.Resize(cqe, func(cqe int, uhwIn, uhwOut []byte) (int, error) {
		return c.cmdResizeCQ(cq.handle, cqe, uhwIn, uhwOut)
	})
	if err != nil {
		return wrapf(c.dev.Name, err, "resize CQ %#x to %d", cq.handle, cqe)
	}
	cq.cqe = n
	return nil
}

// Close destroys the CQ (ibv_destroy_cq). As in rdma-core, it waits until every completion event the kernel
// delivered for this CQ has been acknowledged with AckEvents. The kernel refuses (EBUSY) while QPs or SRQs use
// the CQ.
func (cq *CQ) Close() error {
	if cq == nil {
		return nil
	}
	return cq.life.close(func() error {
		c := cq.ctx
		resp, err := c.cmdDestroyCQ(cq.handle)
		if err != nil {
			return wrapf(c.dev.Name, err, "destroy CQ %#x", cq.handle)
		}
		cq.prov.Destroyed()
		cq.evMu.Lock()
		cq.ackWaiter.Store(true)
		for cq.eventsAck.Load() < resp.CompEventsReported {
			cq.evCond.Wait()
		}
		cq.evMu.Unlock()
		c.handles.del(cq.uhandle)
		if ch := cq.channel; ch != nil {
			ch.last[0].CompareAndSwap(cq, nil)
			ch.last[1].CompareAndSwap(cq, nil)
		}
		if cq.channel != nil {
			cq.channel.mu.Lock()
			cq.channel.cqs--
			cq.channel.mu.Unlock()
		}
		cq.domain.dropUser()
		c.dropObject()
		return nil
	})
}
