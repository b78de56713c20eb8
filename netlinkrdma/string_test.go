package netlinkrdma

import "testing"

func TestStrings(t *testing.T) {
	for _, c := range []struct {
		v    interface{ String() string }
		want string
	}{
		{CounterModeAuto, "auto"},
		{CounterMode(7), "CounterMode(7)"},
		{CounterMaskQPType | CounterMaskPID, "QP_TYPE|PID"},
		{CounterMask(0), "0"},
		{DriverU32, "U32"},
		{DriverAttrKind(0), "DriverAttrKind(0)"},
		{DeviceCaps(1<<12 | 1<<20), "RC_RNR_NAK_GEN|XRC"},
		{DeviceCaps(0), "0"},
		{PortCaps(1<<16 | 1), "RESERVED|CM"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%T(%d).String() = %q, want %q", c.v, c.v, got, c.want)
		}
	}
}

// The node types' names (ibv_node_type_str's job, with iproute2's names: "ca" where libibverbs prints
// "InfiniBand channel adapter").
func TestNodeTypeNames(t *testing.T) {
	for n, want := range map[NodeType]string{NodeTypeCA: "ca", NodeTypeSwitch: "switch", NodeTypeRouter: "router",
		NodeTypeRNIC: "rnic", NodeTypeUSNIC: "usnic", NodeTypeUSNICUDP: "usnic_udp", NodeTypeUnspecified: "unspecified",
		0: "unknown", 42: "unknown"} {
		if got := n.String(); got != want {
			t.Errorf("NodeType(%d) = %q, want %q", n, got, want)
		}
	}
}
