package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Version is a cgroup hierarchy version.
type Version int

// The two cgroup versions.
const (
	V1 Version = 1 // a legacy hierarchy mounted with -o rdma
	V2 Version = 2 // the unified hierarchy (cgroup2)
)

func (v Version) String() string { return "v" + strconv.Itoa(int(v)) }

// Controller files.
const (
	MaxFile            = "rdma.max"
	CurrentFile        = "rdma.current"
	procsFile          = "cgroup.procs"
	subtreeControlFile = "cgroup.subtree_control"
	controllersFile    = "cgroup.controllers"
	controllerName     = "rdma"
)

// Hierarchy is a mounted cgroup hierarchy that carries the RDMA controller.
type Hierarchy struct {
	Version    Version
	Mountpoint string // directory of the hierarchy's root cgroup (as mounted)
	// Root is the mount's root inside the hierarchy (mountinfo field 4): "/"
	// unless a subtree is mounted, as in some containers. Paths in
	// /proc/PID/cgroup are relative to the hierarchy root, so it is stripped
	// from them.
	Root string

	proc string // procfs mount, "/proc"
}

// NewHierarchy returns the hierarchy of the given version mounted at
// mountpoint, without checking anything. Tests point it at a temporary
// directory laid out like cgroupfs.
func NewHierarchy(v Version, mountpoint string) *Hierarchy {
	return &Hierarchy{Version: v, Mountpoint: mountpoint, Root: "/", proc: "/proc"}
}

// Find returns the hierarchy that carries the RDMA controller, from
// /proc/self/mountinfo: a cgroup v1 mount whose options include "rdma", or
// else a cgroup2 mount whose cgroup.controllers lists "rdma". It returns an
// error wrapping [ErrNoController] if there is none.
func Find() (*Hierarchy, error) {
	return find("/proc")
}

func find(proc string) (*Hierarchy, error) {
	data, err := os.ReadFile(filepath.Join(proc, "self/mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: find rdma controller: %w", err)
	}
	mounts, err := parseMountinfo(data)
	if err != nil {
		return nil, fmt.Errorf("cgroup: find rdma controller: %w", err)
	}
	for _, m := range mounts {
		if m.fsType == "cgroup" && slices.Contains(m.superOpts, controllerName) {
			return &Hierarchy{Version: V1, Mountpoint: m.mountpoint, Root: m.root, proc: proc}, nil
		}
	}
	var v2 []string
	for _, m := range mounts {
		if m.fsType != "cgroup2" {
			continue
		}
		v2 = append(v2, m.mountpoint)
		ctl, err := os.ReadFile(filepath.Join(m.mountpoint, controllersFile))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Fields(string(ctl)), controllerName) {
			return &Hierarchy{Version: V2, Mountpoint: m.mountpoint, Root: m.root, proc: proc}, nil
		}
	}
	if len(v2) > 0 {
		return nil, fmt.Errorf("cgroup: find rdma controller: no v1 rdma mount and %s lists no rdma in %s: %w",
			strings.Join(v2, ", "), controllersFile, ErrNoController)
	}
	return nil, fmt.Errorf("cgroup: find rdma controller: no v1 rdma mount and no cgroup2 mount: %w", ErrNoController)
}

// Cgroup is one cgroup of a [Hierarchy].
type Cgroup struct {
	h    *Hierarchy
	path string // clean, starts with "/"
}

// cleanPath makes p a clean absolute cgroup path; "", "." and "/" are the root.
func cleanPath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("cgroup: path %q contains NUL", p)
	}
	return path.Clean("/" + p), nil
}

// ErrOutsideHierarchy is wrapped by the error of [Hierarchy.Resolve] for a
// directory that is not in the hierarchy.
var ErrOutsideHierarchy = errors.New("not in the cgroup hierarchy")

// Resolve returns the path in the hierarchy (as [Hierarchy.Cgroup] and
// [Hierarchy.Create] take it) that p names. p is either a path in the
// hierarchy ("/a/b" or "a/b"; "/" is the root) or the cgroup's directory in
// the filesystem, at or below the mount point ("/sys/fs/cgroup/a/b" for
// "/a/b" when the hierarchy is mounted at /sys/fs/cgroup).
//
// An absolute p at or below the mount point is a directory. Any other
// absolute p is a path in the hierarchy, unless its first element is not a
// cgroup at the hierarchy's root but exists at the filesystem's root ("/tmp/x"
// with no cgroup /tmp): that is a directory outside the hierarchy, and the
// error, wrapping [ErrOutsideHierarchy], names p and the mount point.
func (h *Hierarchy) Resolve(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("cgroup: path %q contains NUL", p)
	}
	if !strings.HasPrefix(p, "/") {
		return cleanPath(p)
	}
	fp := filepath.Clean(p)
	mp := filepath.Clean(h.Mountpoint)
	if mp == "/" {
		return cleanPath(fp)
	}
	if rel, ok := strings.CutPrefix(fp, mp); ok && (rel == "" || rel[0] == '/') {
		return cleanPath(rel)
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(fp, "/"), "/")
	if first != "" {
		if _, err := os.Lstat(h.dir("/" + first)); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Lstat("/" + first); err == nil {
				return "", fmt.Errorf("cgroup: %s: %w: the %v rdma hierarchy is mounted at %s; give a directory below it or a path in it (\"/a/b\")",
					p, ErrOutsideHierarchy, h.Version, h.Mountpoint)
			}
		}
	}
	return cleanPath(fp)
}

