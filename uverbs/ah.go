package uverbs

import (
	"encoding/binary"
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// AH is an address handle for UD sends.
type AH struct {
	pd   *PD
	data *AHData
	attr AHAttr
	life
}

// CreateAH creates an address handle (ibv_create_ah). On RoCE ports the address must be global (GRH with a
// source GID index), as the kernel requires.
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	c := pd.ctx
	if err := pd.checkOpen(); err != nil {
		return nil, wrap("create AH", c.dev.Name, err)
	}
	port := int(attr.PortNum)
	pa, err := c.QueryPort(port)
	if err != nil {
		return nil, wrap("create AH", c.dev.Name, err)
	}
	p := provider.AHParams{DLID: attr.DLID, SL: attr.SL, SrcPathBits: attr.SrcPathBits, StaticRate: uint8(attr.StaticRate),
		IsGlobal: attr.IsGlobal, PortNum: attr.PortNum, DGID: attr.GRH.DGID, FlowLabel: attr.GRH.FlowLabel,
		SGIDIndex: attr.GRH.SGIDIndex, HopLimit: attr.GRH.HopLimit, TrafficClass: attr.GRH.TrafficClass,
		Ethernet: pa.LinkLayer == LinkLayerEthernet}
	if p.Ethernet && !attr.IsGlobal {
		return nil, wrap("create AH", c.dev.Name, fmt.Errorf("RoCE address without GRH: %w", unix.EINVAL))
	}
	if attr.IsGlobal {
		if g, err := c.QueryGID(port, int(attr.GRH.SGIDIndex)); err == nil {
			p.RoCEv2 = g.Type == GIDTypeRoCEv2
		}
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("create AH", c.dev.Name, err)
	}
	created := false
	var handle uint32
	data, err := c.prov.CreateAH(p, func(_ provider.AHParams, uhwIn, uhwOut []byte) (provider.AHResult, error) {
		in := &abi.IbUverbsCreateAh{PdHandle: pd.handle, Attr: abi.IbUverbsAhAttr{
			Grh: abi.IbUverbsGlobalRoute{Dgid: attr.GRH.DGID, FlowLabel: attr.GRH.FlowLabel, SgidIndex: attr.GRH.SGIDIndex,
				HopLimit: attr.GRH.HopLimit, TrafficClass: attr.GRH.TrafficClass},
			Dlid: attr.DLID, Sl: attr.SL, SrcPathBits: attr.SrcPathBits, StaticRate: uint8(attr.StaticRate), PortNum: attr.PortNum}}
		if attr.IsGlobal {
			in.Attr.IsGlobal = 1
		}
		out := new(abi.IbUverbsCreateAhResp)
		if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_CREATE_AH, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out), UHWIn: uhwIn, UHWOut: uhwOut}); err != nil {
			return provider.AHResult{}, err
		}
		created, handle = true, out.AhHandle
		return provider.AHResult{Handle: handle}, nil
	})
	if err != nil {
		if created {
			c.destroyObject(abi.UVERBS_OBJECT_AH, abi.UVERBS_METHOD_AH_DESTROY, abi.UVERBS_ATTR_DESTROY_AH_HANDLE, handle)
		}
		c.dropObject()
		return nil, wrap("create AH", c.dev.Name, limitErr(c.dev.Name, "hca_object", err))
	}
	if created {
		data.Handle = handle
	}
	return &AH{pd: pd, data: data, attr: attr}, nil
}

// Data is what the data path needs to address this destination: put it in SendWR.AH.
func (ah *AH) Data() *AHData { return ah.data }

// Attr is the address the AH was created for.
func (ah *AH) Attr() AHAttr { return ah.attr }

// Close destroys the address handle (ibv_destroy_ah).
func (ah *AH) Close() error {
	if ah == nil {
		return nil
	}
	return ah.life.close(func() error {
		c := ah.pd.ctx
		if err := c.destroyObject(abi.UVERBS_OBJECT_AH, abi.UVERBS_METHOD_AH_DESTROY, abi.UVERBS_ATTR_DESTROY_AH_HANDLE, ah.data.Handle); err != nil {
			return wrap("destroy AH", c.dev.Name, err)
		}
		c.dropObject()
		return nil
	})
}

// GRHSize is the size of the global route header slot (struct ibv_grh) at the start of every UD receive
// buffer: the device writes the sender's GRH there (on RoCE v2 over IPv4, the IPv4 header in its last 20
// bytes).
const GRHSize = 40

// AHAttrFromWC is ibv_init_ah_from_wc: the address attributes that reach the sender of the UD receive
// completion wc on port, grh being the first GRHSize bytes of that receive's buffer. The reply leaves from
// the local GID the packet arrived on (a RoCE v2 entry preferred).
func (c *Context) AHAttrFromWC(port uint8, wc *WC, grh []byte) (AHAttr, error) {
	if wc.Flags&WCWithGRH == 0 {
		return AHAttr{DLID: wc.SLID, SL: wc.SL, SrcPathBits: wc.DLIDPathBits, PortNum: port}, nil
	}
	if len(grh) < GRHSize {
		return AHAttr{}, wrap("AH from WC", c.dev.Name, fmt.Errorf("GRH of %d bytes, want %d: %w", len(grh), GRHSize, unix.EINVAL))
	}
	var sgid, dgid GID
	var flow uint32
	var tclass uint8
	if grh[20]>>4 == 4 && grh[0]>>4 != 6 {
		// RoCE v2 over IPv4: an IPv4 header in bytes 20..39; the GIDs are the addresses, IPv4-mapped.
		sgid[10], sgid[11], dgid[10], dgid[11] = 0xff, 0xff, 0xff, 0xff
		copy(sgid[12:], grh[32:36])
		copy(dgid[12:], grh[36:40])
		tclass = grh[21]
	} else {
		vtf := binary.BigEndian.Uint32(grh[0:4])
		tclass, flow = uint8(vtf>>20), vtf&0xfffff
		copy(sgid[:], grh[8:24])
		copy(dgid[:], grh[24:40])
	}
	gids, err := c.QueryGIDTable()
	if err != nil {
		return AHAttr{}, err
	}
	idx := -1
	for _, e := range gids {
		if e.Port == int(port) && e.GID == dgid {
			idx = e.Index
			if e.Type == GIDTypeRoCEv2 {
				break
			}
		}
	}
	if idx < 0 {
		return AHAttr{}, wrap("AH from WC", c.dev.Name, fmt.Errorf("the completion's destination GID %v is not in port %d's GID table: %w", dgid, port, unix.ENOENT))
	}
	return AHAttr{IsGlobal: true, DLID: wc.SLID, SL: wc.SL, SrcPathBits: wc.DLIDPathBits, PortNum: port,
		GRH: GlobalRoute{DGID: sgid, FlowLabel: flow, SGIDIndex: uint8(idx), HopLimit: 0xff, TrafficClass: tclass}}, nil
}
