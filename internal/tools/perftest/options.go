package perftest

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/internal/tools/getopt"
)

// Verb is the operation a test measures (perftest's VerbType order).
type Verb int

// Verbs.
const (
	VerbSend Verb = iota
	VerbWrite
	VerbRead
	VerbAtomic
)

// Kind is bandwidth or latency (perftest's TestType).
type Kind int

// Kinds.
const (
	KindLat Kind = iota
	KindBW
)

// Connection types (perftest's numbering).
const (
	ConnRC = 0
	ConnUC = 1
	ConnUD = 2
)

// Test method and type.
const (
	runRegular = iota
	runAll
	runInfinitely
)

const (
	byIterations = iota
	byDuration
)

// Verbosity (--output).
const (
	outFull = -1
	outBW   = 0
	outMR   = 1
	outLat  = 2
)

// Atomic operations (-A).
const (
	atomicCmpAndSwap = iota
	atomicFetchAndAdd
)

var (
	connStr        = []string{"RC", "UC", "UD", "RawEth", "XRC", "DC", "SRD"}
	testsStr       = []string{"Send", "RDMA_Write", "RDMA_Read", "Atomic"}
	atomicTypesStr = []string{"CMP_AND_SWAP", "FETCH_AND_ADD"}
)

// Defaults and limits (perftest_parameters.h).
const (
	defPort        = 18515
	defSizeBW      = 65536
	defSizeLat     = 2
	defIters       = 1000
	defItersWB     = 5000
	defTxBW        = 128
	defTxLat       = 1
	defQPTime      = 14
	defRxRDMA      = 1
	defRxSend      = 512
	defCQMod       = 100
	defSizeAtomic  = 8
	defQKey        = 0x11111111
	defDuration    = 5
	defInitMargin  = -1
	defInline      = -1
	defCacheLine   = 64
	defPageSize    = 4096
	maxSize        = 8388608
	minIter        = 5
	maxIter        = 100000000
	maxTx          = 15000
	maxSL          = 15
	maxGIDIx       = 64
	maxQPNum       = 16384
	maxRx          = 16384
	ucMaxRx        = 16000
	maxCQMod       = 1024
	maxInline      = 912
	maxInlineUD    = 884
	udAddition     = 40
	msgSizeCQLimit = 8192
	defRetryCount  = 7
	minRNRTimer    = 12
)

// Params are one run's settings (perftest's struct perftest_parameters, the part goverbs implements).
type Params struct {
	Verb Verb
	Kind Kind

	Port             int
	IBDev            string
	IBPort           int
	MTU              int // user's -m (0: port's active MTU)
	CurrMTU          int // IBV_MTU_* enum in use
	Size             uint64
	ReqSize          bool
	Iters            uint64
	TxDepth          int
	QPTimeout        int
	SL               int
	GIDIndex         int
	UseGIDUser       bool
	TestMethod       int
	TestType         int
	CPUFreqF         bool
	Conn             int
	NumQPs           int
	UseEvent         bool
	EQNum            int
	UseEQNum         bool
	InlineSize       int
	OutReads         int
	RxDepth          int
	Duplex           bool
	NoPeak           bool
	CQMod            int
	ReqCQMod         bool
	PostList         int
	Duration         int
	Margin           int
	ReportGbits      bool
	Output           int
	OutJSON          bool
	OutJSONFile      string
	Unsorted         bool
	Histogram        bool
	Cycles           bool
	AtomicType       int
	Server           bool
	Servername       string
	PKeyIndex        int
	DontXchgVersions bool
	ReportBoth       bool
	LatencyGap       int
	RetryCount       int
	CycleBuffer      int
	CacheLine        int
	TrafficClass     int
	LimitBW          float64
	LimitMsgRate     float64
	IsLimitBW        bool
	IsLimitMsgRate   bool
	WaitDestroy      int
	PerformWarmUp    bool
	IPv6             bool
	SourceIP         string
	// UseRDMACM (-z): the out-of-band exchange runs over an RC QP connected with rdma_cm.
	UseRDMACM bool
	// WorkRDMACM (-R): the test QPs are connected with rdma_cm too (implies UseRDMACM).
	WorkRDMACM bool
	FlowLabel  int
	NoProgress bool // goverbs: no per-second progress lines on stderr in -D runs
	// UseODP (--odp): the buffer is registered for on-demand paging (uverbs.AccessOnDemand), once the device
	// reports RC send and receive with ODP, as perftest 6.06 checks.
	UseODP bool

	// Filled once the device is open.
	LinkLayer  uint8
	RemVersion string
}