// Cgroup returns the existing cgroup at path p of the hierarchy ("/a/b" or
// "a/b"; "/" is the root). ".." cannot climb above the root.
func (h *Hierarchy) Cgroup(p string) (*Cgroup, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	c := &Cgroup{h: h, path: cp}
	st, err := os.Stat(c.Dir())
	if err != nil {
		return nil, &Error{Op: "open", Cgroup: cp, Err: err}
	}
	if !st.IsDir() {
		return nil, &Error{Op: "open", Cgroup: cp, Err: &fs.PathError{Op: "open", Path: c.Dir(), Err: unix.ENOTDIR}}
	}
	return c, nil
}

// Create makes the cgroup at path p and any missing ancestors, and on
// cgroup v2 enables the RDMA controller in the cgroup.subtree_control of
// every ancestor of p (root included) so that p gets rdma.max. Existing
// cgroups are fine.
func (h *Hierarchy) Create(p string) (*Cgroup, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	cur := "/"
	for _, name := range strings.Split(strings.TrimPrefix(cp, "/"), "/") {
		if name == "" {
			break
		}
		if err := h.EnableController(cur); err != nil {
			return nil, err
		}
		cur = path.Join(cur, name)
		if err := os.Mkdir(h.dir(cur), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, &Error{Op: "create", Cgroup: cur, Err: err}
		}
	}
	return h.Cgroup(cp)
}

// EnableController enables the RDMA controller for the children of the
// cgroup at path p: on cgroup v2 it writes "+rdma" to its
// cgroup.subtree_control unless rdma is already listed there. The kernel
// refuses (EBUSY, ENOENT, EOPNOTSUPP) if p's own parent has not enabled rdma,
// or if p holds processes and is not the root (the v2 "no internal processes"
// rule). On cgroup v1 every cgroup of the rdma hierarchy has the controller,
// so it does nothing.
func (h *Hierarchy) EnableController(p string) error {
	if h.Version != V2 {
		return nil
	}
	cp, err := cleanPath(p)
	if err != nil {
		return err
	}
	file := filepath.Join(h.dir(cp), subtreeControlFile)
	cur, err := os.ReadFile(file)
	if err != nil {
		return &Error{Op: "enable rdma controller in", Cgroup: cp, Err: err}
	}
	if slices.Contains(strings.Fields(string(cur)), controllerName) {
		return nil
	}
	if err := writeFile(file, "+"+controllerName); err != nil {
		return &Error{Op: "enable rdma controller in", Cgroup: cp, Err: err}
	}
	return nil
}

// CgroupOf returns the cgroup of process pid in this hierarchy, from
// /proc/PID/cgroup.
func (h *Hierarchy) CgroupOf(pid int) (*Cgroup, error) {
	proc := h.proc
	if proc == "" {
		proc = "/proc"
	}
	data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: cgroup of pid %d: %w", pid, err)
	}
	p, err := procCgroupPath(data, h.Version)
	if err != nil {
		return nil, fmt.Errorf("cgroup: cgroup of pid %d: %w", pid, err)
	}
	// A mount of a subtree shows the cgroup relative to the mount's root.
	if h.Root != "" && h.Root != "/" {
		rel, ok := strings.CutPrefix(p, h.Root)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			return nil, fmt.Errorf("cgroup: cgroup of pid %d: %s is outside the mounted subtree %s", pid, p, h.Root)
		}
		p = rel
	}
	return h.Cgroup(p)
}

// Self returns the cgroup of the calling process in the hierarchy that
// carries the RDMA controller ([Find]).
func Self() (*Cgroup, error) {
	h, err := Find()
	if err != nil {
		return nil, err
	}
	return h.CgroupOf(os.Getpid())
}

func (h *Hierarchy) dir(cp string) string {
	return filepath.Join(h.Mountpoint, filepath.FromSlash(cp))
}

// Path returns the cgroup's path in its hierarchy ("/" for the root).
func (c *Cgroup) Path() string { return c.path }

// Dir returns the cgroup's directory.
func (c *Cgroup) Dir() string { return c.h.dir(c.path) }

// Hierarchy returns the hierarchy the cgroup belongs to.
func (c *Cgroup) Hierarchy() *Hierarchy { return c.h }

func (c *Cgroup) String() string { return c.h.Version.String() + ":" + c.path }

// readController reads rdma.max or rdma.current, telling "controller not
// enabled here" apart from other failures.
func (c *Cgroup) readController(file string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(c.Dir(), file))
	if err == nil {
		return data, nil
	}
	return nil, &Error{Op: "read " + file + " of", Cgroup: c.path, Err: c.notEnabled(err)}
}

