package uverbs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/internal/rdmaerr"
	"github.com/goverbs/goverbs/netlinkrdma"
	"golang.org/x/sys/unix"
)

// GUID is a 64-bit InfiniBand GUID in host order; String formats it as rdma-core and iproute2 do.
type GUID = netlinkrdma.GUID

// NodeType is the RDMA node type of a device (CA, RNIC, ...).
type NodeType = netlinkrdma.NodeType

// DriverID identifies the kernel driver behind a device; providers are chosen by it.
type DriverID = netlinkrdma.DriverID

// Driver ids of the providers goverbs ships.
const (
	DriverUnknown = netlinkrdma.DriverUnknown
	DriverRXE     = netlinkrdma.DriverRXE
	DriverMLX5    = netlinkrdma.DriverMLX5
	DriverSIW     = netlinkrdma.DriverSIW
)

// Where discovery looks: sysfs and the uverbs character devices. Discovery functions take the roots as
// parameters (tests pass fake trees); nothing in the package is a mutable global.
const (
	sysfsRoot = "/sys"
	devDir    = "/dev/infiniband"
)

// Device is an RDMA device as discovery finds it; Open it to use it.
type Device struct {
	Name     string   // "rxe0", "mlx5_0"
	Index    uint32   // the kernel's device index (0 when found through sysfs)
	NodeGUID GUID     // as ibv_get_device_guid reports it
	NodeType NodeType // CA, RNIC, ...
	NumPorts uint32
	Chardev  string // "uverbs0"
	DevPath  string // "/dev/infiniband/uverbs0"
	Major    uint32 // character device number of DevPath
	Minor    uint32
	DriverID DriverID // RDMA_DRIVER_*, DriverUnknown if the kernel does not say
	ABI      uint32   // the driver's uverbs ABI version
	// Err is set when the device exists but cannot be used from here: no uverbs character device, the /dev
	// node is missing or not accessible. Discovery reports such devices instead of failing the whole list.
	Err error
}

// SysfsPath is the device's directory under /sys/class/infiniband.
func (d *Device) SysfsPath() string { return ibdevPath(sysfsRoot, d.Name) }

func ibdevPath(sysfs, name string) string { return filepath.Join(sysfs, "class", "infiniband", name) }

// ErrNoDevice is returned (wrapped) when a named device does not exist. It is goverbs' one no-such-device
// value (umad.ErrNoDevice is the same).
var ErrNoDevice = rdmaerr.ErrNoDevice

// Devices lists the RDMA devices with a uverbs interface, in the kernel's device index order. It asks RDMA
// netlink first (NLDEV GET dump plus GET_CHARDEV "uverbs" per device, as rdma-core does) and falls back to sysfs
// (/sys/class/infiniband_verbs) when netlink is unavailable. A device that is present but unusable (for example
// its /dev node is missing in a container) is returned with Err set.
func Devices() ([]Device, error) {
	devs, nlErr := devicesFromNetlink()
	if nlErr != nil {
		var err error
		devs, err = devicesFromSysfs(sysfsRoot, devDir)
		if err != nil {
			return nil, fmt.Errorf("list RDMA devices: netlink: %v; sysfs: %w", nlErr, err)
		}
	}
	for i := range devs {
		checkAccess(&devs[i])
	}
	return devs, nil
}

// DeviceByName finds one device by name. Its errors are *Error (Op "find device"); one for a name that no
// device has matches ErrNoDevice.
func DeviceByName(name string) (Device, error) {
	d, err := deviceByName(name)
	if err != nil {
		return Device{}, wrap("find device", name, err)
	}
	return d, nil
}

// deviceByName is DeviceByName with the bare cause (ErrNoDevice, or why the list failed).
func deviceByName(name string) (Device, error) {
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	if d, ok := findDevice(devs, name); ok {
		return d, nil
	}
	return Device{}, ErrNoDevice
}

// findDevice is the device called name in devs.
func findDevice(devs []Device, name string) (Device, bool) {
	for _, d := range devs {
		if d.Name == name {
			return d, true
		}
	}
	return Device{}, false
}

