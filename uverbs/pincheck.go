package uverbs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MemoryError is an allocation CheckPin refused before anything was allocated: the bytes asked for exceed
// the memory the system or the process's memory cgroup can still give. Registered memory is pinned (it cannot
// be swapped or reclaimed), so asking for more than that gets the process OOM-killed instead of an error.
// errors.Is(err, unix.ENOMEM) holds.
type MemoryError struct {
	Device    string // the device the memory was for ("" when none)
	Length    uint64 // bytes asked for
	Available uint64 // bytes the limit leaves
	Limit     string // which limit: "MemAvailable in /proc/meminfo" or "memory.max of cgroup /user.slice"
}

func (e *MemoryError) Error() string {
	on := ""
	if e.Device != "" {
		on = " on " + e.Device
	}
	return fmt.Sprintf("allocating and registering %d bytes%s exceeds the memory available: %s leaves %d bytes: %v",
		e.Length, on, e.Limit, e.Available, unix.ENOMEM)
}

// Unwrap is unix.ENOMEM.
func (e *MemoryError) Unwrap() error { return unix.ENOMEM }

// CheckPin reports, before anything is allocated, whether this process can allocate and register length more
// bytes for dev now. It returns a *MemlockError when the locked-memory limit (RLIMIT_MEMLOCK, finite and
// without CAP_IPC_LOCK) less the pages the process has pinned already (VmPin) is smaller than length, and a
// *MemoryError when the system's available memory (MemAvailable) or the memory cgroup's headroom (its limit
// less what it uses, page cache not counted; every ancestor's limit applies) is. It reads /proc and the cgroup
// files; what it cannot read does not refuse. Callers that allocate buffers to register them (rsocket's
// connection buffers) use it so that a size too large for the machine is an error, not the OOM killer.
func CheckPin(dev string, length uint64) error {
	if length == 0 {
		return nil
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil && rl.Cur != unix.RLIM_INFINITY && !hasCapIPCLock() {
		pinned := statusKB("/proc/self/status", "VmPin:")
		if pinned > rl.Cur || length > rl.Cur-pinned {
			return &MemlockError{Device: dev, Length: int(min(length, 1<<62)), Limit: rl.Cur}
		}
	}
	// MemAvailable is at least the free memory less the kernel's reserves (watermarks, a few percent): a
	// length within a quarter of the free memory (sysinfo(2), one system call) fits without reading
	// /proc/meminfo, whose generation costs tens of thousands of instructions — per connection, for rsocket.
	if !fitsFreeMemory(length) {
		if avail, ok := memAvailable("/proc/meminfo"); ok && length > avail {
			return &MemoryError{Device: dev, Length: length, Available: avail, Limit: "MemAvailable in /proc/meminfo"}
		}
	}
	if room, where, ok := cgroupHeadroom("/proc/self/cgroup", "/sys/fs/cgroup", length); ok && length > room {
		return &MemoryError{Device: dev, Length: length, Available: room, Limit: where}
	}
	return nil
}

// statusKB is the value in bytes of a "Key:   N kB" line of a /proc status or meminfo file (0 if absent).
func statusKB(file, key string) uint64 {
	v, _ := readKB(file, key)
	return v
}

func readKB(file, key string) (uint64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	return parseKB(b, key)
}

// parseKB finds "key N kB" in a /proc text and returns N*1024.
func parseKB(b []byte, key string) (uint64, bool) {
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), key)
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n > 1<<53 {
			return 0, false
		}
		return n * 1024, true
	}
	return 0, false
}

func memAvailable(file string) (uint64, bool) { return readKB(file, "MemAvailable:") }

// fitsFreeMemory is whether length is at most a quarter of the system's free memory.
func fitsFreeMemory(length uint64) bool {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return false
	}
	unit := max(uint64(si.Unit), 1)
	free := uint64(si.Freeram)
	if free > (1<<62)/unit {
		return true
	}
	return length <= free*unit/4
}

// cgroupHeadroom is the smallest headroom of the process's memory cgroup and its ancestors (v2: memory.max
// less memory.current plus the page cache of memory.stat's "file"; v1: memory.limit_in_bytes less
// memory.usage_in_bytes plus total_cache), with the limit that sets it.
//
// Where a limit leaves length or more even counting the page cache as used, that limit's memory.stat is not
// read, and its room is reported without the cache: the answer to "does length fit" is the same.
func cgroupHeadroom(procCgroup, root string, length uint64) (uint64, string, bool) {
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return 0, "", false
	}
	var best uint64
	where, found := "", false
	consider := func(dir, name, limitFile, usageFile, cacheKey string) {
		lim, ok := readUint(path.Join(dir, limitFile))
		if !ok {
			return
		}
		use, _ := readUint(path.Join(dir, usageFile))
		room := lim - min(lim, use)
		// The page cache only adds room: memory.stat (costly to generate: the kernel flushes its per-CPU
		// counters) is read only where the limit less all usage is not already enough.
		if room < length {
			cache := statValue(path.Join(dir, "memory.stat"), cacheKey)
			used := use - min(use, cache)
			room = lim - min(lim, used)
		}
		if !found || room < best {
			best, where, found = room, limitFile+" of cgroup "+name, true
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "": // v2
			for p := path.Clean(f[2]); ; p = path.Dir(p) {
				consider(path.Join(root, p), p, "memory.max", "memory.current", "file")
				if p == "/" {
					break
				}
			}
		case hasController(f[1], "memory"): // v1
			for p := path.Clean(f[2]); ; p = path.Dir(p) {
				consider(path.Join(root, "memory", p), p, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache")
				if p == "/" {
					break
				}
			}
		}
	}
	return best, where, found
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readUint reads a cgroup value file holding a decimal number ("max" and unreadable files: false).
func readUint(file string) (uint64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// statValue is the value of "key N" in a cgroup memory.stat file (0 if absent).
func statValue(file, key string) uint64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