// notEnabled adds ErrNotEnabled to an ENOENT on a controller file of an
// existing cgroup directory.
func (c *Cgroup) notEnabled(err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(c.Dir()); serr != nil {
		return err
	}
	hint := "enable rdma in the parent's " + subtreeControlFile
	if c.path == "/" {
		hint = "the root cgroup has no rdma files"
	} else if c.h.Version == V1 {
		hint = "not an rdma hierarchy"
	}
	return fmt.Errorf("%w (%s): %w", ErrNotEnabled, hint, err)
}

// Limits returns rdma.max: one [Limit] per registered RDMA device, [Max]
// where no limit is set.
func (c *Cgroup) Limits() ([]Limit, error) { return readParsed(c, MaxFile, ParseLimits) }

// Usage returns rdma.current: one [Usage] per registered RDMA device.
func (c *Cgroup) Usage() ([]Usage, error) { return readParsed(c, CurrentFile, ParseUsage) }

// readParsed reads a controller file (readController) and parses it; a
// parse failure is an *Error of reading file.
func readParsed[T any](c *Cgroup, file string, parse func([]byte) ([]T, error)) ([]T, error) {
	data, err := c.readController(file)
	if err != nil {
		return nil, err
	}
	v, err := parse(data)
	if err != nil {
		return nil, &Error{Op: "read " + file + " of", Cgroup: c.path, Err: err}
	}
	return v, nil
}

// DeviceLimit returns the limits of one device. A device that rdma.max does
// not list gives an [*Error] wrapping unix.ENODEV, as a write would.
func (c *Cgroup) DeviceLimit(device string) (Limit, error) {
	all, err := c.Limits()
	return deviceLine(c, MaxFile, device, all, err)
}

// DeviceUsage returns the usage of one device, or an [*Error] wrapping
// unix.ENODEV if rdma.current does not list it.
func (c *Cgroup) DeviceUsage(device string) (Usage, error) {
	all, err := c.Usage()
	return deviceLine(c, CurrentFile, device, all, err)
}

// deviceLine picks device's line from the lines of file that a read returned (with err), or fails as a write
// naming an unlisted device would (ENODEV).
func deviceLine[T Limit | Usage](c *Cgroup, file, device string, lines []T, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	for _, l := range lines {
		if Limit(l).Device == device {
			return l, nil
		}
	}
	return zero, &Error{Op: "read " + file + " of", Cgroup: c.path, Device: device, Err: unix.ENODEV}
}

// SetLimit writes the given limits of device to rdma.max in one write;
// resources not given keep their limit. The kernel answers ENODEV for a
// device it does not know and accepts a limit below the current usage (only
// later charges fail). Errors are [*Error]; errors.Is(err, unix.ENODEV) etc.
// work.
func (c *Cgroup) SetLimit(device string, values ...ResourceValue) error {
	line, err := FormatSetting(device, values...)
	if err != nil {
		return &Error{Op: "set limit in", Cgroup: c.path, Device: device, Err: err}
	}
	if err := writeFile(filepath.Join(c.Dir(), MaxFile), line); err != nil {
		return &Error{Op: "set limit in", Cgroup: c.path, Device: device, Err: c.notEnabled(err)}
	}
	return nil
}

// RemoveLimit sets every known resource of device back to "max".
func (c *Cgroup) RemoveLimit(device string) error {
	vals := make([]ResourceValue, 0, len(Resources()))
	for _, r := range Resources() {
		vals = append(vals, ResourceValue{Resource: r, Value: Max})
	}
	return c.SetLimit(device, vals...)
}

// AddProcess moves process pid (all its threads) into the cgroup by writing
// it to cgroup.procs. Objects it already holds stay charged to the cgroup
// that created them.
func (c *Cgroup) AddProcess(pid int) error {
	if err := writeFile(filepath.Join(c.Dir(), procsFile), strconv.Itoa(pid)); err != nil {
		return &Error{Op: "add process " + strconv.Itoa(pid) + " to", Cgroup: c.path, Err: err}
	}
	return nil
}

// Processes returns the process IDs listed in cgroup.procs.
func (c *Cgroup) Processes() ([]int, error) {
	data, err := os.ReadFile(filepath.Join(c.Dir(), procsFile))
	if err != nil {
		return nil, &Error{Op: "list processes of", Cgroup: c.path, Err: err}
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, &Error{Op: "list processes of", Cgroup: c.path, Err: fmt.Errorf("%w: %q in %s", ErrSyntax, f, procsFile)}
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// Remove removes the (empty) cgroup directory. The kernel refuses with EBUSY
// while it has processes or children. Objects still charged to it keep their
// charge until they are destroyed.
func (c *Cgroup) Remove() error {
	if c.path == "/" {
		return &Error{Op: "remove", Cgroup: c.path, Err: errors.New("cannot remove the root cgroup")}
	}
	if err := unix.Rmdir(c.Dir()); err != nil {
		return &Error{Op: "remove", Cgroup: c.path, Err: &fs.PathError{Op: "rmdir", Path: c.Dir(), Err: err}}
	}
	return nil
}

// writeFile writes s to an existing file in one write(2), as cgroupfs
// requires; it never creates the file.
func writeFile(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(s))
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}
