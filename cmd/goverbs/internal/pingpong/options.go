package pingpong

import (
	"fmt"
	"io"
	"os"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

// kind names one of the pingpong tools that share the options parser and (except srq) the single-QP engine.
type kind int

const (
	kindRC kind = iota
	kindUC
	kindUD
	kindSRQ
)

// options are the settings of ibv_{rc,uc,ud,srq}_pingpong; each tool's option string decides which of them
// can be set.
type options struct {
	devName  string
	server   string
	port     uint64
	ibPort   int
	size     int
	mtu      uverbs.MTU
	rxDepth  int
	iters    int
	sl       int
	events   bool
	gidx     int
	validate bool
	numQP    int // srq only

	// rc (and srq's --odp) only.
	odp      bool
	implicit bool
	prefetch bool
	ts       bool
	dm       bool
	newSend  bool
	// ccUnprotected is rc_pingpong's -U (rdma-core 65).
	ccUnprotected bool
	// udHopLimit: the GRH hop limit is 64 (ud_pingpong), not 1.
	udHopLimit bool
}

// toolSpec is what a tool's getopt_long call and usage text are.
type toolSpec struct {
	kind      kind
	optstring string
	long      []getopt.LongOption
	usage     func(w io.Writer, prog string)
	defaults  options
}

// Long options shared by the tools, in rdma-core's order for each tool's table.
var (
	loPort    = getopt.LongOption{Name: "port", HasArg: getopt.RequiredArgument, Val: 'p'}
	loIBDev   = getopt.LongOption{Name: "ib-dev", HasArg: getopt.RequiredArgument, Val: 'd'}
	loIBPort  = getopt.LongOption{Name: "ib-port", HasArg: getopt.RequiredArgument, Val: 'i'}
	loSize    = getopt.LongOption{Name: "size", HasArg: getopt.RequiredArgument, Val: 's'}
	loMTU     = getopt.LongOption{Name: "mtu", HasArg: getopt.RequiredArgument, Val: 'm'}
	loRxDepth = getopt.LongOption{Name: "rx-depth", HasArg: getopt.RequiredArgument, Val: 'r'}
	loIters   = getopt.LongOption{Name: "iters", HasArg: getopt.RequiredArgument, Val: 'n'}
	loSL      = getopt.LongOption{Name: "sl", HasArg: getopt.RequiredArgument, Val: 'l'}
	loEvents  = getopt.LongOption{Name: "events", HasArg: getopt.NoArgument, Val: 'e'}
	loGIDIdx  = getopt.LongOption{Name: "gid-idx", HasArg: getopt.RequiredArgument, Val: 'g'}
	loChk     = getopt.LongOption{Name: "chk", HasArg: getopt.NoArgument, Val: 'c'}
	loODP     = getopt.LongOption{Name: "odp", HasArg: getopt.NoArgument, Val: 'o'}
)

// Usage lines shared by the tools' usage texts.
const (
	useSize    = "  -s, --size=<size>      size of message to exchange (default 4096)\n"
	useMTU     = "  -m, --mtu=<size>       path MTU (default 1024)\n"
	useRxDepth = "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n"
	useIters   = "  -n, --iters=<iters>    number of exchanges (default 1000)\n"
	useSL      = "  -l, --sl=<sl>          service level value\n"
	useEvents  = "  -e, --events           sleep on CQ events (default poll)\n"
	useGIDIdx  = "  -g, --gid-idx=<gid index> local port gid index\n"
	useChk     = "  -c, --chk              validate received buffer\n"
	useODP     = "  -o, --odp\t\t    use on demand paging\n"
)

// usageText prints a pingpong usage text: the lines every one starts with, then the tool's option lines.
func usageText(w io.Writer, prog string, lines ...string) {
	fmt.Fprintf(w, "Usage:\n")
	fmt.Fprintf(w, "  %s            start a server and wait for connection\n", prog)
	fmt.Fprintf(w, "  %s <host>     connect to server at <host>\n", prog)
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Options:\n")
	fmt.Fprintf(w, "  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n")
	fmt.Fprintf(w, "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n")
	fmt.Fprintf(w, "  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n")
	for _, l := range lines {
		io.WriteString(w, l)
	}
}

// strtol32 and strtoul32 read an option's argument as the C tools do: strtol or strtoul (base 0), kept to
// a C int or unsigned int.
func strtol32(s string) int32 {
	v, _, _ := cstd.Strtol(s, 0)
	return int32(v)
}

func strtoul32(s string) uint32 {
	v, _, _ := cstd.Strtoul(s, 0)
	return uint32(v)
}

// parseOptions parses args as the tool's main() does. ok is false when the tool must exit with status (the
// usage text or a message has been printed).
func parseOptions(spec *toolSpec, prog string, args []string, stdout, stderr io.Writer) (o *options, status int, ok bool) {
	opts := spec.defaults
	o = &opts
	usage := func() (*options, int, bool) {
		spec.usage(stdout, prog)
		return nil, 1, false
	}
	p := getopt.New(prog, args, spec.optstring, spec.long, stderr, os.Getenv("POSIXLY_CORRECT") != "")
	for opt := range p.All() {
		switch opt.Val {
		case 'p':
			// port is an unsigned int; ud_pingpong reads it with strtol, the others with strtoul.
			if spec.kind == kindUD {
				o.port = uint64(uint32(strtol32(opt.Arg)))
			} else {
				o.port = uint64(strtoul32(opt.Arg))
			}
			if o.port > 65535 {
				return usage()
			}
		case 'd':
			o.devName = opt.Arg
		case 'i':
			o.ibPort = int(strtol32(opt.Arg))
			if o.ibPort < 1 {
				return usage()
			}
		case 's':
			v := strtoul32(opt.Arg)
			o.size = int(v)
			if spec.kind == kindSRQ && v < 1 {
				return usage()
			}
		case 'm':
			o.mtu = uverbs.MTUFromBytes(int(strtol32(opt.Arg)))
			if o.mtu == 0 {
				return usage()
			}
		case 'q':
			o.numQP = int(strtoul32(opt.Arg))
		case 'r':
			o.rxDepth = int(strtoul32(opt.Arg))
		case 'n':
			o.iters = int(strtoul32(opt.Arg))
		case 'l':
			o.sl = int(strtol32(opt.Arg))
		case 'e':
			o.events = true
		case 'g':
			o.gidx = int(strtol32(opt.Arg))
		case 'o':
			o.odp = true
		case 'P':
			o.prefetch = true
		case 'O':
			o.odp, o.implicit = true, true
		case 't':
			o.ts = true
		case 'c':
			o.validate = true
		case 'j':
			o.dm = true
		case 'N':
			o.newSend = true
		case 'U':
			o.ccUnprotected = true
		default:
			return usage()
		}
	}
	ops := p.Operands()
	if len(ops) == 1 {
		o.server = ops[0]
	} else if len(ops) > 1 {
		return usage()
	}
	return o, 0, true
}
