package rxe

import (
	"runtime"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
)

// srq is an rxe shared receive queue.
type srq struct {
	ctx *context
	rq  *recvRing

	// MODIFY_SRQ driver request and the mminfo it points to, which the kernel fills when it resizes the ring.
	// Guarded by rq.mu; on the heap for the kernel to write.
	mod *srqModify
}

type srqModify struct {
	cmd abi.RxeModifySrqCmd
	mi  abi.Mminfo
}

var _ provider.SRQ = (*srq)(nil)

// CreateSRQ takes part in SRQ_CREATE: the driver response (struct rxe_create_srq_resp) describes the ring.
func (c *context) CreateSRQ(p provider.SRQParams, create provider.Create[provider.SRQParams, provider.SRQResult]) (provider.SRQ, provider.SRQResult, error) {
	resp := new(abi.RxeCreateSrqResp)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, res, err
	}
	rq, err := mapRecvRing(c.fd, resp.Mi, res.MaxSGE)
	if err != nil {
		return nil, res, opError("create SRQ", "map receive ring", err)
	}
	return &srq{ctx: c, rq: rq, mod: new(srqModify)}, res, nil
}

// PostRecv writes wrs into the shared receive ring.
func (s *srq) PostRecv(wrs []verbs.RecvWR) (int, provider.Status) { return s.rq.post(wrs) }

// Modify takes part in MODIFY_SRQ. The driver request (struct rxe_modify_srq_cmd) carries the address of an
// mminfo the kernel fills when it resizes the ring (attribute mask with IB_SRQ_MAX_WR); the old ring is then
// unmapped and the new one mapped, with posting held off. A modify that only changes the limit leaves the ring
// as it is. If the new ring cannot be mapped the SRQ is left without one and posting fails with EINVAL.
func (s *srq) Modify(maxWR uint32, exec provider.Exec) error {
	s.rq.mu.Lock()
	defer s.rq.mu.Unlock()
	m := s.mod
	m.mi = abi.Mminfo{}
	m.cmd.MmapInfoAddr = uint64(uintptr(unsafe.Pointer(&m.mi)))
	err := exec(rawcmd.Bytes(&m.cmd), nil)
	runtime.KeepAlive(m)
	if err != nil {
		return err
	}
	if m.mi.Size == 0 {
		return nil
	}
	s.rq.q.unmap()
	q, err := mapQueue(s.ctx.fd, m.mi, abi.SizeofRxeRecvWqe)
	if err != nil {
		return opError("modify SRQ", "map the resized receive ring", err)
	}
	s.rq.setQueue(q, s.rq.maxSGE)
	return nil
}

// Destroyed unmaps the ring after the kernel destroyed the SRQ.
func (s *srq) Destroyed() { s.rq.destroy() }
