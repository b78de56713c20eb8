// Package verbsdev lists RDMA verbs devices the way libibverbs 65
// (ibv_get_device_list) does when it scans sysfs: one device per
// class/infiniband_verbs/uverbsN whose ibdev, dev and /dev/infiniband node
// exist, in directory order, with the same errors (ENOSYS when the class is
// missing or the kernel ABI is out of range) and the same warnings.
//
// Differences from the C library, by design: devices are not matched against
// userspace provider drivers (every device with a uverbs node is listed;
// rdma-core 65 ships a provider for every in-tree driver), and the netlink
// enumeration libibverbs tries first is not used (its order, by device index,
// equals the sysfs order on ordinary systems).
package verbsdev

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

// Node types (enum ibv_node_type).
const (
	NodeUnknown     = -1
	NodeCA          = 1
	NodeSwitch      = 2
	NodeRouter      = 3
	NodeRNIC        = 4
	NodeUSNIC       = 5
	NodeUSNICUDP    = 6
	NodeUnspecified = 7
)

// Transport types (enum ibv_transport_type).
const (
	TransportUnknown     = -1
	TransportIB          = 0
	TransportIWARP       = 1
	TransportUSNIC       = 2
	TransportUSNICUDP    = 3
	TransportUnspecified = 4
)

// ABI window of the uverbs kernel interface libibverbs accepts.
const (
	minABI = 3
	maxABI = 6
)

// Buffer sizes of libibverbs (IBV_SYSFS_NAME_MAX etc.).
const (
	nameMax = 64
)

// Device is one entry of the device list.
type Device struct {
	Name       string // IB device name (ibv_get_device_name), e.g. "rxe0"
	DevName    string // uverbs class name, e.g. "uverbs0"
	IBDevPath  string // sysfs directory of the IB device
	NodeType   int    // enum ibv_node_type
	Transport  int    // enum ibv_transport_type, derived from NodeType
	ABIVersion uint64 // driver uverbs ABI (uverbsN/abi_version), 0 if absent
}

// TransportOf is the transport libibverbs assigns to a node type.
func TransportOf(nodeType int) int {
	switch nodeType {
	case NodeCA, NodeSwitch, NodeRouter:
		return TransportIB
	case NodeRNIC:
		return TransportIWARP
	case NodeUSNIC:
		return TransportUSNIC
	case NodeUSNICUDP:
		return TransportUSNICUDP
	case NodeUnspecified:
		return TransportUnspecified
	}
	return TransportUnknown
}

// decodeNodeType maps the kernel's RDMA_NODE_* number to ibv_node_type; the
// numbers coincide, anything else is unknown.
func decodeNodeType(k uint64) int {
	if k >= NodeCA && k <= NodeUnspecified {
		return int(k)
	}
	return NodeUnknown
}

// ReadFile is libibverbs' ibv_read_sysfs_file: one read of at most size
// bytes; a trailing newline is dropped; content that fills the buffer without
// one is an error. The result is the C string (up to the first NUL).
func ReadFile(path string, size int) (string, error) {
	b, err := sysfs.ReadN(path, size)
	if err != nil {
		return "", err
	}
	switch {
	case len(b) > 0 && b[len(b)-1] == '\n':
		b = b[:len(b)-1]
	case len(b) == size:
		return "", fmt.Errorf("read %s: value does not fit %d bytes: %w", path, size, unix.EOVERFLOW)
	}
	return sysfs.CString(b), nil
}

// Lister enumerates devices in a tree.
type Lister struct {
	FS sysfs.FS
	// Stderr receives libibverbs' warnings (kernel ABI mismatch).
	Stderr io.Writer
}

// List returns the devices, or an error wrapping unix.ENOSYS when
// class/infiniband_verbs is missing or the kernel ABI is not 3..6 (what
// ibv_get_device_list reports as "Function not implemented").
func (l Lister) List() ([]Device, error) {
	classDir := l.FS.SysPath("class/infiniband_verbs")
	names, err := sysfs.Names(classDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", classDir, unix.ENOSYS)
	}
	var devs []Device
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		if d, ok := l.setup(classDir, n); ok {
			devs = append(devs, d)
		}
	}
	if len(devs) > 0 {
		if err := l.checkABI(); err != nil {
			return nil, err
		}
	}
	return devs, nil
}

