package hw

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/mmio"
)

// Register offsets inside a UAR (mlx5dv.h, rdma-core mlx5.h).
const (
	// BFOffset is the offset of the first BlueFlame register in a 4 KiB UAR (MLX5_BF_OFFSET).
	BFOffset = 0x800
	// CQDoorbellOffset is the offset of the CQ arm doorbell in the CQ's UAR page (MLX5_CQ_DOORBELL).
	CQDoorbellOffset = 0x20
	// AdapterPageSize is the size of one UAR inside a system page (MLX5_ADAPTER_PAGE_SIZE).
	AdapterPageSize = 4096
)

// BFReg is one send doorbell register ("bfreg", rdma-core struct mlx5_bf): the UAR window a QP rings. With a
// non-zero BlueFlame buffer size it is two halves of bufSize bytes each; a post of a single small WQE copies the WQE
// into the current half (BlueFlame) and every ring toggles the half. With bufSize 0 (no write-combining, the
// non-BlueFlame bfreg 0, or BlueFlame switched off) only the 8-byte doorbell at offset 0 is used.
//
// A BFReg shared by several QPs (rdma-core need_lock) serialises their rings with a WCLock; the copy, the flush
// and the toggle happen inside it.
type BFReg struct {
	reg     mmio.Reg
	bufSize uintptr
	maxDS   uint32 // bufSize/16: the largest WQE (in 16-byte units) a BlueFlame write carries; 0 without BlueFlame
	offset  uintptr
	shared  bool
	lock    mmio.WCLock
}

// NewBFReg returns a send doorbell register over reg (for a UAR page mapped at uar: reg =
// uar.Sub(AdapterPageSize*j + BFOffset + k*bfRegSize, bfRegSize)). bufSize is bf_reg_size/2 from the context
// (0 for no BlueFlame); reg must cover 2*bufSize bytes, or 8 when bufSize is 0. shared says whether other QPs ring
// the same register.
func NewBFReg(reg mmio.Reg, bufSize int, shared bool) (*BFReg, error) {
	if bufSize < 0 || bufSize%64 != 0 {
		return nil, fmt.Errorf("mlx5: BlueFlame buffer size %d is not a multiple of 64: %w", bufSize, errInvalid)
	}
	need := 2 * bufSize
	if need == 0 {
		need = 8
	}
	if reg.Len() < need {
		return nil, fmt.Errorf("mlx5: doorbell register window of %d bytes, need %d: %w", reg.Len(), need, errInvalid)
	}
	return &BFReg{reg: reg, bufSize: uintptr(bufSize), maxDS: uint32(bufSize / 16), shared: shared}, nil
}

// Reg returns the register's UAR window.
func (bf *BFReg) Reg() mmio.Reg { return bf.reg }

// BlueFlame reports whether the register can take BlueFlame writes.
func (bf *BFReg) BlueFlame() bool { return bf.bufSize != 0 }

// Offset returns the offset of the half the next ring will use (0 or the BlueFlame buffer size).
func (bf *BFReg) Offset() int { return int(bf.offset) }

// ring performs steps 4-8 of rdma-core's post_send_db: start write combining (or take the lock), then either a
// BlueFlame copy of n64 64-byte blocks of the ring at base (qend bytes long) starting at pos (wrapping at the end)
// or the 8-byte doorbell with the first 8 bytes of the ctrl segment, flush, toggle the half, unlock. pos is a
// multiple of 64 inside the ring. An unshared register's single-store cases (the doorbell, a one-block
// BlueFlame write) use mmio's combined WCStart+store+FlushWrites primitives: the same instructions in one call.
//
// nosplit: a short straight-line function on the post path; without the stack-bound check each call saves 3-4
// instructions (mlx5bench: inline SEND 318 -> 312, 16 RDMA writes 178 -> 174 per WR). The linker verifies that
// the nosplit frames fit the stack guard; the callees it may reach are ordinary functions with their own checks.
//
//go:nosplit
func (bf *BFReg) ring(base unsafe.Pointer, qend, pos uintptr, n64 int) {
	if !bf.shared && n64 <= 1 {
		half := bf.offset
		if n64 == 0 {
			bf.reg.WCWrite64(half, *(*uint64)(unsafe.Add(base, pos)))
		} else {
			bf.reg.WCCopyBlock(half, (*[64]byte)(unsafe.Add(base, pos)))
		}
		bf.offset = half ^ bf.bufSize
		return
	}
	if bf.shared {
		bf.lock.Lock()
	} else {
		mmio.WCStart()
	}
	half := bf.offset
	if n64 > 0 {
		off := half
		for {
			bf.reg.CopyBlock(off, (*[64]byte)(unsafe.Add(base, pos)))
			if n64--; n64 == 0 {
				break
			}
			off += 64
			if pos += 64; pos == qend {
				pos = 0
			}
		}
	} else {
		bf.reg.Write64(half, *(*uint64)(unsafe.Add(base, pos)))
	}
	mmio.FlushWrites()
	bf.offset = half ^ bf.bufSize
	if bf.shared {
		bf.lock.Unlock()
	}
}
