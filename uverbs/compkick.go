package uverbs

import (
	"fmt"
	"sync"
)

// kicker ends a GetEvent asleep in read(2) on a WaitRead channel. Nothing but a queued event, or the end of
// the channel's file, ends that read: the channel's read (ib_uverbs_event_read) sleeps until its event queue
// holds an event or is closed; the queue closes only when the file is released (which the sleeping read itself
// prevents) or the device context is torn down; and Go's signal handlers restart the system call. So the kicker
// makes an event: a CQ of its own on the channel, armed, and a receive queue whose one posted request the
// device flushes with a completion when its QP moves from INIT to ERR — the same path as any QP's flush.
//
// Nothing is made until the first kick, so a program that never wakes a sleeping waiter (rdma-core's tools:
// one goroutine, waits ended by events) owns no object it did not make. Once made, the kicker holds a PD, a CQ
// of 8 entries and, after each kick, one RC QP in ERR (visible in `rdma res show qp` as the process's), until
// the channel is closed. The events it raises are the channel's to read and acknowledge: GetEvent recognises
// the kicker's CQ by its user handle and waits again (CompChannel.kickEvents counts them for CQ.Close).
//
// The flush that ends the sleep is proven on rxe (the lab, every kernel of the matrix: providers/rxe's
// TestLabGetEvent and TestLabCompChannelKick), whose provider says so (provider.InitRecvFlusher); on other
// devices a WaitRead channel waits in epoll_pwait2.
type kicker struct {
	mu   sync.Mutex
	ch   *CompChannel
	pd   *PD
	cq   *CQ
	qp   *QP // the last kick's QP, in ERR until the next kick or close
	recv [1]RecvWR
	wc   [8]WC
}

// kick makes the kernel queue one event for the kicker's CQ on the channel.
func (k *kicker) kick() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.ch.ctx
	if k.pd == nil {
		pd, err := c.AllocPD()
		if err != nil {
			return err
		}
		cq, err := c.createCQ(CQAttr{CQE: len(k.wc), Channel: k.ch}, 0)
		if err != nil {
			pd.Close()
			return err
		}
		k.pd, k.cq = pd, cq
		k.ch.kickCQ.Store(cq)
	}
	// The completions of earlier kicks: each kick adds at most one, so the CQ never fills.
	for {
		n, err := k.cq.Poll(k.wc[:])
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	if k.qp != nil {
		if err := k.qp.Close(); err != nil {
			return err
		}
		k.qp = nil
	}
	qp, err := k.pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: k.cq, RecvCQ: k.cq,
		Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	k.qp = qp
	if err := qp.Modify(QPAttr{State: QPStateInit, PortNum: 1}, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		return err
	}
	if _, err := qp.PostRecv(k.recv[:]); err != nil {
		return err
	}
	if err := k.cq.ReqNotify(false); err != nil {
		return err
	}
	return qp.Modify(QPAttr{State: QPStateErr}, QPAttrState)
}

// cqs is 1 once the kicker's CQ exists (it is counted among the channel's CQs), else 0.
func (k *kicker) cqs() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cq != nil {
		return 1
	}
	return 0
}

// close destroys what the kicker made, acknowledging the acked events the channel read for its CQ. The
// channel's waiters have left (its Close holds rmu).
func (k *kicker) close(acked int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pd == nil {
		return nil
	}
	var errs []error
	if k.qp != nil {
		errs = append(errs, k.qp.Close())
		k.qp = nil
	}
	k.cq.AckEvents(acked)
	errs = append(errs, k.cq.Close(), k.pd.Close())
	k.pd, k.cq = nil, nil
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("the channel's kicker: %w", err)
		}
	}
	return nil
}