// ParseError carries the exit status and the messages a C perftest prints for a bad command line.
type parseExit struct{ status int }

var longOpts = []getopt.LongOption{
	{Name: "port", HasArg: getopt.RequiredArgument, Val: 'p'},
	{Name: "ib-dev", HasArg: getopt.RequiredArgument, Val: 'd'},
	{Name: "ib-port", HasArg: getopt.RequiredArgument, Val: 'i'},
	{Name: "mtu", HasArg: getopt.RequiredArgument, Val: 'm'},
	{Name: "size", HasArg: getopt.RequiredArgument, Val: 's'},
	{Name: "iters", HasArg: getopt.RequiredArgument, Val: 'n'},
	{Name: "tx-depth", HasArg: getopt.RequiredArgument, Val: 't'},
	{Name: "qp-timeout", HasArg: getopt.RequiredArgument, Val: 'u'},
	{Name: "sl", HasArg: getopt.RequiredArgument, Val: 'S'},
	{Name: "gid-index", HasArg: getopt.RequiredArgument, Val: 'x'},
	{Name: "all", HasArg: getopt.NoArgument, Val: 'a'},
	{Name: "CPU-freq", HasArg: getopt.NoArgument, Val: 'F'},
	{Name: "connection", HasArg: getopt.RequiredArgument, Val: 'c'},
	{Name: "qp", HasArg: getopt.RequiredArgument, Val: 'q'},
	{Name: "events", HasArg: getopt.NoArgument, Val: 'e'},
	{Name: "vector", HasArg: getopt.RequiredArgument, Val: 'X'},
	{Name: "inline_size", HasArg: getopt.RequiredArgument, Val: 'I'},
	{Name: "outs", HasArg: getopt.RequiredArgument, Val: 'o'},
	{Name: "mcg", HasArg: getopt.NoArgument, Val: 'g'},
	{Name: "comm_rdma_cm", HasArg: getopt.NoArgument, Val: 'z'},
	{Name: "rdma_cm", HasArg: getopt.NoArgument, Val: 'R'},
	{Name: "tos", HasArg: getopt.RequiredArgument, Val: 'T'},
	{Name: "hop_limit", HasArg: getopt.RequiredArgument, Val: 'L'},
	{Name: "help", HasArg: getopt.NoArgument, Val: 'h'},
	{Name: "MGID", HasArg: getopt.RequiredArgument, Val: 'M'},
	{Name: "rx-depth", HasArg: getopt.RequiredArgument, Val: 'r'},
	{Name: "bidirectional", HasArg: getopt.NoArgument, Val: 'b'},
	{Name: "cq-mod", HasArg: getopt.RequiredArgument, Val: 'Q'},
	{Name: "noPeak", HasArg: getopt.NoArgument, Val: 'N'},
	{Name: "version", HasArg: getopt.NoArgument, Val: 'V'},
	{Name: "report-cycles", HasArg: getopt.NoArgument, Val: 'C'},
	{Name: "report-histogrm", HasArg: getopt.NoArgument, Val: 'H'},
	{Name: "report-unsorted", HasArg: getopt.NoArgument, Val: 'U'},
	{Name: "atomic_type", HasArg: getopt.RequiredArgument, Val: 'A'},
	{Name: "dualport", HasArg: getopt.NoArgument, Val: 'O'},
	{Name: "post_list", HasArg: getopt.RequiredArgument, Val: 'l'},
	{Name: "duration", HasArg: getopt.RequiredArgument, Val: 'D'},
	{Name: "margin", HasArg: getopt.RequiredArgument, Val: 'f'},
	{Name: "limit_bw", HasArg: getopt.RequiredArgument, Val: 'w'},
	{Name: "limit_msgrate", HasArg: getopt.RequiredArgument, Val: 'y'},
	{Name: "server", HasArg: getopt.NoArgument, Val: 'Z'},
	{Name: "client", HasArg: getopt.NoArgument, Val: 'P'},
	{Name: "run_infinitely", HasArg: getopt.NoArgument, Val: 0x80},
	{Name: "report_gbits", HasArg: getopt.NoArgument, Val: 0x81},
	{Name: "report-both", HasArg: getopt.NoArgument, Val: 0x82},
	{Name: "pkey_index", HasArg: getopt.RequiredArgument, Val: 0x83},
	{Name: "output", HasArg: getopt.RequiredArgument, Val: 0x84},
	{Name: "out_json", HasArg: getopt.NoArgument, Val: 0x85},
	{Name: "out_json_file", HasArg: getopt.RequiredArgument, Val: 0x86},
	{Name: "latency_gap", HasArg: getopt.RequiredArgument, Val: 0x87},
	{Name: "retry_count", HasArg: getopt.RequiredArgument, Val: 0x88},
	{Name: "dont_xchg_versions", HasArg: getopt.NoArgument, Val: 0x89},
	{Name: "tclass", HasArg: getopt.RequiredArgument, Val: 0x8a},
	{Name: "wait_destroy", HasArg: getopt.RequiredArgument, Val: 0x8b},
	{Name: "perform_warm_up", HasArg: getopt.NoArgument, Val: 0x8c},
	{Name: "ipv6", HasArg: getopt.NoArgument, Val: 0x8d},
	{Name: "source_ip", HasArg: getopt.RequiredArgument, Val: 0x8e},
	{Name: "flow_label", HasArg: getopt.RequiredArgument, Val: 0x8f},
	{Name: "use_old_post_send", HasArg: getopt.NoArgument, Val: 0x90},
	{Name: "no_progress", HasArg: getopt.NoArgument, Val: 0x91},
	{Name: "use-srq", HasArg: getopt.NoArgument, Val: 0xa0},
	{Name: "odp", HasArg: getopt.NoArgument, Val: 0xa1},
	{Name: "use_hugepages", HasArg: getopt.NoArgument, Val: 0xa2},
	{Name: "mr_per_qp", HasArg: getopt.NoArgument, Val: 0xa3},
	{Name: "cpu_util", HasArg: getopt.NoArgument, Val: 0xa4},
	{Name: "rate_limit", HasArg: getopt.RequiredArgument, Val: 0xa5},
	{Name: "report-per-port", HasArg: getopt.NoArgument, Val: 0xa6},
	{Name: "reversed", HasArg: getopt.NoArgument, Val: 0xa7},
}

