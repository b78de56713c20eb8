package uverbs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MemlockError is a memory registration the kernel refused (ENOMEM) while the process runs under a finite
// locked-memory limit (RLIMIT_MEMLOCK) without CAP_IPC_LOCK: registering pins the pages, and the kernel
// (ib_umem_get) counts every pinned page of the process against that limit. errors.Is(err, unix.ENOMEM) holds.
// The message names the limit and how to raise it.
type MemlockError struct {
	Device string
	Length int    // bytes the registration asked for
	Limit  uint64 // RLIMIT_MEMLOCK's soft limit in bytes when the registration failed
}

func (e *MemlockError) Error() string {
	return fmt.Sprintf("registering %d bytes on %s exceeds the locked-memory limit: RLIMIT_MEMLOCK is %d bytes "+
		"(it counts every page this process has pinned) and the process lacks CAP_IPC_LOCK; raise it with "+
		"`ulimit -l unlimited`, a memlock line in /etc/security/limits.conf, LimitMEMLOCK= in a systemd unit, "+
		"or `--ulimit memlock=-1` for a container: %v", e.Length, e.Device, e.Limit, unix.ENOMEM)
}

// Unwrap is unix.ENOMEM, the kernel's errno.
func (e *MemlockError) Unwrap() error { return unix.ENOMEM }

// memlockErr turns the kernel's ENOMEM from a registration into a *MemlockError when the locked-memory limit
// is the likely cause: the limit is finite and the process cannot exceed it (no CAP_IPC_LOCK). Other errors,
// and ENOMEM without such a limit, are returned unchanged.
func memlockErr(dev string, length int, err error) error {
	if !errors.Is(err, unix.ENOMEM) {
		return err
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) != nil || rl.Cur == unix.RLIM_INFINITY {
		return err
	}
	if hasCapIPCLock() {
		return err
	}
	return &MemlockError{Device: dev, Length: length, Limit: rl.Cur}
}

// capIPCLock is CAP_IPC_LOCK's bit number.
const capIPCLock = 14

// hasCapIPCLock reports whether the process's effective capabilities include CAP_IPC_LOCK (from
// /proc/self/status; unreadable counts as not having it).
var hasCapIPCLock = func() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	return capEffHas(bufio.NewScanner(f), capIPCLock)
}

// capEffHas reports whether the CapEff line of a /proc/PID/status text has bit set.
func capEffHas(s *bufio.Scanner, bit uint) bool {
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), "CapEff:")
		if !ok {
			continue
		}
		m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		return err == nil && m&(1<<bit) != 0
	}
	return false
}
