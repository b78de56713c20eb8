package pingpong

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

var ucSpec = toolSpec{
	kind:      kindUC,
	optstring: "p:d:i:s:m:r:n:l:eg:c",
	long:      []getopt.LongOption{loPort, loIBDev, loIBPort, loSize, loMTU, loRxDepth, loIters, loSL, loEvents, loGIDIdx, loChk},
	usage:     ucUsage,
	defaults:  options{port: 18515, ibPort: 1, size: 4096, mtu: uverbs.MTU1024, rxDepth: 500, iters: 1000, gidx: -1},
}

func ucUsage(w io.Writer, prog string) {
	usageHead(w, prog)
	fmt.Fprintf(w, "  -s, --size=<size>      size of message to exchange (default 4096)\n")
	fmt.Fprintf(w, "  -m, --mtu=<size>       path MTU (default 1024)\n")
	fmt.Fprintf(w, "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n")
	fmt.Fprintf(w, "  -n, --iters=<iters>    number of exchanges (default 1000)\n")
	fmt.Fprintf(w, "  -l, --sl=<sl>          service level value\n")
	fmt.Fprintf(w, "  -e, --events           sleep on CQ events (default poll)\n")
	fmt.Fprintf(w, "  -g, --gid-idx=<gid index> local port gid index\n")
	fmt.Fprintf(w, "  -c, --chk              validate received buffer\n")
}

// MainUC runs ibv_uc_pingpong with args (without the program name) and returns its exit status.
func MainUC(prog string, args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseOptions(&ucSpec, prog, args, stdout, stderr)
	if !ok {
		return status
	}
	return runSingle(kindUC, o, stdout, stderr)
}
