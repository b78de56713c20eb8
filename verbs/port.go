package verbs

import "github.com/goverbs/goverbs/internal/enumstr"

// PortState is a port's logical state (IB PortInfo PortState; kernel enum ib_port_state, as enum
// ibv_port_state). Both the verbs core (uverbs.PortAttr) and RDMA netlink (netlinkrdma.Port) report it.
type PortState uint8

// Port states.
const (
	PortNOP PortState = iota
	PortDown
	PortInit
	PortArmed
	PortActive
	PortActiveDefer
)

var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// String is the state's name ("ACTIVE"); ibv_devinfo's "PORT_ACTIVE" is the tools' text.
func (s PortState) String() string { return enumstr.Name(portStateNames[:], uint64(s), "PortState") }

// PortPhysState is a port's physical state (IB PortInfo PortPhysicalState; kernel enum ib_port_phys_state).
type PortPhysState uint8

// Physical port states.
const (
	PhysStateNOP        PortPhysState = 0
	PhysStateSleep      PortPhysState = 1
	PhysStatePolling    PortPhysState = 2
	PhysStateDisabled   PortPhysState = 3
	PhysStateArmed      PortPhysState = 4
	PhysStateLinkUp     PortPhysState = 5
	PhysStateLinkError  PortPhysState = 6
	PhysStatePHYTest    PortPhysState = 7
	PhysStateOPAOffline PortPhysState = 9
	PhysStateOPATest    PortPhysState = 11
)

var physStateNames = [...]string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
	"LINK_ERROR_RECOVER", "PHY_TEST", "", "OPA_OFFLINE", "", "OPA_TEST"}

// String is the state's name ("LINK_UP", "POLLING").
func (s PortPhysState) String() string {
	return enumstr.Name(physStateNames[:], uint64(s), "PortPhysState")
}
