//go:build linux

package abi

// KernelSockaddrStorage is struct __kernel_sockaddr_storage (<linux/socket.h>):
// 128 bytes, 8-byte aligned, large enough for any socket address
// (sockaddr_in, sockaddr_in6, sockaddr_ib). rdma_user_cm.h embeds it in
// BIND, RESOLVE_ADDR, JOIN_MCAST and the QUERY ADDR response. It is
// hand-written because golang.org/x/sys/unix has no type of this layout
// (RawSockaddrAny is 112 bytes).
type KernelSockaddrStorage struct {
	_      [0]uint64 // alignment of the C union's void * member
	Family uint16
	Data   [126]byte
}

// SizeofKernelSockaddrStorage is sizeof(struct __kernel_sockaddr_storage).
const SizeofKernelSockaddrStorage = 128