const shortOpts = "w:y:p:d:i:m:s:n:t:u:S:x:c:q:I:o:M:r:Q:A:l:D:f:B:T:L:E:J:j:K:k:X:W:aFegzRvhbNVCHUOZP"

// cInt emulates CHECK_VALUE: strtol with base 0 and the whole argument must be consumed.
func cInt(arg string) (int64, bool) {
	s := strings.TrimLeft(arg, " \t\n")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := 10
	switch {
	case len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 0 && s[0] == '0':
		base = 8
	}
	if s == "" {
		return 0, base == 8 // "0" alone is fine
	}
	v, err := strconv.ParseInt(s, base, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// parse fills p from args (without the program name) like perftest's parser + force_dependecies. It returns
// -1 to go on, or the exit status to stop with.
func parse(p *Params, prog string, args []string, stdout, stderr io.Writer) int {
	initParams(p)
	g := getopt.New(prog, args, shortOpts, longOpts, stderr, os.Getenv("POSIXLY_CORRECT") != "")
	bad := func(name, arg, typ string) int {
		fmt.Fprintf(stderr, " %s argument %s should be %s\n", name, arg, typ)
		return 1
	}
	inRange := func(arg, typ, name string, lo, hi int64, dst *int) int {
		v, ok := cInt(arg)
		if !ok {
			return bad(name, arg, typ)
		}
		if v < lo || v > hi {
			fmt.Fprintf(stderr, " %s should be between %d and %d\n", name, lo, hi)
			return 1
		}
		*dst = int(v)
		return -1
	}
	unsupported := func(what string) int {
		fmt.Fprintf(stderr, " %s is not supported by goverbs perftest\n", what)
		return 1
	}
	for {
		opt, ok := g.Next()
		if !ok {
			break
		}
		rc := -1
		switch opt.Val {
		case 'p':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Port", opt.Arg, "int")
			}
			p.Port = int(int32(v))
		case 'd':
			p.IBDev = opt.Arg
		case 'i':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("IB Port", opt.Arg, "uint8_t")
			}
			p.IBPort = int(uint8(v))
			if p.IBPort < 1 {
				fmt.Fprintf(stderr, "IB Port can't be less than %d\n", 1)
				return 1
			}
		case 'm':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("MTU", opt.Arg, "int")
			}
			p.MTU = int(int32(v))
		case 'n':
			var n int
			rc = inRange(opt.Arg, "int", "Iteration num", minIter, maxIter, &n)
			p.Iters = uint64(n)
		case 't':
			rc = inRange(opt.Arg, "int", "Tx depth", 1, maxTx, &p.TxDepth)
		case 'T', 'L':
			var x int
			rc = inRange(opt.Arg, "int", map[byte]string{'T': "TOS", 'L': "Hop Limit"}[opt.Val], 0, 255, &x)
		case 'u':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("QP Timeout", opt.Arg, "uint8_t")
			}
			p.QPTimeout = int(uint8(v))
		case 'S':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Service Level", opt.Arg, "uint8_t")
			}
			p.SL = int(uint8(v))
			if p.SL > maxSL {
				fmt.Fprintf(stderr, " Only %d Service levels\n", maxSL)
				return 1
			}
		case 'x':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Gid index", opt.Arg, "uint8_t")
			}
			v = int64(uint8(v))
			if v > maxGIDIx {
				fmt.Fprintf(stderr, " %s should be between %d and %d\n", "Gid index", 0, maxGIDIx)
				return 1
			}
			p.GIDIndex, p.UseGIDUser = int(v), true
		case 'c':
			if rc = changeConnType(p, opt.Arg, stderr); rc >= 0 {
				return rc
			}
		case 'q':
			if p.Kind != KindBW {
				fmt.Fprintf(stderr, " Multiple QPs only available on bw tests\n")
				return 1
			}
			rc = inRange(opt.Arg, "int", "num of Qps", 1, maxQPNum, &p.NumQPs)
		case 'I':
			rc = inRange(opt.Arg, "int", "Max inline", 0, maxInline, &p.InlineSize)
			if rc < 0 && (p.Verb == VerbRead || p.Verb == VerbAtomic) {
				fmt.Fprintf(stderr, " Inline feature not available on READ/Atomic verbs\n")
				return 1
			}
		case 'o':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Outstanding Reads", opt.Arg, "int")
			}
			p.OutReads = int(int32(v))
			if p.Verb != VerbRead && p.Verb != VerbAtomic {
				fmt.Fprintf(stderr, " Setting Outstanding reads only available on READ verb\n")
				return 1
			}
		case 'r':
			rc = inRange(opt.Arg, "int", " Rx depth", 1, maxRx, &p.RxDepth)
			if rc < 0 && p.Verb != VerbSend && p.RxDepth > defRxRDMA {
				fmt.Fprintf(stderr, " On RDMA verbs rx depth can be only 1\n")
				return 1
			}
		case 'Q':
			rc = inRange(opt.Arg, "int", "CQ moderation", 1, maxCQMod, &p.CQMod)
			p.ReqCQMod = true
		case 'A':
			if p.Verb != VerbAtomic {
				fmt.Fprintf(stderr, " You are not running the atomic_lat/bw test!\n")
				fmt.Fprintf(stderr, " To change the atomic action type, you must run one of the atomic tests\n")
				return 1
			}
			switch opt.Arg {
			case atomicTypesStr[0]:
				p.AtomicType = atomicCmpAndSwap
			case atomicTypesStr[1]:
				p.AtomicType = atomicFetchAndAdd
			default:
				fmt.Fprintf(stderr, " Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}\n")
				return 1
			}
		case 'l':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Send Post List size", opt.Arg, "int")
			}
			p.PostList = int(int32(v))
			if p.PostList < 1 {
				fmt.Fprintf(stderr, " Send Post List size must be positive\n")
				return 1
			}
		case 'D':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Duration period", opt.Arg, "int")
			}
			if v <= 0 {
				fmt.Fprintf(stderr, " %s must be positive\n", "Duration period")
				return 1
			}
			p.Duration, p.TestType = int(v), byDuration
		case 'f':
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Margin", opt.Arg, "int")
			}
			if v < 0 {
				fmt.Fprintf(stderr, " %s must be non-negative\n", "Margin")
				return 1
			}
			p.Margin = int(v)
		case 'a':
			p.TestMethod = runAll
		case 'F':
			p.CPUFreqF = true
		case 'V':
			fmt.Fprintf(stdout, "Version: %s\n", Version)
			return 0
		case 'h':
			usage(stdout, prog, p)
			return 0
		case 'e':
			p.UseEvent = true
			if p.Verb == VerbWrite {
				fmt.Fprintf(stderr, " Events feature not available on WRITE verb\n")
				return 1
			}
		case 'X':
			if p.Verb == VerbWrite {
				fmt.Fprintf(stderr, " Events feature not available on WRITE verb\n")
				return 1
			}
			p.UseEQNum = true
			rc = inRange(opt.Arg, "int", "EQN", 0, 2048, &p.EQNum)
		case 'b':
			p.Duplex = true
			if p.Kind == KindLat {
				fmt.Fprintf(stderr, " Bidirectional is only available in BW test\n")
				return 1
			}
		case 'N':
			p.NoPeak = true
			if p.Kind == KindLat {
				fmt.Fprintf(stderr, " NoPeak only valid for BW tests\n")
				return 1
			}
		case 'C':
			if p.Kind != KindLat {
				fmt.Fprintf(stderr, " Available only on Latency tests\n")
				return 1
			}
			p.Cycles = true
		case 'H':
			if p.Kind == KindBW {
				fmt.Fprintf(stderr, " Available only on Latency tests\n")
				return 1
			}
			p.Histogram = true
		case 'U':
			if p.Kind == KindBW {
				fmt.Fprintf(stderr, " is Available only on Latency tests\n")
				return 1
			}
			p.Unsorted = true
		case 's':
			arg := opt.Arg
			factor := uint64(1)
			if strings.HasSuffix(arg, "K") {
				arg, factor = arg[:len(arg)-1], 1024
			} else if strings.HasSuffix(arg, "M") {
				arg, factor = arg[:len(arg)-1], 1024*1024
			}
			v, _ := cIntPrefix(arg)
			p.Size = uint64(v) * factor
			p.ReqSize = true
			if int64(v) < 1 || p.Size > 0xffffffff/2 {
				fmt.Fprintf(stderr, " Message Size should be between %d and %d\n", 1, uint32(0xffffffff)/2)
				return 1
			}
		case 'w':
			p.IsLimitBW = true
			p.LimitBW, _ = strconv.ParseFloat(opt.Arg, 64)
		case 'y':
			p.IsLimitMsgRate = true
			p.LimitMsgRate, _ = strconv.ParseFloat(opt.Arg, 64)
		case 'P':
			// perftest sets the machine from the operand afterwards; -P/-Z only matter for raw Ethernet.
		case 'Z':
		case 0x80:
			p.TestMethod = runInfinitely
		case 0x81:
			p.ReportGbits = true
		case 0x82:
			p.ReportBoth = true
		case 0x83:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Pkey index", opt.Arg, "int")
			}
			p.PKeyIndex = int(v)
		case 0x84:
			switch opt.Arg {
			case "bandwidth":
				p.Output = outBW
			case "message_rate":
				p.Output = outMR
			case "latency":
				p.Output = outLat
			default:
				fmt.Fprintf(stderr, " Invalid verbosity level output flag. Please use bandwidth, latency, message_rate\n")
				return 1
			}
		case 0x85:
			p.OutJSON = true
		case 0x86:
			p.OutJSONFile = opt.Arg
		case 0x87:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Latency gap time", opt.Arg, "int")
			}
			if v < 0 {
				fmt.Fprintf(stderr, " %s must be non-negative\n", "Latency gap time")
				return 1
			}
			p.LatencyGap = int(v)
		case 0x88:
			v, ok := cInt(opt.Arg)
			if !ok || v < 0 {
				return bad("Retry Count", opt.Arg, "int")
			}
			p.RetryCount = int(v)
		case 0x89:
			p.DontXchgVersions = true
		case 0x8a:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("traffic class", opt.Arg, "uint16_t")
			}
			p.TrafficClass = int(uint8(v))
		case 0x8b:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("wait_destroy", opt.Arg, "uint32_t")
			}
			p.WaitDestroy = int(uint32(v))
		case 0x8c:
			p.PerformWarmUp = true
		case 0x8d:
			p.IPv6 = true
		case 0x8e:
			p.SourceIP = opt.Arg
		case 0x8f:
			v, ok := cInt(opt.Arg)
			if !ok || v < 0 {
				return bad("flow label", opt.Arg, "int")
			}
			p.FlowLabel = int(v)
		case 0x90:
			// goverbs has one post path; accepted for command-line compatibility.
		case 0x91:
			p.NoProgress = true
		case 'g', 'M':
			return unsupported("Multicast (-g/-M)")
		case 'z':
			p.UseRDMACM = true
		case 'R':
			p.WorkRDMACM = true
		case 'O':
			return unsupported("Dual-port mode (-O)")
		case 0xa0:
			return unsupported("SRQ (--use-srq)")
		case 0xa1:
			p.UseODP = true
		case 0xa2:
			return unsupported("hugepages (--use_hugepages)")
		case 0xa3:
			return unsupported("--mr_per_qp")
		case 0xa4:
			return unsupported("--cpu_util")
		case 0xa5:
			return unsupported("rate limiting (--rate_limit)")
		case 0xa6:
			return unsupported("--report-per-port")
		case 0xa7:
			return unsupported("--reversed")
		case 'B', 'E', 'J', 'j', 'K', 'k', 'Y', 'W', 'v', 'G':
			return unsupported("Raw Ethernet and counter options")
		default:
			fmt.Fprintf(stderr, " Invalid Command or flag.\n")
			fmt.Fprintf(stderr, " Please check command line and run again.\n\n")
			usage(stdout, prog, p)
			return 1
		}
		if rc >= 0 {
			return rc
		}
	}
	ops := g.Operands()
	switch {
	case len(ops) == 1:
		p.Servername = ops[0]
	case len(ops) > 1:
		fmt.Fprintf(stderr, " Invalid Command line. Please check command rerun \n")
		return 1
	}
	p.Server = p.Servername == ""
	if rc := forceDependencies(p, stdout, stderr); rc >= 0 {
		return rc
	}
	if p.WorkRDMACM {
		switch p.Conn {
		case ConnUC:
			io.WriteString(stdout, resultLine)
			fmt.Fprintf(stdout, " UC is not supported in librdmacm\n")
			return 1
		}
		p.UseRDMACM = true
	}
	return -1
}

