package mlx5

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/internal/provider"
	"syscall"
)

// Work-request and work-completion types: the ones package uverbs exposes (defined in internal/provider).
type (
	SGE       = provider.SGE
	SendWR    = provider.SendWR
	RecvWR    = provider.RecvWR
	WC        = provider.WC
	AHData    = provider.AHData
	WROpcode  = provider.WROpcode
	SendFlags = provider.SendFlags
	WCStatus  = provider.WCStatus
	WCOpcode  = provider.WCOpcode
	WCFlags   = provider.WCFlags
)

// ibv_wr_opcode / ibv_wc_opcode values the verbs layer does not name; this provider rejects or reports them.
const (
	wrTSO         provider.WROpcode = 10 // IBV_WR_TSO (raw packet QPs)
	wrDriver1     provider.WROpcode = 11 // IBV_WR_DRIVER1
	wrAtomicWrite provider.WROpcode = 15 // IBV_WR_ATOMIC_WRITE
	wcTSO         provider.WCOpcode = 7  // IBV_WC_TSO
)

// QPType is a queue-pair transport type (enum ibv_qp_type values).
type QPType uint8

// Supported QP types.
const (
	QPTypeRC QPType = 2 // IBV_QPT_RC
	QPTypeUC QPType = 3 // IBV_QPT_UC
	QPTypeUD QPType = 4 // IBV_QPT_UD
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// ErrNotSupported is returned (wrapped) for requests this provider does not implement, such as memory-window
// binds. errors.Is(err, syscall.EOPNOTSUPP) also holds.
var ErrNotSupported = fmt.Errorf("mlx5: not supported: %w", syscall.EOPNOTSUPP)

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

var _ = errors.Is
