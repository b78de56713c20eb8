package provider

import "github.com/goverbs/goverbs/verbs"

// Work queues and RSS indirection tables (libibverbs' ibv_create_wq, ibv_create_rwq_ind_table). Both are
// optional provider operations: a Context that does not implement WQCreator or RWQIndTableCreator has neither,
// and the core answers EOPNOTSUPP without asking the kernel, as libibverbs does for a provider without the
// create_wq or create_rwq_ind_table op (rxe, siw).
//
// The core owns the kernel commands (WQ_CREATE, EX_MODIFY_WQ, WQ_DESTROY, EX_CREATE_RWQ_IND_TBL,
// RWQ_IND_TBL_DESTROY) and the books (a WQ cannot be closed while an indirection table holds it); the provider
// takes part in the commands that carry its driver data and owns the WQ's data path.

// WQState is a work queue's state (enum ibv_wq_state).
type WQState uint32

// Work queue states.
const (
	WQStateReset WQState = 0 // IBV_WQS_RESET
	WQStateReady WQState = 1 // IBV_WQS_RDY
	WQStateError WQState = 2 // IBV_WQS_ERR
)

// WQParams is the core's WQ_CREATE request (struct ibv_wq_init_attr for a receive WQ, IBV_WQT_RQ).
type WQParams struct {
	MaxWR  uint32
	MaxSGE uint32
	CQ     CQ     // the CQ its receives complete into
	Flags  uint32 // IB_UVERBS_WQ_FLAGS_*
	Handle uint64 // user handle
	// ParentDomain is the parent domain the WQ is made in (its PD was one), or nil.
	ParentDomain ParentDomain
}

// WQResult is what WQ_CREATE made.
type WQResult struct {
	MaxWR  uint32 // as granted
	MaxSGE uint32
	WQN    uint32 // the WQ number
	Handle uint32 // kernel object handle
}

// WQModify is a MODIFY_WQ request as the provider needs to see it: the state the WQ is in (the core's record,
// as libibverbs' wq->state), and the state asked for when the request sets one.
type WQModify struct {
	From        WQState
	SetsState   bool
	To          WQState
	HasCurState bool    // the request names the state it expects the WQ to be in (IBV_WQ_ATTR_CURR_STATE)
	CurState    WQState // that state
}

// WQ is a provider's receive work queue.
type WQ interface {
	// PostRecv posts receive requests (ibv_post_wq_recv); no allocation.
	PostRecv(wrs []verbs.RecvWR) (n int, st Status)
	// Modify takes part in EX_MODIFY_WQ: it issues the command through exec (with its driver request, if any)
	// exactly once, or returns an error without issuing it.
	Modify(m WQModify, exec Exec) error
	// Destroyed is called after the kernel destroyed the WQ: release its ring and doorbell record.
	Destroyed()
}

// WQCreator is implemented by a Context whose provider has work queues (the create_wq op).
type WQCreator interface {
	CreateWQ(p WQParams, create Create[WQParams, WQResult]) (WQ, WQResult, error)
}

// RWQIndTableCreator is implemented by a Context whose provider has RSS indirection tables (the
// create_rwq_ind_table op). CreateRWQIndTable takes part in EX_CREATE_RWQ_IND_TBL: it issues the command
// through exec with its driver data (mlx5: none in, a driver response buffer out).
type RWQIndTableCreator interface {
	CreateRWQIndTable(exec Exec) error
}
