package pingpong

import (
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

var udSpec = toolSpec{
	kind:      kindUD,
	optstring: "p:d:i:s:r:n:l:eg:c",
	long:      []getopt.LongOption{loPort, loIBDev, loIBPort, loSize, loRxDepth, loIters, loSL, loEvents, loGIDIdx, loChk},
	usage:     udUsage,
	// The usage text says 2048, the code uses 1024; the path MTU is unused (UD has none to set).
	defaults: options{port: 18515, ibPort: 1, size: 1024, mtu: uverbs.MTU1024, rxDepth: 500, iters: 1000, gidx: -1},
}

func udUsage(w io.Writer, prog string) {
	usageText(w, prog,
		"  -s, --size=<size>      size of message to exchange (default 2048)\n",
		useRxDepth, useIters,
		"  -l, --sl=<SL>          send messages with service level <SL> (default 0)\n",
		useEvents, useGIDIdx, useChk,
	)
}

// MainUD runs ibv_ud_pingpong with args (without the program name) and returns its exit status.
func MainUD(prog string, args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseOptions(&udSpec, prog, args, stdout, stderr)
	if !ok {
		return status
	}
	o.udHopLimit = true
	return runSingle(kindUD, o, stdout, stderr)
}
