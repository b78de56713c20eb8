package siw

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
)

// srq is a siw shared receive queue: num_rqe struct siw_rqe entries mapped at srq_key, posted to as a QP's
// receive queue is.
type srq struct {
	rq *recvQueue
}

var _ provider.SRQ = (*srq)(nil)

// CreateSRQ takes part in SRQ_CREATE: the driver response (struct siw_uresp_create_srq) gives the number of
// entries and the key of their mapping.
func (c *context) CreateSRQ(p provider.SRQParams, create provider.Create[provider.SRQParams, provider.SRQResult]) (provider.SRQ, provider.SRQResult, error) {
	resp := new(abi.SiwUrespCreateSrq)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, res, err
	}
	rq, err := mapRecvQueue(c.fd, resp.SrqKey, resp.NumRqe, res.MaxSGE)
	if err != nil {
		return nil, res, opError("create SRQ", "map the receive queue", err)
	}
	return &srq{rq: rq}, res, nil
}

// PostRecv writes wrs into the shared receive queue (no system call).
func (s *srq) PostRecv(wrs []verbs.RecvWR) (int, provider.Status) { return s.rq.post(wrs) }

// Modify takes part in MODIFY_SRQ with no driver data, as rdma-core does. The kernel arms the limit event
// (SRQ_LIMIT) and refuses a resize (MAX_WR): the queue stays the mapping it is, so nothing changes here.
func (s *srq) Modify(_ uint32, exec provider.Exec) error { return exec(nil, nil) }

// Destroyed unmaps the queue after the kernel destroyed the SRQ.
func (s *srq) Destroyed() { s.rq.destroy() }
