package perftest

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
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
	maxIter        = 4294967296
	maxTx          = 15000
	maxSL          = 15
	maxGIDIx       = 64
	maxQPNum       = 16384
	maxRx          = 16384
	ucMaxRx        = 16000
	maxCQMod       = 1024
	maxInline      = 1024
	maxInlineUD    = 1024
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
	// FlowLabels (--flow_label=fl0,fl1,...) are given to the QPs round robin.
	FlowLabels []int
	// IPv6Addr (--ipv6-addr): the out-of-band TCP channel uses IPv6.
	IPv6Addr bool
	// DisablePCIR (--disable_pcie_relaxed): no IBV_ACCESS_RELAXED_ORDERING.
	DisablePCIR bool
	// WriteImm (--write_with_imm) is perftest 6.24's WRITE_IMM verb; goverbs refuses it after the checks 6.24
	// makes on the command line.
	WriteImm   bool
	NoProgress bool // goverbs: no per-second progress lines on stderr in -D runs
	// UseODP (--odp): the buffer is registered for on-demand paging (uverbs.AccessOnDemand), once the device
	// reports RC send and receive with ODP, as perftest 6.06 checks.
	UseODP bool
	NoLock bool // --no_lock: QPs and CQs in a thread domain's parent domain

	// Filled once the device is open.
	LinkLayer  uint8
	RemVersion string
}

// parse's results for -V and -h: perftest's VERSION_EXIT and HELP_EXIT, after which the C tools exit 1 without
// the " Parser function exited with Error" line.
const (
	versionExit = 10
	helpExit    = 11
	// exitFail is a check that calls exit(1) itself (change_conn_type, force_dependecies, ...): status 1 and
	// no parser error line.
	exitFail = 12
)

// longName is the long option name of a flag-only option value, for " Duplicated argument".
func longName(val byte) string {
	for _, o := range longOpts {
		if o.Val == val {
			return o.Name
		}
	}
	return ""
}

// cStrtod is strtod(s, NULL): leading blanks, a sign and the longest number prefix; 0 if none.
func cStrtod(s string) float64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if v := Atof(s); neg {
		return -v
	} else {
		return v
	}
}

// parseFlowLabels is perftest 6.24's parse_flow_label_from_str: comma-separated strtol(..., 0) values.
func parseFlowLabels(s string) []int {
	parts := strings.Split(s, ",")
	fl := make([]int, len(parts))
	for i, part := range parts {
		v, _ := cIntPrefix(part)
		fl[i] = int(int32(v))
	}
	return fl
}

// Long options that have no short letter (perftest sets a flag variable for them; getopt returns 0). Their
// values only need to be distinct and above the letters.
const (
	optForceLink byte = 0x80 + iota
	optRemoteMAC
	optLocalMAC
	optRemoteIP
	optLocalIP
	optRemotePort
	optLocalPort
	optRunInfinitely
	optReportGbits
	optUseSRQ
	optNoLock
	optUseNullMR
	optReportBoth
	optReversed
	optPKeyIndex
	optTCP
	optBurstSize
	optTypicalPktSize
	optRateLimit
	optRateLimitType
	optRateUnits
	optOutput
	optCPUUtil
	optOutJSON
	optOutJSONFile
	optLatencyGap
	optFlowLabel
	optRetryCount
	optDontXchgVersions
	optPayloadFilePath
	optUseCUDA
	optUseCUDABusID
	optUseCUDADmabuf
	optUseDataDirect
	optUseROCm
	optUseNeuron
	optUseNeuronDmabuf
	optUseHL
	optUseMLU
	optMmap
	optMmapOffset
	optIPv6
	optIPv6Addr
	optRawIPv6
	optReportPerPort
	optODP
	optUseHugepages
	optUseOldPostSend
	optPromiscuous
	optSniffer
	optRawMcast
	optMRPerQP
	optDLID
	optTClass
	optWaitDestroy
	optFlows
	optFlowsBurst
	optReplyEvery
	optPerformWarmUp
	optVLANEn
	optVLANPCP
	optRecvPostList
	optAESXTS
	optEncryptOnTx
	optSigBefore
	optAESBlockSize
	optKEKPath
	optCredentialsPath
	optDataEncKeysNumber
	optDataEncKeyAppPath
	optLogDCIStreams
	optLogActiveDCIStreams
	optDisablePCIeRelaxed
	optCongestType
	optBindSourceIP
	optWriteWithImm
	optNoDDP
	optUnsolicitedWrite
	optConnectionless
	optNoProgress // goverbs' own
)

