// Package sysfs is the small file reader the goverbs tools use for
// /sys/class/infiniband, /sys/class/infiniband_verbs and /dev/infiniband. Its
// roots are configurable so that tests run the tools against a fake tree
// under testdata.
//
// It deliberately offers raw reads with a byte limit (one read(2) of at most
// n bytes, as the C libraries do) and leaves the C-specific interpretation
// (newline stripping, truncation, number parsing) to the callers, which
// reproduce libibumad's and libibverbs' rules exactly.
package sysfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FS names the roots of the two trees the tools read.
type FS struct {
	// Sys is the sysfs mount point ("/sys" on a real system).
	Sys string
	// Dev is the device directory ("/dev" on a real system).
	Dev string
}

// Host is the real system: /sys and /dev.
var Host = FS{Sys: "/sys", Dev: "/dev"}

// Under returns an FS rooted at dir/sys and dir/dev, the layout of the test
// trees in testdata.
func Under(dir string) FS {
	return FS{Sys: filepath.Join(dir, "sys"), Dev: filepath.Join(dir, "dev")}
}

// SysPath joins rel (like "class/infiniband/rxe0/node_guid") to the sysfs
// root.
func (fs FS) SysPath(rel string) string { return filepath.Join(fs.Sys, rel) }

// DevPath joins rel (like "infiniband/uverbs0") to the device root.
func (fs FS) DevPath(rel string) string { return filepath.Join(fs.Dev, rel) }

// ReadN opens path and performs one read of at most n bytes, like
// open(2)+read(2) in the C tools. Errors are *os.PathError values wrapping the
// unix.Errno.
func ReadN(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	r, err := f.Read(buf)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf[:r], nil
}

// Names lists the entries of directory path in the order the kernel returns
// them (readdir order, unsorted), without "." and "..".
func Names(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", path, err)
	}
	return names, nil
}

// CString returns b up to its first NUL byte, as C string functions see it.
func CString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