// cIntPrefix is strtol(s, NULL, 0): the leading number, garbage after it ignored.
func cIntPrefix(s string) (int64, bool) {
	for end := len(s); end > 0; end-- {
		if v, ok := cInt(s[:end]); ok {
			return v, true
		}
	}
	return 0, false
}

func changeConnType(p *Params, arg string, stderr io.Writer) int {
	switch arg {
	case "RC":
		p.Conn = ConnRC
	case "UC":
		p.Conn = ConnUC
		if p.Verb == VerbRead || p.Verb == VerbAtomic {
			fmt.Fprintf(stderr, " UC connection not possible in READ/ATOMIC verbs\n")
			return 1
		}
	case "UD":
		p.Conn = ConnUD
		if p.Verb != VerbSend {
			fmt.Fprintf(stderr, " UD connection only possible in SEND verb\n")
			return 1
		}
	case "RawEth", "XRC", "DC", "SRD":
		fmt.Fprintf(stderr, " %s connection is not supported by goverbs perftest\n", arg)
		return 1
	default:
		fmt.Fprintf(stderr, " Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}\n")
		return 1
	}
	return -1
}

func initParams(p *Params) {
	verb, kind := p.Verb, p.Kind
	*p = Params{Verb: verb, Kind: kind}
	p.Port = defPort
	p.IBPort = 1
	p.Size = defSizeLat
	p.TxDepth = defTxLat
	if kind == KindBW {
		p.Size, p.TxDepth = defSizeBW, defTxBW
	}
	p.QPTimeout = defQPTime
	p.NumQPs = 1
	p.GIDIndex = -1
	p.InlineSize = defInline
	p.RxDepth = defRxRDMA
	if verb == VerbSend {
		p.RxDepth = defRxSend
	}
	p.CQMod = defCQMod
	p.Iters = defIters
	if kind == KindBW && verb == VerbWrite {
		p.Iters = defItersWB
	}
	p.PostList = 1
	p.Duration = defDuration
	p.Margin = defInitMargin
	p.Output = outFull
	if verb == VerbAtomic {
		p.AtomicType = atomicFetchAndAdd
		p.Size = defSizeAtomic
	}
	p.OutJSONFile = "perftest_out.json"
	p.RetryCount = defRetryCount
	p.CacheLine = cacheLineSize()
	p.CycleBuffer = os.Getpagesize()
	if p.CycleBuffer <= 0 {
		p.CycleBuffer = defPageSize
	}
}

