package uverbs

import "github.com/goverbs/goverbs/internal/enumstr"

// DataInOrder says how a QP's incoming data of one operation is placed in memory (ibv_query_qp_data_in_order
// with IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS): a set of guarantees, empty when the device makes none.
type DataInOrder uint32

// Data placement guarantees (enum ibv_query_qp_data_in_order_caps).
const (
	// DataInOrderWholeMsg: a message's data is written in order, so the last byte landing means all did.
	DataInOrderWholeMsg DataInOrder = 1 << 0
	// DataInOrderAligned128: data is written in order in aligned 128-byte units.
	DataInOrderAligned128 DataInOrder = 1 << 1
)

var dataInOrderNames = [...]string{"WHOLE_MSG", "ALIGNED_128_BYTES"}

func (d DataInOrder) String() string { return enumstr.Flags(dataInOrderNames[:], uint64(d)) }

// DataInOrder reports the placement guarantees of the QP's incoming data for operation op
// (ibv_query_qp_data_in_order, a hint for polling on memory instead of on completions). A device whose provider
// has no answer makes no guarantee, as libibverbs answers for a provider without the hint: rxe, and goverbs'
// mlx5 (libmlx5 asks the device about QPs in RTS where it has the capability; goverbs does not yet, so it never
// claims a guarantee the device might not give).
func (qp *QP) DataInOrder(op WROpcode) DataInOrder {
	return 0
}