func (l Lister) setup(classDir, uverbs string) (Device, bool) {
	dir := classDir + "/" + uverbs
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return Device{}, false
	}
	name, err := ReadFile(dir+"/ibdev", nameMax)
	if err != nil {
		return Device{}, false
	}
	d := Device{Name: name, DevName: uverbs, IBDevPath: l.FS.SysPath("class/infiniband/" + name)}
	if _, err := os.Stat(d.IBDevPath); err != nil {
		return Device{}, false
	}
	devno, err := ReadFile(dir+"/dev", 32)
	if err != nil || !parseDevno(devno) {
		return Device{}, false
	}
	if v, err := ReadFile(dir+"/abi_version", 32); err == nil && v != "" {
		d.ABIVersion, _, _ = cstd.Strtoul(v, 10)
	}
	d.NodeType = NodeUnknown
	if v, err := ReadFile(d.IBDevPath+"/node_type", 32); err == nil && v != "" {
		k, _, _ := cstd.Strtoul(v, 10)
		d.NodeType = decodeNodeType(k)
	}
	d.Transport = TransportOf(d.NodeType)
	if _, err := os.Stat(l.FS.DevPath("infiniband/" + uverbs)); err != nil {
		return Device{}, false
	}
	return d, true
}

// parseDevno accepts what sscanf("%u:%u") converts twice.
func parseDevno(s string) bool {
	_, n, _ := cstd.Strtoul(s, 10)
	if n == 0 || n >= len(s) || s[n] != ':' {
		return false
	}
	_, m, _ := cstd.Strtoul(s[n+1:], 10)
	return m > 0
}

func (l Lister) checkABI() error {
	p := l.FS.SysPath("class/infiniband_verbs/abi_version")
	v, err := ReadFile(p, 8)
	if err != nil {
		return fmt.Errorf("read uverbs ABI version: %w", unix.ENOSYS)
	}
	abi, _, _ := cstd.Strtol(v, 10)
	abi32 := int32(abi)
	if abi32 < minABI || abi32 > maxABI {
		if l.Stderr != nil {
			fmt.Fprintf(l.Stderr, "libibverbs: Fatal: kernel ABI version %d doesn't match library version %d.\n", abi32, maxABI)
		}
		return fmt.Errorf("uverbs ABI version %d: %w", abi32, unix.ENOSYS)
	}
	return nil
}

// NodeGUID is ibv_get_device_guid over sysfs: the node_guid file's four
// 16-bit hex groups, 0 when it cannot be read or parsed.
func NodeGUID(d Device) uint64 {
	s, err := ReadFile(d.IBDevPath+"/node_guid", 24)
	if err != nil {
		return 0
	}
	var g uint64
	for i := 0; i < 4; i++ {
		v, n, ok := scanHex16(s)
		if !ok {
			return 0
		}
		g = g<<16 | v
		s = s[n:]
		if i < 3 {
			if !strings.HasPrefix(s, ":") {
				return 0
			}
			s = s[1:]
		}
	}
	return g
}

// scanHex16 is one sscanf "%hx" conversion.
func scanHex16(s string) (uint64, int, bool) {
	v, n, _ := cstd.Strtoul(s, 16)
	if n == 0 {
		return 0, 0, false
	}
	return v & 0xffff, n, true
}

// WarnMemlock prints libibverbs' warning about a tiny RLIMIT_MEMLOCK for a
// non-root user, as ibv_get_device_list does on first use.
func WarnMemlock(w io.Writer) {
	if unix.Geteuid() == 0 {
		return
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		fmt.Fprint(w, "libibverbs: Warning: getrlimit(RLIMIT_MEMLOCK) failed.")
		return
	}
	if rl.Cur <= 32768 {
		fmt.Fprintf(w, "libibverbs: Warning: RLIMIT_MEMLOCK is %d bytes.\n    This will severely limit memory registrations.\n", rl.Cur)
	}
}

// String describes the device for diagnostics: "rxe0 (uverbs0, node type 1)".
func (d Device) String() string {
	return d.Name + " (" + d.DevName + ", node type " + strconv.Itoa(d.NodeType) + ")"
}