func cacheLineSize() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
	if err != nil {
		return defCacheLine
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v <= 0 {
		return defCacheLine
	}
	return v
}

// forceDependencies is perftest's force_dependecies for the options goverbs implements.
func forceDependencies(p *Params, stdout, stderr io.Writer) int {
	line := func() { io.WriteString(stdout, resultLine) }
	if p.TestType == byIterations {
		if uint64(p.TxDepth) > p.Iters {
			p.TxDepth = int(p.Iters)
		}
		if p.Verb == VerbSend && uint64(p.RxDepth) > p.Iters {
			p.RxDepth = int(p.Iters)
		}
		if p.Conn == ConnUD || p.Conn == ConnUC {
			if p.RxDepth == defRxSend {
				p.RxDepth = ucMaxRx
				if p.Iters < ucMaxRx {
					p.RxDepth = int(p.Iters)
				}
			}
		}
	}
	if p.Size > msgSizeCQLimit && p.Conn != ConnUD && p.TestMethod != runAll && !p.UseEvent {
		if !p.ReqCQMod {
			p.CQMod = 1
		} else if p.CQMod > 1 {
			line()
			fmt.Fprintf(stdout, "Warning: Large message requested and CQ moderation enabled\n")
			fmt.Fprintf(stdout, "Warning: It can lead to inaccurate results\n")
		}
	}
	if p.CQMod > p.TxDepth {
		p.CQMod = p.TxDepth
	}
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		p.InlineSize = 0
	}
	if p.TestMethod == runAll {
		p.Size = maxSize
	}
	if p.Verb == VerbAtomic && p.Size != defSizeAtomic {
		line()
		fmt.Fprintf(stdout, "Message size cannot be changed for Atomic tests \n")
		return 1
	}
	if p.PostList > 1 {
		if p.Kind != KindBW {
			line()
			fmt.Fprintf(stderr, "Post list is supported in BW tests only\n")
			return 1
		}
		if p.TestType == byIterations && p.Iters%uint64(p.PostList) != 0 {
			line()
			fmt.Fprintf(stderr, "Number of iterations must be a multiple of post list size\n")
			return 1
		}
		if !p.ReqCQMod {
			p.CQMod = p.PostList
			line()
			fmt.Fprintf(stdout, "Post List requested - CQ moderation will be the size of the post list\n")
		} else if p.PostList%p.CQMod != 0 {
			line()
			fmt.Fprintf(stderr, "Post list size must be a multiple of CQ moderation\n")
			return 1
		}
	}
	if p.TestType == byDuration {
		p.Iters = 0
		p.NoPeak = true
		if p.UseEvent {
			line()
			fmt.Fprintf(stderr, "Duration mode doesn't work with events.\n")
			return 1
		}
		if p.TestMethod == runAll {
			line()
			fmt.Fprintf(stderr, "Duration mode currently doesn't support running on all sizes.\n")
			return 1
		}
	}
	if p.Verb == VerbAtomic && p.UseODP {
		line()
		fmt.Fprintf(stderr, " ODP does not support ATOMICS for now\n")
		return 1
	}
	if p.Conn == ConnUC && p.UseODP {
		line()
		fmt.Fprintf(stderr, " ODP does not support UC\n")
		return 1
	}
	if p.Verb == VerbSend && p.Kind == KindBW && p.Server && !p.Duplex {
		p.NoPeak = true
	}
	if p.TestMethod == runInfinitely {
		p.NoPeak = true
		p.TestType = byDuration
		if p.UseEvent {
			line()
			fmt.Fprintf(stderr, " run_infinitely does not support events feature yet.\n")
			return 1
		}
		if p.Kind == KindLat {
			line()
			fmt.Fprintf(stderr, " run_infinitely exists only in BW tests for now.\n")
			return 1
		}
		if p.Duplex && p.Verb == VerbSend {
			line()
			fmt.Fprintf(stderr, " run_infinitely mode is not supported in SEND Bidirectional BW test\n")
			return 1
		}
	}
	if p.Output != outFull {
		if p.Kind == KindBW && !(p.Output == outBW || p.Output == outMR) {
			line()
			fmt.Fprintf(stderr, " Output verbosity level for BW can be: bandwidth, message_rate\n")
			return 1
		}
		if p.Kind == KindLat && p.Output != outLat {
			line()
			fmt.Fprintf(stderr, " Output verbosity level for LAT can be: latency\n")
			return 1
		}
	}
	if p.LatencyGap > 0 && p.Kind != KindLat {
		line()
		fmt.Fprintf(stderr, " Latency gap feature is only for latency tests\n")
		return 1
	}
	if p.TestType == byDuration && p.Margin == defInitMargin {
		p.Margin = p.Duration / 4
	}
	if p.Conn == ConnUD && p.InlineSize > maxInlineUD {
		line()
		fmt.Fprintf(stderr, "Setting inline size to %d (Max inline size in UD)\n", maxInlineUD)
		p.InlineSize = maxInlineUD
	}
	if p.Verb == VerbSend && p.RxDepth%2 == 1 && p.TestMethod == runRegular {
		p.RxDepth++
	}
	if p.TestType == byIterations && p.Iters > 20000 && !p.NoPeak && p.Kind == KindBW {
		p.NoPeak = true
	}
	if !(p.Duration > 2*p.Margin) {
		line()
		fmt.Fprintf(stderr, "please check that DURATION > 2*MARGIN\n")
		return 1
	}
	if !p.UseEvent && p.UseEQNum {
		fmt.Fprintf(stderr, " Events must be enabled to select a completion vector\n")
		return 1
	}
	return -1
}

