package ibstat_test

import (
	"os"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibstat"
)

func ExampleWritePort() {
	p := &ibstat.Port{PortNum: 1, State: 4, PhysState: 5, Rate: 100, BaseLID: 16, SMLID: 1,
		CapMask: 0xa651e848, PortGUID: 0xb8599f0300d4a7a0, LinkLayer: "InfiniBand"}
	ibstat.WritePort(os.Stdout, p, true)
	// Output:
	// Port 1:
	// State: Active
	// Physical state: LinkUp
	// Rate: 100
	// Base lid: 16
	// LMC: 0
	// SM lid: 1
	// Capability mask: 0xa651e848
	// Port GUID: 0xb8599f0300d4a7a0
	// Link layer: InfiniBand
}
