package hw

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

// MEMIC device memory (rdma-core's mlx5 alloc_dm_memic and mlx5_access_dm): the kernel names the memory by a
// page index and a start offset; the page is mapped through the command fd, and the host copies to and from
// it in 4-byte words, one 32-bit load or store each (the device's access granularity).

// DMMmapOffset is the mmap offset of MEMIC device memory on page pageIndex (rdma-core's dm_mmap: the
// MLX5_IB_MMAP_DEVICE_MEM command with the page index as its extended index, times the page size).
func DMMmapOffset(pageIndex uint16, pageSize int) int64 {
	idx := int64(pageIndex)
	return (int64(abi.MLX5_IB_MMAP_DEVICE_MEM)<<mmapCmdShift | idx&0xff | idx>>8<<16) * int64(pageSize)
}

// DMWordCopy copies between host memory and device memory mem (the length bytes from the start offset)
// as mlx5_access_dm does: offset+len(host) past length is EFAULT, an offset or length that is not a multiple
// of 4 EINVAL. toDevice copies host into mem at offset, else mem at offset into host.
func DMWordCopy(mem []byte, length uint64, offset uint64, host []byte, toDevice bool) error {
	n := uint64(len(host))
	switch {
	case offset+n > length || offset+n < offset || offset+n > uint64(len(mem)):
		return fmt.Errorf("mlx5: copy %d bytes at %d of %d-byte device memory: %w", n, offset, length, syscall.EFAULT)
	case n&3 != 0 || offset&3 != 0:
		return fmt.Errorf("mlx5: copy %d bytes at %d: device memory is accessed in 4-byte words: %w", n, offset, errInvalid)
	case n == 0:
		return nil
	}
	base := unsafe.Pointer(&mem[offset])
	for i := uint64(0); i < n; i += 4 {
		p := (*uint32)(unsafe.Add(base, i))
		if toDevice {
			*p = binary.NativeEndian.Uint32(host[i:])
		} else {
			binary.NativeEndian.PutUint32(host[i:], *p)
		}
	}
	return nil
}
