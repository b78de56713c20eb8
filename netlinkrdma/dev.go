package netlinkrdma

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

// Device is one RDMA device as RDMA_NLDEV_CMD_GET reports it.
type Device struct {
	Index    uint32 // RDMA_NLDEV_ATTR_DEV_INDEX
	Name     string // RDMA_NLDEV_ATTR_DEV_NAME ("rxe0", "mlx5_0")
	NumPorts uint32 // RDMA_NLDEV_ATTR_PORT_INDEX, which GET uses for the port count

	NodeType     NodeType   // RDMA_NLDEV_ATTR_DEV_NODE_TYPE
	NodeGUID     GUID       // RDMA_NLDEV_ATTR_NODE_GUID
	SysImageGUID GUID       // RDMA_NLDEV_ATTR_SYS_IMAGE_GUID
	Caps         DeviceCaps // RDMA_NLDEV_ATTR_CAP_FLAGS

	// FirmwareVersion is empty when the kernel sent none (rxe has none).
	FirmwareVersion string
	// Protocol is "ib", "roce", "iw", "opa" or "usnic"; empty if not sent.
	Protocol string
	// Type is the kind of a sub-device (DeviceTypeSMI, Linux 6.11+); zero
	// for an ordinary device, which the kernel sends no type for.
	Type DeviceType
	// Parent names the device a sub-device was created under ("" if none).
	Parent string
	// AdaptiveModeration is the CQ adaptive moderation (DIM) setting; nil
	// when the kernel did not report it or reported a value other than 0
	// or 1.
	AdaptiveModeration *bool

	// Present records which attributes the kernel sent, for callers that
	// print exactly what the kernel reported (as iproute2 does).
	Present AttrSet
}

// AttrSet is a set of RDMA_NLDEV_ATTR_* attribute types seen in a reply.
type AttrSet struct{ bits [2]uint64 }

func (s *AttrSet) add(t uint16) {
	if t < 128 {
		s.bits[t/64] |= 1 << (t % 64)
	}
}

// Has reports whether attribute type t (an abi.RDMA_NLDEV_ATTR_* value) was
// present.
func (s AttrSet) Has(t uint16) bool {
	return t < 128 && s.bits[t/64]&(1<<(t%64)) != 0
}

// lacks returns the first of ts that is not in s; ok is false when s has
// them all.
func (s AttrSet) lacks(ts ...uint16) (t uint16, ok bool) {
	for _, t := range ts {
		if !s.Has(t) {
			return t, true
		}
	}
	return 0, false
}

// decodeDevice decodes one RDMA_NLDEV_CMD_GET reply payload.
func decodeDevice(b []byte) (Device, error) {
	var d Device
	err := walk(b, &d.Present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			d.Index = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			d.Name = ad.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			d.NumPorts = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
			d.Caps = DeviceCaps(ad.Uint64())
		case abi.RDMA_NLDEV_ATTR_FW_VERSION:
			d.FirmwareVersion = ad.String()
		case abi.RDMA_NLDEV_ATTR_NODE_GUID:
			d.NodeGUID = GUID(ad.Uint64())
		case abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID:
			d.SysImageGUID = GUID(ad.Uint64())
		case abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE:
			d.NodeType = NodeType(ad.Uint8())
		case abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL:
			d.Protocol = ad.String()
		case abi.RDMA_NLDEV_ATTR_DEV_DIM:
			d.AdaptiveModeration = dimSetting(ad.Uint8())
		case abi.RDMA_NLDEV_ATTR_DEV_TYPE:
			d.Type = DeviceType(ad.Uint8())
		case abi.RDMA_NLDEV_ATTR_PARENT_NAME:
			d.Parent = ad.String()
		}
	})
	if err != nil {
		return Device{}, err
	}
	if _, ok := d.Present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME); ok {
		return Device{}, errors.New("netlinkrdma: device reply lacks index or name")
	}
	return d, nil
}

// Devices lists the RDMA devices visible in the Conn's network namespace.
//
// Equivalent to: rdma dev show
func (c *Conn) Devices() ([]Device, error) {
	devs, err := list(c, abi.RDMA_NLDEV_CMD_GET, nil, decodeDevice)
	if err != nil {
		return nil, opErr("list devices", "", err)
	}
	return devs, nil
}

// DeviceByIndex returns the device with kernel index idx. An unknown index
// gives an error matching unix.EINVAL (the kernel's answer).
//
// Equivalent to: rdma dev show DEV
func (c *Conn) DeviceByIndex(idx uint32) (Device, error) {
	d, err := get(c, abi.RDMA_NLDEV_CMD_GET, devAttrs(idx).Encode(), decodeDevice)
	if err != nil {
		return Device{}, opErr("get device", fmt.Sprintf("index %d", idx), err)
	}
	return d, nil
}

