package pingpong

import (
	"fmt"
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
	usageHead(w, prog)
	fmt.Fprintf(w, "  -s, --size=<size>      size of message to exchange (default 2048)\n")
	fmt.Fprintf(w, "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n")
	fmt.Fprintf(w, "  -n, --iters=<iters>    number of exchanges (default 1000)\n")
	fmt.Fprintf(w, "  -l, --sl=<SL>          send messages with service level <SL> (default 0)\n")
	fmt.Fprintf(w, "  -e, --events           sleep on CQ events (default poll)\n")
	fmt.Fprintf(w, "  -g, --gid-idx=<gid index> local port gid index\n")
	fmt.Fprintf(w, "  -c, --chk              validate received buffer\n")
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
