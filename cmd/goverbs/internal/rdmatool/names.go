package rdmatool

import (
	"fmt"
	"strings"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/verbs"
)

// ipName is iproute2's text for an enum value whose names iproute2 shares with goverbs (port states, QP
// states): the String, or "UNKNOWN" for a value without a name (goverbs prints "QPState(9)").
func ipName(v fmt.Stringer) string {
	s := v.String()
	if strings.HasSuffix(s, ")") {
		return "UNKNOWN"
	}
	return s
}

// qpTypeName is iproute2's text for a QP type (qp_types_to_str): the kernel's names, XRC_INI and XRC_TGT where
// libibverbs (and goverbs) say XRC_SEND and XRC_RECV, and "UNKNOWN" for a value without a name.
func qpTypeName(t netlinkrdma.QPType) string {
	switch t {
	case verbs.QPTypeXRCSend:
		return "XRC_INI"
	case verbs.QPTypeXRCRecv:
		return "XRC_TGT"
	}
	return ipName(t)
}

// psName is iproute2's text for an rdma_cm port space (cm_id_ps_to_str): "IPoIB" for both IPoIB and IB, "TCP",
// "UDP", and "---" for another value.
func psName(ps netlinkrdma.PortSpace) string {
	switch ps {
	case netlinkrdma.PortSpaceIPoIB, netlinkrdma.PortSpaceIB:
		return "IPoIB"
	case netlinkrdma.PortSpaceTCP, netlinkrdma.PortSpaceUDP:
		return ps.String()
	}
	return "---"
}
