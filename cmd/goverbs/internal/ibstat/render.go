package ibstat

import (
	"fmt"
	"io"
)

var nodeTypeStr = []string{"???", "CA", "Switch", "Router", "iWARP RNIC"}

var portStateStr = []string{"???", "Down", "Initializing", "Armed", "Active"}

var portPhysStateStr = []string{
	"No state change", "Sleep", "Polling", "Disabled",
	"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest",
}

// NodeTypeName is ibstat's name for a node type: "CA", "Switch", "Router",
// "iWARP RNIC", or "???".
func NodeTypeName(t uint32) string {
	if t < uint32(len(nodeTypeStr)) {
		return nodeTypeStr[t]
	}
	return "???"
}

// WriteCA writes the CA header block ibstat prints (its ca_dump), nothing
// for node type 0.
func WriteCA(w io.Writer, ca *CA) {
	if ca.NodeType == 0 {
		return
	}
	t := NodeTypeName(ca.NodeType)
	fmt.Fprintf(w, "%s '%s'\n", t, ca.Name)
	fmt.Fprintf(w, "\t%s type: %s\n", t, ca.CAType)
	fmt.Fprintf(w, "\tNumber of ports: %d\n", ca.NumPorts)
	fmt.Fprintf(w, "\tFirmware version: %s\n", ca.FWVer)
	fmt.Fprintf(w, "\tHardware version: %s\n", ca.HWVer)
	fmt.Fprintf(w, "\tNode GUID: 0x%016x\n", ca.NodeGUID)
	fmt.Fprintf(w, "\tSystem image GUID: 0x%016x\n", ca.SysImageGUID)
}

// WritePort writes one port block (ibstat's port_dump) of a CA without a
// verbs context. alone is the "ibstat CA PORT" form, without indentation;
// otherwise the block is indented under its CA.
func WritePort(w io.Writer, p *Port, alone bool) { writePort(w, p, alone, nil) }

// writePort is port_dump; speed, when not nil, is ibv_query_port_speed on
// the CA's context, whose answer, unless it fails, is printed as the
// effective speed in Gb/s.
func writePort(w io.Writer, p *Port, alone bool, speed func(port int) (uint64, error)) {
	pre, hdrpre := "\t\t", "\t"
	if alone {
		pre, hdrpre = "", ""
	}
	fmt.Fprintf(w, "%sPort %d:\n", hdrpre, p.PortNum)
	state := "???"
	if p.State < uint32(len(portStateStr)) {
		state = portStateStr[p.State]
	}
	fmt.Fprintf(w, "%sState: %s\n", pre, state)
	phys := "???"
	if p.PhysState < uint32(len(portPhysStateStr)) {
		phys = portPhysStateStr[p.PhysState]
	}
	fmt.Fprintf(w, "%sPhysical state: %s\n", pre, phys)
	switch {
	case p.FDR10:
		fmt.Fprintf(w, "%sRate: %d (FDR10)\n", pre, int32(p.Rate))
	case p.Rate != 2: // 1x SDR is 2.5 Gb/sec, which strtoul reads as 2
		fmt.Fprintf(w, "%sRate: %d\n", pre, int32(p.Rate))
	default:
		fmt.Fprintf(w, "%sRate: 2.5\n", pre)
	}
	if speed != nil {
		if v, err := speed(p.PortNum); err == nil {
			fmt.Fprintf(w, "%sEffective speed: %s\n", pre, formatG(float64(v)/10))
		}
	}
	fmt.Fprintf(w, "%sBase lid: %d\n", pre, int32(p.BaseLID))
	fmt.Fprintf(w, "%sLMC: %d\n", pre, int32(p.LMC))
	fmt.Fprintf(w, "%sSM lid: %d\n", pre, int32(p.SMLID))
	fmt.Fprintf(w, "%sCapability mask: 0x%08x\n", pre, p.CapMask)
	fmt.Fprintf(w, "%sPort GUID: 0x%016x\n", pre, p.PortGUID)
	fmt.Fprintf(w, "%sLink layer: %s\n", pre, p.LinkLayer)
}

// WriteCAPorts writes a CA header followed by all its ports, the default
// ibstat output for one device.
func WriteCAPorts(w io.Writer, ca *CA) {
	WriteCA(w, ca)
	for _, p := range ca.Ports[:ca.NumPorts+1] {
		if p != nil {
			WritePort(w, p, false)
		}
	}
}
