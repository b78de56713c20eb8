package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// mount is the part of one /proc/self/mountinfo line this package needs.
type mount struct {
	root       string   // field 4: the mount's root within its filesystem
	mountpoint string   // field 5
	fsType     string   // first field after "-"
	superOpts  []string // last field, split at ","
}

// parseMountinfo parses /proc/PID/mountinfo (proc(5)): "ID PARENT MAJ:MIN
// ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS". Paths
// have space, tab, newline and backslash escaped as \ooo.
func parseMountinfo(data []byte) ([]mount, error) {
	var out []mount
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		f := strings.Fields(string(line))
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) != sep+4 {
			return nil, fmt.Errorf("cgroup: parse mountinfo line %d %q: %w", n+1, line, ErrSyntax)
		}
		root, err1 := unescapeOctal(f[3])
		mp, err2 := unescapeOctal(f[4])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("cgroup: parse mountinfo line %d %q: %w", n+1, line, err)
		}
		out = append(out, mount{
			root:       root,
			mountpoint: mp,
			fsType:     f[sep+1],
			superOpts:  strings.Split(f[sep+3], ","),
		})
	}
	return out, nil
}

// unescapeOctal undoes the kernel's mangling of paths in mountinfo (\040 for
// space and so on).
func unescapeOctal(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("%w: truncated escape in %q", ErrSyntax, s)
		}
		v := 0
		for _, c := range []byte(s[i+1 : i+4]) {
			if c < '0' || c > '7' {
				return "", fmt.Errorf("%w: bad escape in %q", ErrSyntax, s)
			}
			v = v*8 + int(c-'0')
		}
		if v > 0xff {
			return "", fmt.Errorf("%w: bad escape in %q", ErrSyntax, s)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// procCgroupPath returns the path of the process's cgroup in the hierarchy of
// the given version from /proc/PID/cgroup (cgroups(7)): lines
// "ID:CONTROLLERS:PATH"; v2 is "0::PATH", a v1 rdma hierarchy lists "rdma"
// among its controllers.
func procCgroupPath(data []byte, v Version) (string, error) {
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			return "", fmt.Errorf("cgroup: parse /proc/PID/cgroup line %d %q: %w", n+1, line, ErrSyntax)
		}
		switch v {
		case V2:
			if f[0] == "0" && f[1] == "" {
				return f[2], nil
			}
		case V1:
			if f[0] != "0" && slices.Contains(strings.Split(f[1], ","), "rdma") {
				return f[2], nil
			}
		}
	}
	return "", fmt.Errorf("cgroup: no %v rdma hierarchy in /proc/PID/cgroup: %w", v, ErrNoController)
}