func usage(w io.Writer, prog string, p *Params) {
	fmt.Fprintf(w, "Usage:\n")
	fmt.Fprintf(w, "  %s            start a server and wait for connection\n", prog)
	fmt.Fprintf(w, "  %s <host>     connect to server at <host>\n", prog)
	fmt.Fprintf(w, "\nOptions:\n")
	opt := func(s, l, d string) { fmt.Fprintf(w, "  %-3s%-28s %s\n", s, l, d) }
	opt("-a,", "--all", "Run sizes from 2 till 2^23")
	if p.Verb == VerbAtomic {
		opt("-A,", "--atomic_type=<type>", "type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD} (default FETCH_AND_ADD)")
	}
	opt("-c,", "--connection=<RC/UC/UD>", "Connection type RC/UC/UD (default RC)")
	if p.Kind == KindLat {
		opt("-C,", "--report-cycles", "report times in cpu cycle units (default microseconds)")
	}
	opt("-d,", "--ib-dev=<dev>", "Use IB device <dev> (default first device found)")
	opt("-D,", "--duration", "Run test for a customized period of seconds.")
	if p.Verb != VerbWrite {
		opt("-e,", "--events", "Sleep on CQ events (default poll)")
	}
	opt("-f,", "--margin", "measure results within margins. (default=2sec)")
	opt("-F,", "--CPU-freq", "Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.")
	if p.Kind == KindLat {
		opt("-H,", "--report-histogram", "Print out all results (default print summary only)")
	}
	opt("-i,", "--ib-port=<port>", "Use port <port> of IB device (default 1)")
	if p.Verb != VerbRead && p.Verb != VerbAtomic {
		opt("-I,", "--inline_size=<size>", "Max size of message to be sent in inline")
	}
	if p.Kind == KindBW {
		opt("-l,", "--post_list=<list size>", "Post list of WQEs of <list size> size (instead of single post)")
	}
	opt("-m,", "--mtu=<mtu>", "MTU size : 256 - 4096 (default port mtu)")
	opt("-n,", "--iters=<iters>", "Number of exchanges (at least 5, default 1000)")
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		opt("-o,", "--outs=<num>", "num of outstanding read/atom(default max of device)")
	}
	opt("-p,", "--port=<port>", "Listen on/connect to port <port> (default 18515)")
	if p.Kind == KindBW {
		opt("-q,", "--qp=<num of qp's>", "Num of qp's(default 1)")
		opt("-Q,", "--cq-mod", "Generate Cqe only after <--cq-mod> completion")
	}
	if p.Verb == VerbSend {
		opt("-r,", "--rx-depth=<dep>", "Rx queue size (default 512).")
	}
	opt("-s,", "--size=<size>", "Size of message to exchange")
	opt("-S,", "--sl=<sl>", "SL (default 0)")
	opt("-t,", "--tx-depth=<dep>", "Size of tx queue")
	opt("-u,", "--qp-timeout=<timeout>", "QP timeout, timeout value is 4 usec * 2 ^(timeout), default 14")
	if p.Kind == KindLat {
		opt("-U,", "--report-unsorted", "(implies -H) print out unsorted results (default sorted)")
	}
	opt("-V,", "--version", "Display version number")
	opt("-x,", "--gid-index=<index>", "Test uses GID with GID index")
	opt("", "--dont_xchg_versions", "Do not exchange versions and MTU with other side")
	opt("", "--latency_gap=<delay_time>", "delay time between each post send")
	opt("", "--out_json", "Save the report in a json file")
	opt("", "--out_json_file=<file>", "Name of the report json file")
	opt("", "--odp", "Use On Demand Paging instead of Memory Registration.")
	opt("", "--output=<units>", "Set verbosity output level: bandwidth , message_rate, latency")
	opt("", "--perform_warm_up", "Perform some iterations before start measuring in order to warming-up memory cache")
	opt("", "--pkey_index=<pkey index>", "PKey index to use for QP")
	opt("", "--no_progress", "goverbs: no per-second progress lines on stderr in -D runs")
	opt("", "--report_gbits", "Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)")
	opt("", "--retry_count=<value>", "Set retry count value in rdma_cm mode")
	if p.Kind == KindBW {
		opt("", "--run_infinitely", "Run test forever, print results every <duration> seconds")
	}
	opt("", "--tclass=<value>", "Set the Traffic Class in GRH (if GRH is in use)")
	opt("", "--wait_destroy=<seconds>", "Wait <seconds> before destroying allocated resources (QP/CQ/PD/MR..)")
	opt("-h,", "--help", "Show this help screen.")
}
