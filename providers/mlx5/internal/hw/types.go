package hw

import (
	"github.com/goverbs/goverbs/internal/rdmaerr"
	"github.com/goverbs/goverbs/verbs"

	"syscall"
)

// Work-request and work-completion types: the public ones (package verbs).
type (
	SGE       = verbs.SGE
	SendWR    = verbs.SendWR
	RecvWR    = verbs.RecvWR
	WC        = verbs.WC
	AHData    = verbs.AHData
	WROpcode  = verbs.WROpcode
	SendFlags = verbs.SendFlags
	WCStatus  = verbs.WCStatus
	WCOpcode  = verbs.WCOpcode
	WCFlags   = verbs.WCFlags
)

// ibv_wr_opcode / ibv_wc_opcode values the verbs layer does not name; this provider rejects or reports them.
const (
	wrTSO     verbs.WROpcode = 10 // IBV_WR_TSO (raw packet QPs)
	wrDriver1 verbs.WROpcode = 11 // IBV_WR_DRIVER1
	wcTSO     verbs.WCOpcode = 7  // IBV_WC_TSO
)

// QPType is a queue-pair transport type; this provider supports RC, UC and UD.
type QPType = verbs.QPType

// Supported QP types.
const (
	QPTypeRC = verbs.QPTypeRC
	QPTypeUC = verbs.QPTypeUC
	QPTypeUD = verbs.QPTypeUD
)

// ErrNotSupported is wrapped by every error for a request this provider, its device or its kernel interface does
// not implement (a QP type, a CQE version, static bfregs, a RoCE AH without the kernel's MAC): it unwraps to
// goverbs' one not-supported sentinel (so errors.Is(err, errors.ErrUnsupported) holds) and to EOPNOTSUPP, the
// errno rdma-core returns.
var ErrNotSupported error = notSupported{}

type notSupported struct{}

func (notSupported) Error() string   { return "operation not supported" }
func (notSupported) Unwrap() []error { return []error{rdmaerr.ErrNotSupported, syscall.EOPNOTSUPP} }

// errInvalid and friends carry the errno rdma-core's mlx5 provider returns in the same situation.
var (
	errQueueFull = syscall.ENOMEM
	errInvalid   = syscall.EINVAL
)

// isPow2 reports whether n is a positive power of two.
func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// roundupPow2 returns the smallest power of two >= n (n >= 1).
func roundupPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
