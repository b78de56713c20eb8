// Package ioctl is the one place where goverbs talks to a uverbs command file descriptor: the RDMA_VERBS_IOCTL
// ioctl and the legacy write() command channel. Both functions are allocation free and keep their argument alive
// for the duration of the system call.
//
// Every byte the kernel reads or writes through a pointer inside the command (attribute data pointers, legacy
// response pointers, provider udata such as ring addresses) must live in memory that cannot move and stays
// reachable until the call returns: heap memory kept alive by the caller (the Go heap does not move objects;
// callers pin with runtime.Pinner or runtime.KeepAlive), or mmap'd memory. Stack memory is never acceptable,
// because a goroutine stack can move between the moment an address is taken and the system call.
package ioctl

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RDMA_VERBS_IOCTL is _IOWR(RDMA_IOCTL_MAGIC=0x1b, 1, struct ib_uverbs_ioctl_hdr (24 bytes)). The generated ABI
// package carries the same value (computed by the C preprocessor); a test checks they agree.
const rdmaVerbsIoctl = 0xc0181b01

// Ioctl issues RDMA_VERBS_IOCTL on fd with the command at hdr (an ib_uverbs_ioctl_hdr followed by its attribute
// array, in one contiguous buffer). It returns nil or the kernel's errno as a unix.Errno (never allocates:
// errno values are small and box without allocation).
func Ioctl(fd int, hdr unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), rdmaVerbsIoctl, uintptr(hdr))
		if e != unix.EINTR {
			runtime.KeepAlive(hdr)
			return errnoErr(e)
		}
	}
}

// IoctlRaw is Ioctl for commands the kernel completes without sleeping, such as arming a CQ: a raw system
// call, so the Go scheduler does not do its entry and exit work around it (see WriteRaw). A command that can
// block must use Ioctl.
//
// The raw calls go to package syscall's RawSyscall6 directly: x/sys/unix's RawSyscall is an assembly jump to
// syscall's RawSyscall, which calls RawSyscall6, so each call paid an ABI wrapper and two frames more (about 40
// instructions, counted with callgrind on rxe's doorbell), and these calls are on the data path.
func IoctlRaw(fd int, hdr unsafe.Pointer) error {
	for {
		_, _, e := syscall.RawSyscall6(unix.SYS_IOCTL, uintptr(fd), rdmaVerbsIoctl, uintptr(hdr), 0, 0, 0)
		if e != unix.EINTR {
			runtime.KeepAlive(hdr)
			return errnoErr(e)
		}
	}
}

// Write issues a legacy uverbs write() command of n bytes at buf on fd. The kernel answers a successful command
// by returning n; anything else is an error. Used for rxe's send doorbell (POST_SEND with no work requests),
// which rdma-core also sends with write().
func Write(fd int, buf unsafe.Pointer, n int) error {
	for {
		r, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(buf), uintptr(n))
		if e != unix.EINTR {
			runtime.KeepAlive(buf)
			return written(r, e, n)
		}
	}
}

// errnoErr is a system call's error: nil for errno 0 (an Errno in an error interface does not allocate).
func errnoErr(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// written is a write command's result: the kernel answers a successful command by returning its length.
func written(r uintptr, e syscall.Errno, n int) error {
	if e == 0 && int(r) != n {
		return unix.EIO
	}
	return errnoErr(e)
}

// WriteRaw is Write for commands the kernel completes without sleeping, such as rxe's send doorbell (the
// kernel runs the QP's requester inline and returns). It uses a raw system call, so the Go scheduler does not
// treat the thread as blocked: when the kernel's work outlasts sysmon's 20 µs threshold (rxe's inline send
// processing often does), a normal system call has its P handed off and must take one back on return, which
// costs futex wake-ups on every doorbell. A command that can block must use Write.
func WriteRaw(fd int, buf unsafe.Pointer, n int) error {
	for {
		r, _, e := syscall.RawSyscall6(unix.SYS_WRITE, uintptr(fd), uintptr(buf), uintptr(n), 0, 0, 0)
		if e != unix.EINTR {
			runtime.KeepAlive(buf)
			return written(r, e, n)
		}
	}
}
