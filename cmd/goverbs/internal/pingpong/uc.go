package pingpong

import (
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
	usageText(w, prog,
		useSize, useMTU, useRxDepth, useIters, useSL, useEvents, useGIDIdx, useChk,
	)
}

// MainUC runs ibv_uc_pingpong with args (without the program name) and returns its exit status.
func MainUC(prog string, args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseOptions(&ucSpec, prog, args, stdout, stderr)
	if !ok {
		return status
	}
	return runSingle(kindUC, o, stdout, stderr)
}
