package uverbs

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/uverbs/abi"
	"github.com/goverbs/goverbs/uverbs/rawcmd"
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
	p := provider.AHParams{DLID: attr.DLID, SL: attr.SL, SrcPathBits: attr.SrcPathBits, StaticRate: attr.StaticRate,
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
			Dlid: attr.DLID, Sl: attr.SL, SrcPathBits: attr.SrcPathBits, StaticRate: attr.StaticRate, PortNum: attr.PortNum}}
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
