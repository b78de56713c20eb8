package hw

import "fmt"

// QPCaps are the capabilities requested for a QP (struct ibv_qp_cap).
type QPCaps struct {
	MaxSendWR, MaxRecvWR   int
	MaxSendSGE, MaxRecvSGE int
	MaxInlineData          int
}

// QPLayout is the geometry rdma-core's mlx5 provider derives from QPCaps: what the kernel is told in
// mlx5_ib_create_qp (sq_wqe_count, rq_wqe_count, rq_wqe_shift) and how the buffer is split (RQ at offset 0, SQ
// after it). Caps is the capability set reported back to the caller.
type QPLayout struct {
	SQWQECount, SQMaxPost, SQWQESize  int
	RQWQECount, RQWQEShift, RQMaxPost int
	SQOffset, BufSize                 int
	Caps                              QPCaps
}

// Device limits that bound QP sizing (from the alloc_ucontext response).
type QueueLimits struct {
	MaxSQDescSz, MaxRQDescSz int
	MaxSendWQEBB, MaxRecvWR  int
}

// sqOverhead is rdma-core's sq_overhead for the default send ops of each type: RC/UC reserve room for a UMR WQE
// (ctrl 16 + umr ctrl 48 + mkey context 64 + 64) = 192, UD adds the 48-byte datagram segment to a 16-byte ctrl.
func sqOverhead(t QPType) int {
	switch t {
	case QPTypeRC, QPTypeUC:
		return 192
	case QPTypeUD:
		return CtrlSegSize + DatagramSegSize
	}
	return -1
}

// SizeQP computes a QP's queue geometry exactly as rdma-core's mlx5_calc_sq_size / mlx5_calc_rq_size do
// (MLX5_QP_SIGNATURE off, no TSO). With srq true the QP has no RQ. pageSize rounds the buffer.
func SizeQP(t QPType, c QPCaps, srq bool, lim QueueLimits, pageSize int) (QPLayout, error) {
	var l QPLayout
	ov := sqOverhead(t)
	if ov < 0 {
		return l, fmt.Errorf("mlx5: size QP: type %v: %w", t, ErrNotSupported)
	}
	l.Caps = c
	if c.MaxSendWR > 0 {
		size := ov
		inl := 0
		if c.MaxInlineData > 0 {
			inl = ov + (inlineHdrSize+c.MaxInlineData+15)/16*16
		}
		if c.MaxSendSGE > (lim.MaxSQDescSz-size)/DataSegSize {
			return l, fmt.Errorf("mlx5: size QP: %d send SGEs exceed the descriptor size: %w", c.MaxSendSGE, errInvalid)
		}
		size += c.MaxSendSGE * DataSegSize
		tot := max(size, inl)
		if tot > lim.MaxSQDescSz {
			return l, fmt.Errorf("mlx5: size QP: send WQE of %d bytes exceeds %d: %w", tot, lim.MaxSQDescSz, errInvalid)
		}
		wqe := (tot + SendWQEBB - 1) / SendWQEBB * SendWQEBB
		l.Caps.MaxInlineData = wqe - ov - inlineHdrSize
		if c.MaxSendWR > 0x7fffffff/lim.MaxSQDescSz {
			return l, fmt.Errorf("mlx5: size QP: %d send WRs: %w", c.MaxSendWR, errInvalid)
		}
		wq := roundupPow2(c.MaxSendWR * wqe)
		l.SQWQECount = wq / SendWQEBB
		if l.SQWQECount > lim.MaxSendWQEBB {
			return l, fmt.Errorf("mlx5: size QP: %d send blocks exceed %d: %w", l.SQWQECount, lim.MaxSendWQEBB, errInvalid)
		}
		l.SQWQESize = wqe
		l.SQMaxPost = wq / wqe
		l.Caps.MaxSendWR = l.SQMaxPost
	}
	rqSize := 0
	if !srq && c.MaxRecvWR > 0 {
		if c.MaxRecvWR > lim.MaxRecvWR {
			return l, fmt.Errorf("mlx5: size QP: %d receive WRs exceed %d: %w", c.MaxRecvWR, lim.MaxRecvWR, errInvalid)
		}
		wqe := DataSegSize * max(c.MaxRecvSGE, 1)
		if wqe > lim.MaxRQDescSz {
			return l, fmt.Errorf("mlx5: size QP: receive WQE of %d bytes exceeds %d: %w", wqe, lim.MaxRQDescSz, errInvalid)
		}
		wqe = roundupPow2(wqe)
		rqSize = max(roundupPow2(c.MaxRecvWR)*wqe, SendWQEBB)
		l.RQWQECount = rqSize / wqe
		for 1<<l.RQWQEShift < wqe {
			l.RQWQEShift++
		}
		l.RQMaxPost = l.RQWQECount
		l.Caps.MaxRecvWR = l.RQMaxPost
		l.Caps.MaxRecvSGE = wqe / DataSegSize
	} else {
		l.Caps.MaxRecvWR, l.Caps.MaxRecvSGE = 0, 0
	}
	l.SQOffset = rqSize
	total := rqSize + l.SQWQECount*SendWQEBB
	if pageSize > 0 {
		total = (total + pageSize - 1) / pageSize * pageSize
	}
	l.BufSize = total
	return l, nil
}

// SRQLayout is the geometry of an SRQ without the ODP wait queue.
type SRQLayout struct {
	WQECount, WQEShift, MaxSGE int
	// MaxWR is what the kernel is told (max_wr = WQECount-1) and what the caller can post at once.
	MaxWR int
}

// SizeSRQ computes an SRQ's geometry like rdma-core's mlx5_alloc_srq_buf on a device too small for the wait
// queue: WQE = next segment + maxSGE data segments, at least 32 bytes, rounded to a power of two; WQECount =
// roundup_pow2(maxWR+1).
func SizeSRQ(maxWR, maxSGE int, lim QueueLimits) (SRQLayout, error) {
	var l SRQLayout
	if maxWR < 1 || maxSGE < 0 || maxWR > lim.MaxRecvWR {
		return l, fmt.Errorf("mlx5: size SRQ: %d WRs of %d SGEs: %w", maxWR, maxSGE, errInvalid)
	}
	size := roundupPow2(max(32, SRQNextSegSize+maxSGE*DataSegSize))
	if size > lim.MaxRQDescSz && lim.MaxRQDescSz > 0 {
		return l, fmt.Errorf("mlx5: size SRQ: WQE of %d bytes exceeds %d: %w", size, lim.MaxRQDescSz, errInvalid)
	}
	for 1<<l.WQEShift < size {
		l.WQEShift++
	}
	l.MaxSGE = (size - SRQNextSegSize) / DataSegSize
	l.WQECount = roundupPow2(maxWR + 1)
	l.MaxWR = l.WQECount - 1
	return l, nil
}
