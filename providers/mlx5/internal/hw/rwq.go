package hw

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
)

// RWQLayout is a receive work queue's geometry (rdma-core mlx5_calc_rwq_size, without the WQE signature and
// without a striding RQ): what the kernel is told in mlx5_ib_create_wq (rq_wqe_count, rq_wqe_shift) and the
// ring's size.
type RWQLayout struct {
	WQECount, WQEShift int
	MaxPost, MaxGS     int
	BufSize            int // WQECount << WQEShift, at least one send WQE basic block
}

// SizeRWQ sizes a receive WQ for maxWR requests of maxSGE scatter entries as libmlx5 does: a WQE holds
// max(maxSGE, 1) data segments rounded up to a power of two bytes (no more than the device's maxRQDescSz), the
// ring holds maxWR rounded up to a power of two WQEs and at least 64 bytes. maxWR 0 is EINVAL.
func SizeRWQ(maxWR, maxSGE, maxRQDescSz int) (RWQLayout, error) {
	var l RWQLayout
	if maxWR < 1 || maxSGE < 0 || maxWR > 1<<24 {
		return l, fmt.Errorf("mlx5: size WQ: %d WRs of %d SGEs: %w", maxWR, maxSGE, errInvalid)
	}
	wqe := DataSegSize * max(maxSGE, 1)
	if wqe > maxRQDescSz {
		return l, fmt.Errorf("mlx5: size WQ: WQE of %d bytes exceeds %d: %w", wqe, maxRQDescSz, errInvalid)
	}
	wqe = roundupPow2(wqe)
	size := max(roundupPow2(maxWR)*wqe, SendWQEBB)
	l.WQECount = size / wqe
	for 1<<l.WQEShift < wqe {
		l.WQEShift++
	}
	l.MaxPost = l.WQECount
	l.MaxGS = wqe / DataSegSize
	l.BufSize = size
	return l, nil
}

// CreateWQReq returns libmlx5's WQ_CREATE driver request (struct mlx5_ib_create_wq) for a ring at bufAddr with
// its doorbell record at dbAddr and user index uidx: no flags (no WQE signature), no striding RQ.
func CreateWQReq(l RWQLayout, bufAddr, dbAddr uint64, uidx uint32) abi.Mlx5IbCreateWq {
	return abi.Mlx5IbCreateWq{BufAddr: bufAddr, DbAddr: dbAddr, RqWqeCount: uint32(l.WQECount),
		RqWqeShift: uint32(l.WQEShift), UserIndex: uidx}
}
