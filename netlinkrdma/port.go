package netlinkrdma

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/abi"
)

// Port is one port of an RDMA device as RDMA_NLDEV_CMD_PORT_GET reports it.
type Port struct {
	DevIndex uint32 // RDMA_NLDEV_ATTR_DEV_INDEX
	DevName  string // RDMA_NLDEV_ATTR_DEV_NAME
	Index    uint32 // RDMA_NLDEV_ATTR_PORT_INDEX, from 1

	State     PortState     // RDMA_NLDEV_ATTR_PORT_STATE
	PhysState PortPhysState // RDMA_NLDEV_ATTR_PORT_PHYS_STATE

	// IB holds the InfiniBand-only attributes; nil for RoCE and iWARP ports,
	// for which the kernel sends none.
	IB *PortIB

	// NetdevName and NetdevIndex name the netdev behind a RoCE / iWARP port;
	// empty and 0 when there is none or it lives in another netns.
	NetdevName  string
	NetdevIndex uint32

	// Present records which attributes the kernel sent.
	Present AttrSet
}

// PortIB holds a port's InfiniBand attributes.
type PortIB struct {
	Caps         PortCaps // RDMA_NLDEV_ATTR_CAP_FLAGS
	SubnetPrefix GUID     // RDMA_NLDEV_ATTR_SUBNET_PREFIX
	LID          uint32   // RDMA_NLDEV_ATTR_LID
	SMLID        uint32   // RDMA_NLDEV_ATTR_SM_LID
	LMC          uint8    // RDMA_NLDEV_ATTR_LMC
}

func (p *Port) ib() *PortIB {
	if p.IB == nil {
		p.IB = new(PortIB)
	}
	return p.IB
}

// decodePort decodes one RDMA_NLDEV_CMD_PORT_GET reply payload.
func decodePort(b []byte) (Port, error) {
	var p Port
	err := walk(b, &p.Present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			p.DevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			p.DevName = ad.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			p.Index = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_PORT_STATE:
			p.State = PortState(ad.Uint8())
		case abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE:
			p.PhysState = PortPhysState(ad.Uint8())
		case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
			p.ib().Caps = PortCaps(ad.Uint64())
		case abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX:
			p.ib().SubnetPrefix = GUID(ad.Uint64())
		case abi.RDMA_NLDEV_ATTR_LID:
			p.ib().LID = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_SM_LID:
			p.ib().SMLID = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_LMC:
			p.ib().LMC = ad.Uint8()
		case abi.RDMA_NLDEV_ATTR_NDEV_INDEX:
			p.NetdevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_NDEV_NAME:
			p.NetdevName = ad.String()
		}
	})
	if err != nil {
		return Port{}, err
	}
	if _, ok := p.Present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_PORT_INDEX); ok {
		return Port{}, errors.New("netlinkrdma: port reply lacks device or port index")
	}
	return p, nil
}

// Ports lists the ports of the device with index devIndex.
//
// Equivalent to: rdma link show DEV
func (c *Conn) Ports(devIndex uint32) ([]Port, error) {
	ports, err := list(c, abi.RDMA_NLDEV_CMD_PORT_GET, devAttrs(devIndex).Encode(), decodePort)
	if err != nil {
		return nil, opErr("list ports of device", fmt.Sprintf("index %d", devIndex), err)
	}
	return ports, nil
}

// Port returns port number port (from 1) of the device with index devIndex.
// An unknown device or port gives an error matching unix.EINVAL.
//
// Equivalent to: rdma link show DEV/PORT
func (c *Conn) Port(devIndex, port uint32) (Port, error) {
	p, err := get(c, abi.RDMA_NLDEV_CMD_PORT_GET, portAttrs(devIndex, port).Encode(), decodePort)
	if err != nil {
		return Port{}, opErr("get port", fmt.Sprintf("%d/%d", devIndex, port), err)
	}
	return p, nil
}
