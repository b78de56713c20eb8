// Package pingpong is goverbs' clone of rdma-core 65's pingpong examples (ibv_rc_pingpong, ibv_uc_pingpong,
// ibv_ud_pingpong, ibv_srq_pingpong and, up to the XRC domain, ibv_xsrq_pingpong): the same options, the same
// 52-byte connection records and "done" handshake over TCP, and the same output lines, messages and exit
// statuses, so a goverbs side pairs with a C side in either role.
//
// Where the C tools' behaviour is left to chance or cannot be matched, the clones choose:
//   - perror() after a read that hit the end of the stream prints whatever errno was left over in C. For the
//     rc, uc and ud clients that is ENOSPC ("No space left on device"), which libibverbs' probe at device open
//     leaves behind (has_ioctl_write); elsewhere the clones print ECONNRESET's text ("Connection reset by peer"),
//     and "Success" where the srq server's final read is short without an error.
//   - srq_pingpong's record reads loop forever on an early end of stream; the clones treat it like a failed read
//     (report it, go on with the records read so far, as rdma-core does after a read error).
//   - ibv_xsrq_pingpong stops at the XRC domain: on a device without XRC (rxe) exactly as rdma-core's, on one with
//     XRC with ErrXRCUnimplemented, since goverbs has no XRC SRQs or QPs.
package pingpong

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

var rcSpec = toolSpec{
	kind:      kindRC,
	optstring: "p:d:i:s:m:r:n:l:eg:oOPtcjNU",
	long: []getopt.LongOption{loPort, loIBDev, loIBPort, loSize, loMTU, loRxDepth, loIters, loSL, loEvents, loGIDIdx,
		loODP,
		{Name: "iodp", HasArg: getopt.NoArgument, Val: 'O'},
		{Name: "prefetch", HasArg: getopt.NoArgument, Val: 'P'},
		{Name: "ts", HasArg: getopt.NoArgument, Val: 't'},
		loChk,
		{Name: "dm", HasArg: getopt.NoArgument, Val: 'j'},
		{Name: "new_send", HasArg: getopt.NoArgument, Val: 'N'},
		{Name: "allow-cc-unprotected", HasArg: getopt.NoArgument, Val: 'U'},
	},
	usage:    rcUsage,
	defaults: options{port: 18515, ibPort: 1, size: 4096, mtu: uverbs.MTU1024, rxDepth: 500, iters: 1000, gidx: -1},
}

func rcUsage(w io.Writer, prog string) {
	usageText(w, prog,
		useSize, useMTU, useRxDepth, useIters, useSL, useEvents, useGIDIdx, useODP,
		"  -O, --iodp\t\t    use implicit on demand paging\n",
		"  -P, --prefetch\t    prefetch an ODP MR\n",
		"  -t, --ts\t            get CQE with timestamp\n",
		"  -c, --chk\t            validate received buffer\n",
		"  -j, --dm\t            use device memory\n",
		"  -N, --new_send            use new post send WR API\n",
		"  -U, --allow-cc-unprotected  allow allocation of unprotected/shared\n"+
			"                            memory on CoCo guests\n",
	)
}

// MainRC runs ibv_rc_pingpong with args (without the program name) and returns its exit status.
func MainRC(prog string, args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseOptions(&rcSpec, prog, args, stdout, stderr)
	if !ok {
		return status
	}
	if o.odp && o.dm {
		fmt.Fprintf(stderr, "DM memory region can't be on demand\n")
		return 1
	}
	if o.ccUnprotected && o.odp {
		fmt.Fprintf(stderr, "CoCo unprotected memory cannot be used with ODP\n")
		return 1
	}
	if o.ccUnprotected && o.dm {
		fmt.Fprintf(stderr, "CoCo unprotected memory cannot be used with device memory\n")
		return 1
	}
	if !o.odp && o.prefetch {
		fmt.Fprintf(stderr, "prefetch is valid only with on-demand memory region\n")
		return 1
	}
	return runSingle(kindRC, o, stdout, stderr)
}
