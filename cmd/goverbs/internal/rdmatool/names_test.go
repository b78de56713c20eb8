package rdmatool

import (
	"testing"

	"github.com/goverbs/goverbs/netlinkrdma"
)

// iproute2's texts (rdma/res-qp.c qp_types_to_str, rdma/utils.c port states) for values whose goverbs String
// differs: the XRC types and values without a name.
func TestIproute2Names(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{qpTypeName(netlinkrdma.QPType(9)), "XRC_INI"},
		{qpTypeName(netlinkrdma.QPType(10)), "XRC_TGT"},
		{qpTypeName(netlinkrdma.QPType(1)), "GSI"},
		{qpTypeName(netlinkrdma.QPType(6)), "RAW_ETHERTYPE"},
		{qpTypeName(netlinkrdma.QPType(7)), "UNKNOWN"},
		{qpTypeName(netlinkrdma.QPTypeDriver), "DRIVER"},
		{ipName(netlinkrdma.QPState(3)), "RTS"},
		{ipName(netlinkrdma.QPState(7)), "UNKNOWN"},
		{ipName(netlinkrdma.PortStateActive), "ACTIVE"},
		{ipName(netlinkrdma.PortState(6)), "UNKNOWN"},
		{ipName(netlinkrdma.PhysStateLinkUp), "LINK_UP"},
		{ipName(netlinkrdma.PortPhysState(9)), "OPA_OFFLINE"},
		{ipName(netlinkrdma.PortPhysState(8)), "UNKNOWN"},
		{psName(netlinkrdma.PortSpaceIB), "IPoIB"},
		{psName(netlinkrdma.PortSpaceIPoIB), "IPoIB"},
		{psName(netlinkrdma.PortSpaceTCP), "TCP"},
		{psName(netlinkrdma.PortSpaceUDP), "UDP"},
		{psName(netlinkrdma.PortSpace(7)), "---"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