// Device returns the device called name. The kernel looks devices up by
// index only, so this lists the devices and picks one; an unknown name gives
// an error matching unix.ENODEV.
//
// Equivalent to: rdma dev show NAME
func (c *Conn) Device(name string) (Device, error) {
	devs, err := c.Devices()
	if err != nil {
		return Device{}, opErr("get device", name, unwrapOp(err))
	}
	for _, d := range devs {
		if d.Name == name {
			return d, nil
		}
	}
	return Device{}, opErr("get device", name, unix.ENODEV)
}

// SetDeviceName renames a device. Needs CAP_NET_ADMIN (else EPERM).
//
// Equivalent to: rdma dev set OLD name NEW
func (c *Conn) SetDeviceName(idx uint32, newName string) error {
	e := devAttrs(idx)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, newName)
	return opErr("rename device", fmt.Sprintf("index %d to %q", idx, newName),
		c.doit(abi.RDMA_NLDEV_CMD_SET, e.Encode(), nil))
}

// SetDeviceNetNS moves a device into the network namespace behind the open
// file descriptor nsFD (e.g. of /var/run/netns/NAME or /proc/PID/ns/net).
// The kernel requires exclusive netns mode, CAP_NET_ADMIN and a driver that
// can disassociate user contexts; rxe cannot (EOPNOTSUPP).
//
// Equivalent to: rdma dev set DEV netns NSNAME
func (c *Conn) SetDeviceNetNS(idx uint32, nsFD int) error {
	e := devAttrs(idx)
	e.Uint32(abi.RDMA_NLDEV_NET_NS_FD, uint32(nsFD))
	return opErr("move device", fmt.Sprintf("index %d to netns fd %d", idx, nsFD),
		c.doit(abi.RDMA_NLDEV_CMD_SET, e.Encode(), nil))
}

// SetDeviceNetNSByPID moves a device into the network namespace of process
// pid, as SetDeviceNetNS with /proc/PID/ns/net.
func (c *Conn) SetDeviceNetNSByPID(idx uint32, pid int) error {
	path := fmt.Sprintf("/proc/%d/ns/net", pid)
	f, err := os.Open(path)
	if err != nil {
		return opErr("move device", fmt.Sprintf("index %d to netns of pid %d", idx, pid), err)
	}
	defer f.Close()
	return c.SetDeviceNetNS(idx, int(f.Fd()))
}

// SetAdaptiveModeration turns CQ adaptive moderation (DIM) on or off for the
// device's kernel CQs. Needs CAP_NET_ADMIN.
//
// Equivalent to: rdma dev set DEV adaptive-moderation on|off
func (c *Conn) SetAdaptiveModeration(idx uint32, on bool) error {
	e := devAttrs(idx)
	e.Bool(abi.RDMA_NLDEV_ATTR_DEV_DIM, on)
	return opErr("set adaptive-moderation on device", fmt.Sprintf("index %d", idx),
		c.doit(abi.RDMA_NLDEV_CMD_SET, e.Encode(), nil))
}

// dimSetting turns a RDMA_NLDEV_ATTR_DEV_DIM value into a setting; values
// other than 0 and 1 are not settings (nil).
func dimSetting(v uint8) *bool {
	if v > 1 {
		return nil
	}
	on := v == 1
	return &on
}

// With returns s with attribute type t added; for building fixed data in
// tests and examples.
func (s AttrSet) With(t uint16) AttrSet {
	s.add(t)
	return s
}

// DeviceType is RDMA_NLDEV_ATTR_DEV_TYPE, the kind of a sub-device.
type DeviceType uint8

// DeviceTypeSMI is an SMI sub-device (RDMA_DEVICE_TYPE_SMI).
const DeviceTypeSMI DeviceType = 1

// String returns iproute2's word: "smi", otherwise "unknown".
func (t DeviceType) String() string {
	if t == DeviceTypeSMI {
		return "smi"
	}
	return "unknown"
}

// AddSubDevice creates a sub-device of type typ called name under the
// device with index parent (Linux 6.11+; mlx5 SMI devices). Kernels and
// drivers without sub-devices answer EOPNOTSUPP.
//
// Equivalent to: rdma dev add NAME type smi parent PARENT
func (c *Conn) AddSubDevice(parent uint32, name string, typ DeviceType) error {
	e := devAttrs(parent)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, name)
	e.Uint8(abi.RDMA_NLDEV_ATTR_DEV_TYPE, uint8(typ))
	return opErr("add sub-device", name, c.doit(abi.RDMA_NLDEV_CMD_NEWDEV, e.Encode(), nil))
}

// DeleteSubDevice deletes the sub-device with index idx.
//
// Equivalent to: rdma dev delete NAME
func (c *Conn) DeleteSubDevice(idx uint32) error {
	e := devAttrs(idx)
	return opErr("delete sub-device", "", c.doit(abi.RDMA_NLDEV_CMD_DELDEV, e.Encode(), nil))
}