// longOpts is perftest 6.24's long option table as Debian builds it (the options compiled in: see usage), in its
// order, plus goverbs' --no_progress.
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
	{Name: "source_mac", HasArg: getopt.RequiredArgument, Val: 'B'},
	{Name: "dest_mac", HasArg: getopt.RequiredArgument, Val: 'E'},
	{Name: "dest_ip", HasArg: getopt.RequiredArgument, Val: 'J'},
	{Name: "source_ip", HasArg: getopt.RequiredArgument, Val: 'j'},
	{Name: "dest_port", HasArg: getopt.RequiredArgument, Val: 'K'},
	{Name: "source_port", HasArg: getopt.RequiredArgument, Val: 'k'},
	{Name: "ethertype", HasArg: getopt.RequiredArgument, Val: 'Y'},
	{Name: "limit_bw", HasArg: getopt.RequiredArgument, Val: 'w'},
	{Name: "limit_msgrate", HasArg: getopt.RequiredArgument, Val: 'y'},
	{Name: "server", HasArg: getopt.NoArgument, Val: 'Z'},
	{Name: "client", HasArg: getopt.NoArgument, Val: 'P'},
	{Name: "mac_fwd", HasArg: getopt.NoArgument, Val: 'v'},
	{Name: "use_rss", HasArg: getopt.NoArgument, Val: 'G'},
	{Name: "report-counters", HasArg: getopt.RequiredArgument, Val: 'W'},
	{Name: "force-link", HasArg: getopt.RequiredArgument, Val: optForceLink},
	{Name: "remote_mac", HasArg: getopt.RequiredArgument, Val: optRemoteMAC},
	{Name: "local_mac", HasArg: getopt.RequiredArgument, Val: optLocalMAC},
	{Name: "remote_ip", HasArg: getopt.RequiredArgument, Val: optRemoteIP},
	{Name: "local_ip", HasArg: getopt.RequiredArgument, Val: optLocalIP},
	{Name: "remote_port", HasArg: getopt.RequiredArgument, Val: optRemotePort},
	{Name: "local_port", HasArg: getopt.RequiredArgument, Val: optLocalPort},
	{Name: "run_infinitely", HasArg: getopt.NoArgument, Val: optRunInfinitely},
	{Name: "report_gbits", HasArg: getopt.NoArgument, Val: optReportGbits},
	{Name: "use-srq", HasArg: getopt.NoArgument, Val: optUseSRQ},
	{Name: "no_lock", HasArg: getopt.NoArgument, Val: optNoLock},
	{Name: "use-null-mr", HasArg: getopt.NoArgument, Val: optUseNullMR},
	{Name: "report-both", HasArg: getopt.NoArgument, Val: optReportBoth},
	{Name: "reversed", HasArg: getopt.NoArgument, Val: optReversed},
	{Name: "pkey_index", HasArg: getopt.RequiredArgument, Val: optPKeyIndex},
	{Name: "tcp", HasArg: getopt.NoArgument, Val: optTCP},
	{Name: "burst_size", HasArg: getopt.RequiredArgument, Val: optBurstSize},
	{Name: "typical_pkt_size", HasArg: getopt.RequiredArgument, Val: optTypicalPktSize},
	{Name: "rate_limit", HasArg: getopt.RequiredArgument, Val: optRateLimit},
	{Name: "rate_limit_type", HasArg: getopt.RequiredArgument, Val: optRateLimitType},
	{Name: "rate_units", HasArg: getopt.RequiredArgument, Val: optRateUnits},
	{Name: "output", HasArg: getopt.RequiredArgument, Val: optOutput},
	{Name: "cpu_util", HasArg: getopt.NoArgument, Val: optCPUUtil},
	{Name: "out_json", HasArg: getopt.NoArgument, Val: optOutJSON},
	{Name: "out_json_file", HasArg: getopt.RequiredArgument, Val: optOutJSONFile},
	{Name: "latency_gap", HasArg: getopt.RequiredArgument, Val: optLatencyGap},
	{Name: "flow_label", HasArg: getopt.RequiredArgument, Val: optFlowLabel},
	{Name: "retry_count", HasArg: getopt.RequiredArgument, Val: optRetryCount},
	{Name: "dont_xchg_versions", HasArg: getopt.NoArgument, Val: optDontXchgVersions},
	{Name: "payload_file_path", HasArg: getopt.RequiredArgument, Val: optPayloadFilePath},
	{Name: "use_cuda", HasArg: getopt.RequiredArgument, Val: optUseCUDA},
	{Name: "use_cuda_bus_id", HasArg: getopt.RequiredArgument, Val: optUseCUDABusID},
	{Name: "use_cuda_dmabuf", HasArg: getopt.NoArgument, Val: optUseCUDADmabuf},
	{Name: "use_data_direct", HasArg: getopt.NoArgument, Val: optUseDataDirect},
	{Name: "use_rocm", HasArg: getopt.RequiredArgument, Val: optUseROCm},
	{Name: "use_neuron", HasArg: getopt.RequiredArgument, Val: optUseNeuron},
	{Name: "use_neuron_dmabuf", HasArg: getopt.NoArgument, Val: optUseNeuronDmabuf},
	{Name: "use_hl", HasArg: getopt.RequiredArgument, Val: optUseHL},
	{Name: "use_mlu", HasArg: getopt.RequiredArgument, Val: optUseMLU},
	{Name: "mmap", HasArg: getopt.RequiredArgument, Val: optMmap},
	{Name: "mmap-offset", HasArg: getopt.RequiredArgument, Val: optMmapOffset},
	{Name: "ipv6", HasArg: getopt.NoArgument, Val: optIPv6},
	{Name: "ipv6-addr", HasArg: getopt.NoArgument, Val: optIPv6Addr},
	{Name: "raw_ipv6", HasArg: getopt.NoArgument, Val: optRawIPv6},
	{Name: "report-per-port", HasArg: getopt.NoArgument, Val: optReportPerPort},
	{Name: "odp", HasArg: getopt.NoArgument, Val: optODP},
	{Name: "use_hugepages", HasArg: getopt.NoArgument, Val: optUseHugepages},
	{Name: "use_old_post_send", HasArg: getopt.NoArgument, Val: optUseOldPostSend},
	{Name: "promiscuous", HasArg: getopt.NoArgument, Val: optPromiscuous},
	{Name: "sniffer", HasArg: getopt.NoArgument, Val: optSniffer},
	{Name: "raw_mcast", HasArg: getopt.NoArgument, Val: optRawMcast},
	{Name: "mr_per_qp", HasArg: getopt.NoArgument, Val: optMRPerQP},
	{Name: "dlid", HasArg: getopt.RequiredArgument, Val: optDLID},
	{Name: "tclass", HasArg: getopt.RequiredArgument, Val: optTClass},
	{Name: "wait_destroy", HasArg: getopt.RequiredArgument, Val: optWaitDestroy},
	{Name: "flows", HasArg: getopt.RequiredArgument, Val: optFlows},
	{Name: "flows_burst", HasArg: getopt.RequiredArgument, Val: optFlowsBurst},
	{Name: "reply_every", HasArg: getopt.RequiredArgument, Val: optReplyEvery},
	{Name: "perform_warm_up", HasArg: getopt.NoArgument, Val: optPerformWarmUp},
	{Name: "vlan_en", HasArg: getopt.NoArgument, Val: optVLANEn},
	{Name: "vlan_pcp", HasArg: getopt.RequiredArgument, Val: optVLANPCP},
	{Name: "recv_post_list", HasArg: getopt.RequiredArgument, Val: optRecvPostList},
	{Name: "aes_xts", HasArg: getopt.NoArgument, Val: optAESXTS},
	{Name: "encrypt_on_tx", HasArg: getopt.NoArgument, Val: optEncryptOnTx},
	{Name: "sig_before", HasArg: getopt.NoArgument, Val: optSigBefore},
	{Name: "aes_block_size", HasArg: getopt.RequiredArgument, Val: optAESBlockSize},
	{Name: "kek_path", HasArg: getopt.RequiredArgument, Val: optKEKPath},
	{Name: "credentials_path", HasArg: getopt.RequiredArgument, Val: optCredentialsPath},
	{Name: "data_enc_keys_number", HasArg: getopt.RequiredArgument, Val: optDataEncKeysNumber},
	{Name: "data_enc_key_app_path", HasArg: getopt.RequiredArgument, Val: optDataEncKeyAppPath},
	{Name: "log_dci_streams", HasArg: getopt.RequiredArgument, Val: optLogDCIStreams},
	{Name: "log_active_dci_streams", HasArg: getopt.RequiredArgument, Val: optLogActiveDCIStreams},
	{Name: "disable_pcie_relaxed", HasArg: getopt.NoArgument, Val: optDisablePCIeRelaxed},
	{Name: "congest_type", HasArg: getopt.RequiredArgument, Val: optCongestType},
	{Name: "bind_source_ip", HasArg: getopt.RequiredArgument, Val: optBindSourceIP},
	{Name: "write_with_imm", HasArg: getopt.NoArgument, Val: optWriteWithImm},
	{Name: "no_ddp", HasArg: getopt.NoArgument, Val: optNoDDP},
	{Name: "unsolicited_write", HasArg: getopt.NoArgument, Val: optUnsolicitedWrite},
	{Name: "connectionless", HasArg: getopt.NoArgument, Val: optConnectionless},
	{Name: "no_progress", HasArg: getopt.NoArgument, Val: optNoProgress},
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
	nonNegative := func(arg, name string, dst *int) int {
		v, ok := cInt(arg)
		if !ok {
			return bad(name, arg, "int")
		}
		*dst = int(int32(v))
		if *dst < 0 {
			fmt.Fprintf(stderr, " %s must be non-negative %s\n", name, "int")
			return 1
		}
		return -1
	}
	seen := map[byte]bool{} // perftest 6.24's duplicates_checker
	// -J/--dest_ip and -j/--source_ip are raw Ethernet's addresses (6.06's --source_ip is 6.24's
	// --bind_source_ip): checked after the options, then unused by these tests.
	var rawServerIP, rawClientIP *string
	for {
		opt, ok := g.Next()
		if !ok {
			break
		}
		if opt.Val != '?' {
			if seen[opt.Val] {
				if opt.Val >= 0x80 {
					fmt.Fprintf(stderr, " Duplicated argument: %s \n", longName(opt.Val))
				} else {
					fmt.Fprintf(stderr, " Duplicated argument: -%c \n", opt.Val)
				}
				return 1
			}
			seen[opt.Val] = true
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
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Iteration num", opt.Arg, "uint64_t")
			}
			if n := uint64(v); n < minIter || n > maxIter {
				fmt.Fprintf(stderr, " %s should be between %d and %d\n", "Iteration num", minIter, uint64(maxIter))
				return 1
			}
			p.Iters = uint64(v)
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
			if changeConnType(p, opt.Arg, stderr) >= 0 {
				return exitFail
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
			if rc < 0 && p.Verb != VerbSend && p.Verb != VerbWrite && p.RxDepth > defRxRDMA {
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
				return exitFail
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
			p.Margin = int(int32(v))
			if p.Margin < 0 {
				fmt.Fprintf(stderr, " %s must be non-negative %s\n", "Margin", "int")
				return 1
			}
		case 'a':
			p.TestMethod = runAll
		case 'F':
			p.CPUFreqF = true
		case 'V':
			fmt.Fprintf(stdout, "Version: %s\n", Version)
			return versionExit
		case 'h':
			usage(stdout, prog, p)
			return helpExit
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
			p.LimitBW = float64(float32(cStrtod(opt.Arg)))
			if p.LimitBW < 0 {
				fmt.Fprintf(stderr, " Invalid Minimum BW Limit\n")
				return 1
			}
		case 'y':
			p.IsLimitMsgRate = true
			p.LimitMsgRate = float64(float32(cStrtod(opt.Arg)))
			if p.LimitMsgRate < 0 {
				fmt.Fprintf(stderr, " Invalid Minimum msgRate Limit\n")
				return 1
			}
		case 'P':
			// perftest sets the machine from the operand afterwards; -P/-Z only matter for raw Ethernet.
		case 'Z':
		case 'G':
			fmt.Fprintf(stderr, "RSS isn't supported\n")
			return 1
		case optRunInfinitely:
			p.TestMethod = runInfinitely
		case optReportGbits:
			p.ReportGbits = true
		case optReportBoth:
			p.ReportBoth = true
		case optPKeyIndex:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("Pkey index", opt.Arg, "int")
			}
			p.PKeyIndex = int(v)
		case optOutput:
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
		case optOutJSON:
			p.OutJSON = true
		case optOutJSONFile:
			p.OutJSONFile = opt.Arg
		case optLatencyGap:
			rc = nonNegative(opt.Arg, "Latency gap time", &p.LatencyGap)
		case optRetryCount:
			rc = nonNegative(opt.Arg, "Retry Count", &p.RetryCount)
		case optDontXchgVersions:
			p.DontXchgVersions = true
		case optTClass:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("traffic class", opt.Arg, "uint16_t")
			}
			p.TrafficClass = int(uint8(v))
		case optWaitDestroy:
			v, ok := cInt(opt.Arg)
			if !ok {
				return bad("wait_destroy", opt.Arg, "uint32_t")
			}
			p.WaitDestroy = int(uint32(v))
		case optPerformWarmUp:
			p.PerformWarmUp = true
		case optIPv6:
			p.IPv6 = true
		case optIPv6Addr:
			p.IPv6Addr = true
		case optBindSourceIP:
			p.SourceIP = opt.Arg
		case optFlowLabel:
			p.FlowLabels = parseFlowLabels(opt.Arg)
		case optUseOldPostSend:
			// goverbs has one post path; accepted for command-line compatibility.
		case optNoProgress:
			p.NoProgress = true
		case optODP:
			p.UseODP = true
		case optDisablePCIeRelaxed:
			p.DisablePCIR = true
		case optNoDDP:
			// Only mlx5's out-of-order receive WRs make "Using DDP" ON; without them --no_ddp changes nothing.
		case optWriteWithImm:
			if p.Verb != VerbWrite {
				fmt.Fprintf(stderr, "Write_with_imm can only be used with write_lat and write_bw tests\n")
				return 1
			}
			p.WriteImm = true
		case optUseCUDA, optUseCUDABusID, optUseCUDADmabuf, optUseROCm, optUseNeuron, optUseNeuronDmabuf,
			optUseHL, optUseMLU:
			// Debian builds perftest without CUDA, ROCm, Neuron, Habana and MLU support.
			fmt.Fprintf(stdout, " Unsupported memory type\n")
			return 1
		case optUseDataDirect:
			fmt.Fprintf(stdout, " Data Direct is not supported\n")
			return 1
		case optCongestType:
			switch opt.Arg {
			case "DCQCN", "LDCP", "HC3", "DIP":
				return unsupported("--congest_type (hns devices)")
			}
			fmt.Fprintf(stderr, " Invalid congest type. Please choose from {DCQCN,LDCP,HC3,DIP}\n")
			return exitFail
		case optForceLink:
			switch strings.ToUpper(opt.Arg) {
			case "IB", "ETHERNET":
				return unsupported("--force-link")
			}
			fmt.Fprintf(stderr, "Invalid link layer value should be IB or ETHERNET.\n")
			return 1
		case 'g':
			if p.Verb != VerbSend {
				fmt.Fprintf(stderr, " MultiCast feature only available on SEND verb\n")
				return 1
			}
			return unsupported("Multicast (-g/-M/--connectionless)")
		case 'M', optConnectionless:
			return unsupported("Multicast (-g/-M/--connectionless)")
		case 'z':
			p.UseRDMACM = true
		case 'R':
			p.WorkRDMACM = true
		case 'O', optReportPerPort:
			return unsupported("Dual-port mode (-O/--report-per-port)")
		case optUseSRQ:
			return unsupported("SRQ (--use-srq)")
		case optUseHugepages:
			return unsupported("hugepages (--use_hugepages)")
		case optMRPerQP:
			return unsupported("--mr_per_qp")
		case optCPUUtil:
			return unsupported("--cpu_util")
		case optRateLimit, optRateLimitType, optRateUnits, optBurstSize, optTypicalPktSize:
			return unsupported("rate limiting (--rate_limit, --burst_size, ...)")
		case optReversed:
			return unsupported("--reversed")
		case optNoLock:
			p.NoLock = true
		case optUseNullMR:
			return unsupported("--use-null-mr")
		case optPayloadFilePath:
			return unsupported("--payload_file_path")
		case optRecvPostList:
			return unsupported("--recv_post_list")
		case optDLID:
			return unsupported("--dlid")
		case optMmap, optMmapOffset:
			return unsupported("mmap'd buffers (--mmap)")
		case optAESXTS, optEncryptOnTx, optSigBefore, optAESBlockSize, optKEKPath, optCredentialsPath,
			optDataEncKeysNumber, optDataEncKeyAppPath:
			return unsupported("AES-XTS encryption (--aes_xts, ...)")
		case optLogDCIStreams, optLogActiveDCIStreams:
			return unsupported("DC streams (--log_dci_streams)")
		case optUnsolicitedWrite:
			return unsupported("--unsolicited_write (SRD)")
		case 'J':
			rawServerIP = &opt.Arg
		case 'j':
			rawClientIP = &opt.Arg
		case 'B', 'E', 'K', 'k', 'Y', 'W', 'v', optRemoteMAC, optLocalMAC, optRemoteIP, optLocalIP,
			optRemotePort, optLocalPort, optTCP, optRawIPv6, optPromiscuous, optSniffer, optRawMcast, optFlows,
			optFlowsBurst, optReplyEvery, optVLANEn, optVLANPCP:
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
	for _, ip := range []struct {
		arg  *string
		what string
	}{{rawServerIP, "server"}, {rawClientIP, "client"}} {
		if ip.arg != nil {
			if a := net.ParseIP(*ip.arg); a == nil || a.To4() == nil || strings.Contains(*ip.arg, ":") {
				fmt.Fprintf(stderr, " Invalid %s IP address\n", ip.what)
				return 1
			}
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
	if forceDependencies(p, stdout, stderr) >= 0 {
		return exitFail
	}
	if p.WriteImm {
		return unsupported("--write_with_imm")
	}
	if p.WorkRDMACM {
		switch p.Conn {
		case ConnUC:
			io.WriteString(stdout, resultLine)
			fmt.Fprintf(stdout, " UC is not supported in librdmacm\n")
			return exitFail
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
	noPeak := func() { // 6.24 says so whenever a BW test loses its peak
		if !p.NoPeak && p.Kind == KindBW {
			fmt.Fprintf(stdout, " WARNING: BW peak won't be measured in this run.\n")
		}
		p.NoPeak = true
	}
	if p.Verb == VerbWrite {
		p.RxDepth = defRxRDMA
	}
	if p.TestMethod != runInfinitely && p.TestType == byIterations {
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
		noPeak()
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
	if p.Verb == VerbSend && p.Kind == KindBW && p.Server && !p.Duplex {
		noPeak()
	}
	if p.TestMethod == runInfinitely {
		noPeak()
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
			fmt.Fprintf(stderr, " run_infinitely mode is not supported in SEND or WRITE_IMM Bidirectional BW test\n")
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
		noPeak()
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