func devicesFromNetlink() ([]Device, error) {
	c, err := netlinkrdma.Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	nd, err := c.Devices()
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(nd))
	for _, n := range nd {
		d := Device{Name: n.Name, Index: n.Index, NodeGUID: n.NodeGUID, NodeType: n.NodeType, NumPorts: n.NumPorts}
		cd, err := c.Chardev(n.Index, "uverbs")
		if err != nil {
			// A device without a uverbs interface (or whose driver does not bind one) is not usable for
			// verbs; rdma-core then looks in sysfs, and so do we.
			if sd, ok := uverbsFromSysfs(n.Name); ok {
				d.Chardev, d.DevPath, d.Major, d.Minor, d.ABI = sd.Chardev, sd.DevPath, sd.Major, sd.Minor, sd.ABI
				d.DriverID = driverIDFromSysfs(d.SysfsPath())
			} else {
				d.Err = fmt.Errorf("no uverbs character device: %w", err)
			}
		} else {
			d.Chardev = cd.Name
			d.DevPath = filepath.Join(devDir, cd.Name)
			d.Major, d.Minor = cd.Major, cd.Minor
			d.ABI = uint32(cd.ABI)
			d.DriverID = cd.DriverID
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// checkAccess sets d.Err when the device's /dev node is missing, not a character device, or not readable and
// writable by this process (opening it would fail with EACCES).
func checkAccess(d *Device) { checkAccessWith(d, unix.Access) }

// checkAccessWith is checkAccess with the access(2) call given (tests: root passes every permission check).
func checkAccessWith(d *Device, access func(path string, mode uint32) error) {
	if d.Err != nil || d.DevPath == "" {
		return
	}
	var st unix.Stat_t
	if err := unix.Stat(d.DevPath, &st); err != nil {
		d.Err = fmt.Errorf("%w (in a container, pass the device: --device %s, or mount /dev/infiniband)",
			&os.PathError{Op: "stat", Path: d.DevPath, Err: err}, d.DevPath)
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		d.Err = fmt.Errorf("%s is not a character device", d.DevPath)
		return
	}
	if err := access(d.DevPath, unix.R_OK|unix.W_OK); err != nil {
		d.Err = fmt.Errorf("%w (uid %d; the node's mode is %#o, owner %d:%d: a udev rule or membership of the group that owns it grants access)",
			&os.PathError{Op: "open for reading and writing", Path: d.DevPath, Err: err}, os.Getuid(), st.Mode&0o777, st.Uid, st.Gid)
	}
}

// uverbsFromSysfs finds the uverbs interface of one IB device under its sysfs directory.
func uverbsFromSysfs(ibdev string) (Device, bool) {
	devs, err := devicesFromSysfs(sysfsRoot, devDir)
	if err != nil {
		return Device{}, false
	}
	return findDevice(devs, ibdev)
}

// devicesFromSysfs lists uverbs devices from /sys/class/infiniband_verbs, the fallback rdma-core uses when RDMA
// netlink is not available.
func devicesFromSysfs(sysfs, dev string) ([]Device, error) {
	dir := filepath.Join(sysfs, "class", "infiniband_verbs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var devs []Device
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "uverbs") {
			continue
		}
		base := filepath.Join(dir, name)
		ibdev, err := readSysfsString(filepath.Join(base, "ibdev"))
		if err != nil {
			continue
		}
		d := Device{Name: ibdev, Chardev: name, DevPath: filepath.Join(dev, name)}
		if s, err := readSysfsString(filepath.Join(base, "dev")); err == nil {
			if maj, min, ok := strings.Cut(s, ":"); ok {
				a, _ := strconv.ParseUint(maj, 10, 32)
				b, _ := strconv.ParseUint(min, 10, 32)
				d.Major, d.Minor = uint32(a), uint32(b)
			}
		}
		if s, err := readSysfsString(filepath.Join(base, "abi_version")); err == nil {
			v, _ := strconv.ParseUint(s, 10, 32)
			d.ABI = uint32(v)
		}
		ibpath := ibdevPath(sysfs, d.Name)
		if s, err := readSysfsString(filepath.Join(ibpath, "node_guid")); err == nil {
			g, _ := ParseGUID(s)
			d.NodeGUID = g
		}
		if s, err := readSysfsString(filepath.Join(ibpath, "node_type")); err == nil {
			// "1: CA", "4: RNIC", ...
			if n, _, ok := strings.Cut(s, ":"); ok {
				v, _ := strconv.ParseUint(strings.TrimSpace(n), 10, 8)
				d.NodeType = NodeType(v)
			}
		}
		if ents, err := os.ReadDir(filepath.Join(ibpath, "ports")); err == nil {
			d.NumPorts = uint32(len(ents))
		}
		d.DriverID = driverIDFromSysfs(ibpath)
		devs = append(devs, d)
	}
	return devs, nil
}

// driverIDFromSysfs names the driver where netlink is unavailable, by device name (rxe, as rdma-core's
// VERBS_NAME_MATCH("rxe"); siw, which rdma-core matches by driver id, which sysfs does not give) or by the PCI
// driver the device is bound to (mlx5_core).
func driverIDFromSysfs(ibpath string) DriverID {
	if strings.Contains(filepath.Base(ibpath), "rxe") {
		return DriverRXE
	}
	if strings.Contains(filepath.Base(ibpath), "siw") {
		return DriverSIW
	}
	if link, err := os.Readlink(filepath.Join(ibpath, "device", "driver")); err == nil {
		if filepath.Base(link) == "mlx5_core" {
			return DriverMLX5
		}
	}
	return DriverUnknown
}

// ParseGUID parses a GUID in sysfs / rdma-core form, "xxxx:xxxx:xxxx:xxxx".
func ParseGUID(s string) (GUID, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return 0, fmt.Errorf("parse GUID %q: want four groups of four hex digits", s)
	}
	var g uint64
	for _, p := range parts {
		if len(p) != 4 {
			return 0, fmt.Errorf("parse GUID %q: want four groups of four hex digits", s)
		}
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return 0, fmt.Errorf("parse GUID %q: %w", s, err)
		}
		g = g<<16 | v
	}
	return GUID(g), nil
}

func readSysfsString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}
