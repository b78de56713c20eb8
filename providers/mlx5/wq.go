package mlx5

import (
	"fmt"
	"sync"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
)

// Receive work queues and RSS indirection tables, as libmlx5 has them (mlx5_create_wq, mlx5_modify_wq,
// mlx5_destroy_wq, mlx5_post_wq_recv, mlx5_create_rwq_ind_table in rdma-core's providers/mlx5):
//
//   - A WQ is a receive ring of its own (libmlx5's sizing, mlx5_calc_rwq_size: one to max_sge 16-byte data
//     segments per WQE rounded up to a power of two, max_wr WQEs rounded up, at least 64 bytes) with a
//     doorbell record and a user index; WQ_CREATE's driver request (struct mlx5_ib_create_wq) names the ring,
//     the record, the geometry and the index. The ring comes from the parent domain's allocator where the WQ
//     is made in one (MLX5DV_RES_TYPE_RWQ), and a WQ in a thread domain posts without its lock.
//   - Its completions arrive in its CQ under its user index, as a QP's receives do: the CQ knows it as a QP
//     with a receive queue only.
//   - MODIFY_WQ carries a zeroed struct mlx5_ib_modify_wq. A move to RDY checks the expected current state
//     (EINVAL when it is not the WQ's) and, from RESET, removes the WQ's completions from its CQ and zeroes the
//     ring's indices and the doorbell record first.
//   - PostRecv writes the same WQEs as a QP's receive queue (data segments, a terminator where the WQE has
//     room) and publishes them with one doorbell-record store; it does not look at the WQ's state (libmlx5
//     does not).
//   - An indirection table has no driver data; libmlx5's op only issues the core command.
//
// Not done as libmlx5 can: the WQE signature (MLX5_RWQ_SIGNATURE in the environment), mlx5dv_create_wq's
// striding RQ, and the doorbell record from the parent domain's allocator.

// CreateWQ implements provider.WQCreator (mlx5_create_wq).
func (c *mctx) CreateWQ(p provider.WQParams, create provider.Create[provider.WQParams, provider.WQResult]) (provider.WQ, provider.WQResult, error) {
	var res provider.WQResult
	d, err := c.domainOf(p.ParentDomain)
	if err != nil {
		return nil, res, err
	}
	cq, ok := p.CQ.(*cqAdapter)
	if !ok {
		return nil, res, fmt.Errorf("mlx5: create WQ: completion queue of another provider: %w", errInvalid)
	}
	l, err := hw.SizeRWQ(int(p.MaxWR), int(p.MaxSGE), c.caps.Limits.MaxRQDescSz)
	if err != nil {
		return nil, res, err
	}
	w := &wqAdapter{ctx: c, cq: cq}
	w.dom, w.res = d, resRWQ
	if w.mem, w.ext, err = c.ringFrom(l.BufSize, d, resRWQ); err != nil {
		return nil, res, err
	}
	var dbr hw.DoorbellRecord
	if w.dbrMem, dbr, err = c.dbr(); err != nil {
		w.queueMem.free(c)
		return nil, res, err
	}
	w.uidx = c.userIndex()
	w.single = d.threadDomain() != nil
	req := hw.CreateWQReq(l, addrOf(w.mem), addrOf(w.dbrMem), w.uidx)
	var resp abi.Mlx5IbCreateWqResp
	if res, err = create(p, bytesOf(&req), bytesOf(&resp)); err != nil {
		w.release()
		return nil, res, err
	}
	rq, err := hw.NewRecvQueue(hw.RecvQueueConfig{Buf: w.mem, WQECount: l.WQECount, WQEShift: l.WQEShift,
		MaxPost: l.MaxPost, DBR: dbr, QPN: res.WQN})
	if err != nil {
		w.release()
		return nil, res, err
	}
	w.q = &hw.QP{QPN: res.WQN, UserIndex: w.uidx, RQ: rq}
	if err := cq.Attach(w.q); err != nil {
		w.release()
		return nil, res, err
	}
	if d != nil {
		d.refs.Add(1)
	}
	return w, res, nil
}

// wqAdapter is a receive WQ as the verbs core sees it. mu is libmlx5's rq.lock (not taken in a thread
// domain); the CQ's lock orders the reset against polls.
type wqAdapter struct {
	ctx *mctx
	cq  *cqAdapter
	q   *hw.QP // the receive queue, as its CQ knows it
	queueMem
	uidx   uint32
	mu     sync.Mutex
	single bool
}

// PostRecv implements provider.WQ (mlx5_post_wq_recv).
func (w *wqAdapter) PostRecv(wrs []hw.RecvWR) (int, provider.Status) {
	if w.single {
		return w.q.RQ.PostRecv(wrs)
	}
	w.mu.Lock()
	n, st := w.q.RQ.PostRecv(wrs)
	w.mu.Unlock()
	return n, st
}

// Modify implements provider.WQ (mlx5_modify_wq).
func (w *wqAdapter) Modify(m provider.WQModify, exec provider.Exec) error {
	if m.SetsState && m.To == provider.WQStateReady {
		if m.HasCurState && m.CurState != m.From {
			return fmt.Errorf("mlx5: modify WQ %#x: expected state %d, it is in %d: %w", w.q.QPN, m.CurState, m.From, errInvalid)
		}
		if m.From == provider.WQStateReset {
			w.mu.Lock()
			w.cq.mu.Lock()
			w.cq.CQ.Clean(w.q)
			w.q.RQ.Reset()
			w.cq.mu.Unlock()
			w.mu.Unlock()
		}
	}
	var req abi.Mlx5IbModifyWq
	return exec(bytesOf(&req), nil)
}

// Destroyed implements provider.WQ (mlx5_destroy_wq after the kernel's destroy).
func (w *wqAdapter) Destroyed() {
	w.cq.Detach(w.q)
	w.release()
	w.dom.drop()
}

// release returns the ring, the doorbell record and the user index.
func (w *wqAdapter) release() {
	if w.queueMem.free(w.ctx) {
		w.ctx.putUserIndex(w.uidx)
	}
}

// CreateRWQIndTable implements provider.RWQIndTableCreator (mlx5_create_rwq_ind_table): no driver data.
func (c *mctx) CreateRWQIndTable(exec provider.Exec) error { return exec(nil, nil) }

var (
	_ provider.WQCreator          = (*mctx)(nil)
	_ provider.RWQIndTableCreator = (*mctx)(nil)
	_ provider.WQ                 = (*wqAdapter)(nil)
)
