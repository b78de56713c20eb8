package netlinkrdma

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
)

// Link types accepted by LinkAdd on Linux 6.1.
const (
	LinkTypeRXE = "rxe" // Soft-RoCE, module rdma_rxe
	LinkTypeSIW = "siw" // Soft-iWARP, module siw
)

// LinkAdd creates a software RDMA device called name of type typ ("rxe" or
// "siw") on top of the netdev called netdev (looked up in the Conn's netns).
// The kernel loads the driver module on demand. Errors the kernel gives:
// EPERM without CAP_NET_ADMIN, ENODEV for an unknown netdev, EINVAL for an
// unknown type or a bad name, EEXIST when the netdev already has an rxe
// device.
//
// Equivalent to: rdma link add NAME type TYPE netdev NETDEV
func (c *Conn) LinkAdd(name, typ, netdev string) error {
	var e attrEncoder
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, name)
	e.String(abi.RDMA_NLDEV_ATTR_LINK_TYPE, typ)
	e.String(abi.RDMA_NLDEV_ATTR_NDEV_NAME, netdev)
	return opErr("add link", fmt.Sprintf("%s type %s netdev %s", name, typ, netdev),
		c.doit(abi.RDMA_NLDEV_CMD_NEWLINK, e.Encode(), nil))
}

// LinkDelIndex removes the software RDMA device with index devIndex. Only
// devices whose driver allows it (rxe, siw) can be removed; others give
// EINVAL. Needs CAP_NET_ADMIN.
func (c *Conn) LinkDelIndex(devIndex uint32) error {
	e := devAttrs(devIndex)
	return opErr("delete link", fmt.Sprintf("index %d", devIndex),
		c.doit(abi.RDMA_NLDEV_CMD_DELLINK, e.Encode(), nil))
}

// LinkDel removes the software RDMA device called name (see LinkDelIndex).
// An unknown name gives an error matching unix.ENODEV.
//
// Equivalent to: rdma link delete NAME
func (c *Conn) LinkDel(name string) error {
	d, err := c.Device(name)
	if err != nil {
		return opErr("delete link", name, unwrapOp(err))
	}
	return opErr("delete link", name, unwrapOp(c.LinkDelIndex(d.Index)))
}

// unwrapOp strips one OpError layer so that re-wrapping does not repeat the
// context.
func unwrapOp(err error) error {
	if oe, ok := err.(*OpError); ok {
		return oe.Err
	}
	return err
}

// LinkAdd is Conn.LinkAdd on a connection of its own, for one-off callers
// such as a VM init.
func LinkAdd(name, typ, netdev string) error {
	c, err := Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return c.LinkAdd(name, typ, netdev)
}

// LinkDel is Conn.LinkDel on a connection of its own.
func LinkDel(name string) error {
	c, err := Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return c.LinkDel(name)
}
