package netlinkrdma

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
)

// Chardev is a character device of an RDMA device or of the RDMA subsystem,
// as RDMA_NLDEV_CMD_GET_CHARDEV reports it.
type Chardev struct {
	// Name is the node's name under /dev/infiniband ("uverbs0", "umad1").
	Name string
	// Dev is the device number in the kernel's huge_encode_dev form;
	// Major and Minor are decoded from it.
	Dev          uint64
	Major, Minor uint32
	// ABI is the chardev's ABI revision; for "uverbs" the driver's uverbs
	// ABI (rxe 2, mlx5 1).
	ABI uint64
	// DriverID is the uverbs driver id (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID);
	// DriverUnknown when the kernel sent none (types other than "uverbs",
	// and drivers without driver-id binding).
	DriverID DriverID
}

// decodeHugeDev splits a dev_t encoded by the kernel's huge_encode_dev
// (new_encode_dev): (minor & 0xff) | (major << 8) | ((minor &^ 0xff) << 12).
func decodeHugeDev(v uint64) (major, minor uint32) {
	major = uint32((v & 0xfff00) >> 8)
	minor = uint32((v & 0xff) | ((v >> 12) & 0xfff00))
	return major, minor
}

// decodeChardev decodes one RDMA_NLDEV_CMD_GET_CHARDEV reply payload.
func decodeChardev(b []byte) (Chardev, error) {
	var cd Chardev
	var present AttrSet
	err := walk(b, &present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_CHARDEV_NAME:
			cd.Name = ad.String()
		case abi.RDMA_NLDEV_ATTR_CHARDEV:
			cd.Dev = ad.Uint64()
			cd.Major, cd.Minor = decodeHugeDev(cd.Dev)
		case abi.RDMA_NLDEV_ATTR_CHARDEV_ABI:
			cd.ABI = ad.Uint64()
		case abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
			// The uapi header says u64, but the kernel (ib_uverbs_get_nl_info)
			// puts a u32; accept both.
			if len(ad.val) == 8 {
				cd.DriverID = DriverID(ad.Uint64())
			} else {
				cd.DriverID = DriverID(ad.Uint32())
			}
		}
	})
	if err != nil {
		return Chardev{}, err
	}
	if _, ok := present.lacks(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, abi.RDMA_NLDEV_ATTR_CHARDEV); ok {
		return Chardev{}, fmt.Errorf("netlinkrdma: chardev reply lacks name or dev_t")
	}
	return cd, nil
}

// Chardev returns the character device of type typ ("uverbs", "umad", ...)
// that belongs to the device with index devIndex. A device without such a
// chardev gives an error matching unix.ENOENT; an unknown type or device
// index gives one matching unix.EINVAL.
//
// This is how libibverbs finds /dev/infiniband/uverbsN for a device.
func (c *Conn) Chardev(devIndex uint32, typ string) (Chardev, error) {
	e := devAttrs(devIndex)
	e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, typ)
	return c.chardev(e.Encode(), fmt.Sprintf("%s of device index %d", typ, devIndex))
}

// PortChardev is Chardev for per-port character devices such as "umad".
func (c *Conn) PortChardev(devIndex, port uint32, typ string) (Chardev, error) {
	e := portAttrs(devIndex, port)
	e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, typ)
	return c.chardev(e.Encode(), fmt.Sprintf("%s of device index %d port %d", typ, devIndex, port))
}

// GlobalChardev returns a character device that belongs to no single RDMA
// device, such as "rdma_cm".
func (c *Conn) GlobalChardev(typ string) (Chardev, error) {
	var e attrEncoder
	e.String(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, typ)
	return c.chardev(e.Encode(), typ)
}

func (c *Conn) chardev(attrs []byte, object string) (Chardev, error) {
	cd, err := get(c, abi.RDMA_NLDEV_CMD_GET_CHARDEV, attrs, decodeChardev)
	if err != nil {
		return Chardev{}, opErr("get chardev", object, err)
	}
	return cd, nil
}
