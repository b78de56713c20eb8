package labtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// KernelVersion is the running kernel's version, for tests that assert what a kernel does where kernels differ.
type KernelVersion struct {
	Major, Minor int
	Release      string // uname -r, e.g. "6.1.0-56-amd64", "6.12.117+deb13-amd64"
	Upstream     string // the version the distribution names in /proc/version ("6.1.192-2" on Debian), else ""
}

// AtLeast reports whether the kernel is major.minor or newer.
func (k KernelVersion) AtLeast(major, minor int) bool {
	return k.Major > major || (k.Major == major && k.Minor >= minor)
}

func (k KernelVersion) String() string {
	if k.Upstream != "" {
		return fmt.Sprintf("%d.%d (%s, %s)", k.Major, k.Minor, k.Release, k.Upstream)
	}
	return fmt.Sprintf("%d.%d (%s)", k.Major, k.Minor, k.Release)
}

var kernelOnce = sync.OnceValue(func() KernelVersion {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		panic("labtest: uname: " + err.Error())
	}
	k := parseRelease(unix.ByteSliceToString(u.Release[:]))
	if b, err := os.ReadFile("/proc/version"); err == nil {
		// "Linux version 6.1.0-56-amd64 (...) #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-11-06)"
		if _, after, ok := strings.Cut(string(b), " Debian "); ok {
			k.Upstream, _, _ = strings.Cut(after, " ")
		}
	}
	return k
})

// Kernel returns the running kernel's version (uname -r).
func Kernel() KernelVersion { return kernelOnce() }

// parseRelease reads major and minor from a uname release string.
func parseRelease(rel string) KernelVersion {
	k := KernelVersion{Release: rel}
	f := strings.FieldsFunc(rel, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) >= 2 {
		k.Major, _ = strconv.Atoi(f[0])
		k.Minor, _ = strconv.Atoi(f[1])
	}
	return k
}
