// Package rdmatool is goverbs' implementation of iproute2's rdma tool
// (iproute2 7.3 syntax and output): objects dev, link, resource, monitor,
// system and statistic, the options -j, -p, -d, -r, -o, -f, -b, -V, and
// iproute2's exit statuses. It speaks RDMA netlink through package netlinkrdma.
package rdmatool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/netlinkrdma"
)

// progName is the name the usage texts give the tool.
const progName = "rdma"

// iproute2AttrMax is RDMA_NLDEV_ATTR_MAX of the uAPI copy iproute2 7.3 is
// built with (Linux 7.3: RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX is the last,
// 118); libmnl reports newer attributes as EOPNOTSUPP.
const iproute2AttrMax = abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX + 1

// sl is iproute2's _SL_, the line separator of multi-line entries: "\" with
// -oneline.
func sl(oneline bool) string {
	if oneline {
		return "\\"
	}
	return "\n"
}

// Main runs the rdma tool with args (without the program name) and returns
// the exit status iproute2's rdma would: 0 on success, 1 on failure. Note
// that, as in iproute2, an unknown command word prints a message and still
// exits 0. prog is unused: iproute2's texts always say "rdma".
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, dialNetlink)
}

func dialNetlink() (backend, error) {
	c, err := netlinkrdma.Dial()
	if err != nil {
		return nil, err
	}
	return conn{c}, nil
}

// backend is what the tool needs from RDMA netlink; *netlinkrdma.Conn
// implements it, and tests supply fixed data.
type backend interface {
	Close() error
	Devices() ([]netlinkrdma.Device, error)
	DeviceByIndex(idx uint32) (netlinkrdma.Device, error)
	SetDeviceName(idx uint32, name string) error
	SetDeviceNetNS(idx uint32, nsFD int) error
	SetAdaptiveModeration(idx uint32, on bool) error
	AddSubDevice(parent uint32, name string, typ netlinkrdma.DeviceType) error
	DeleteSubDevice(idx uint32) error
	SetPrivilegedQKey(on bool) error
	Port(devIndex, port uint32) (netlinkrdma.Port, error)
	LinkAdd(name, typ, netdev string) error
	LinkDelIndex(devIndex uint32) error
	System() (netlinkrdma.System, error)
	SetNetNSMode(m netlinkrdma.NetNSMode) error
	ResourceSummary(devIndex uint32) (netlinkrdma.ResourceSummary, error)
	QPs(q netlinkrdma.ResQuery) ([]netlinkrdma.QP, error)
	QP(q netlinkrdma.ResQuery, lqpn uint32) (netlinkrdma.QP, error)
	CQs(q netlinkrdma.ResQuery) ([]netlinkrdma.CQ, error)
	CQ(q netlinkrdma.ResQuery, cqn uint32) (netlinkrdma.CQ, error)
	MRs(q netlinkrdma.ResQuery) ([]netlinkrdma.MR, error)
	MR(q netlinkrdma.ResQuery, mrn uint32) (netlinkrdma.MR, error)
	PDs(q netlinkrdma.ResQuery) ([]netlinkrdma.PD, error)
	PD(q netlinkrdma.ResQuery, pdn uint32) (netlinkrdma.PD, error)
	CMIDs(q netlinkrdma.ResQuery) ([]netlinkrdma.CMID, error)
	CMID(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.CMID, error)
	Contexts(q netlinkrdma.ResQuery) ([]netlinkrdma.Context, error)
	Context(q netlinkrdma.ResQuery, ctxn uint32) (netlinkrdma.Context, error)
	SRQs(q netlinkrdma.ResQuery) ([]netlinkrdma.SRQ, error)
	SRQ(q netlinkrdma.ResQuery, srqn uint32) (netlinkrdma.SRQ, error)
	FRMRPools(q netlinkrdma.ResQuery) ([]netlinkrdma.FRMRPool, error)
	SetFRMRPoolAging(devIndex, period uint32) error
	SetFRMRPoolPinned(devIndex uint32, k netlinkrdma.FRMRPoolKey, pinned uint32) error
	PortStats(devIndex, port uint32) (netlinkrdma.PortStats, error)
	CounterStatus(devIndex, port uint32) (netlinkrdma.PortStats, error)
	SetOptionalCounters(devIndex, port uint32, indices []uint32) error
	QPCounterMode(devIndex, port uint32) (netlinkrdma.QPCounterMode, error)
	SetQPCounterAuto(devIndex, port uint32, mask netlinkrdma.CounterMask, opts *netlinkrdma.QPCounterAutoOptions) error
	BindQPCounter(devIndex, port, lqpn uint32, cntn *uint32) error
	UnbindQPCounter(devIndex, port, cntn, lqpn uint32) error
	QPCounters(devIndex, port uint32) ([]netlinkrdma.QPCounter, error)
	QPCounter(devIndex, port, cntn uint32) (netlinkrdma.QPCounter, error)
	MRStats(devIndex uint32) ([]netlinkrdma.MRStats, error)
	MRStat(devIndex, mrn uint32) (netlinkrdma.MRStats, error)
}

var _ backend = conn{}

// conn adapts *netlinkrdma.Conn to backend.
type conn struct{ *netlinkrdma.Conn }

func (c conn) SetQPCounterAuto(dev, port uint32, mask netlinkrdma.CounterMask, opts *netlinkrdma.QPCounterAutoOptions) error {
	return c.SetQPCounterAutoWith(dev, port, mask, opts)
}

// devMap is one entry of the device table built at start-up.
type devMap struct {
	name     string
	idx      uint32
	numPorts uint32
}

// tool is the state of one invocation (iproute2's struct rd).
type tool struct {
	stdout, stderr io.Writer
	p              *printer
	be             backend

	details, driverDetails, raw bool

	devs    []devMap
	args    []string
	devIdx  uint32
	portIdx uint32

	filters        []filter
	suppressErrors bool

	// errno is what the C tool's errno holds after its successful calls, for the errors it reports with
	// perror while errno was never set by the failure itself: libmnl's mnl_attr_type_valid() sets EOPNOTSUPP
	// whenever iproute2's rd_attr_cb meets an attribute newer than iproute2's own headers (iproute2AttrMax)
	// in the reply to rd_init's device dump. No kernel of the lab sends one to iproute2 7.3 ("error:
	// Success"); iproute2 6.1 met RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE (101) from Linux 6.11 on.
	errno unix.Errno

	linkName, linkType string

	// taskName returns /proc/PID/comm; replaced in tests.
	taskName func(pid uint32) (string, bool)
	// openNetNS opens a network namespace by name or pid; replaced in tests.
	openNetNS func(name string) (*os.File, error)
	// newMonitor subscribes to device events; replaced in tests.
	newMonitor func() (eventSource, error)
	// flush writes buffered stdout (rdma monitor flushes after each event).
	flush func() error
}

func (t *tool) errf(format string, a ...any) { fmt.Fprintf(t.stderr, format, a...) }
func (t *tool) outf(format string, a ...any) { fmt.Fprintf(t.stdout, format, a...) }

// einvalf prints a message on stderr and returns -EINVAL, the status of a refused argument.
func (t *tool) einvalf(format string, a ...any) int {
	t.errf(format, a...)
	return -int(unix.EINVAL)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s [ OPTIONS ] OBJECT { COMMAND | help }\n"+
		"       %s [ -f[orce] ] -b[atch] filename\n"+
		"where  OBJECT := { dev | link | resource | monitor | system | statistic | help }\n"+
		"       OPTIONS := { -V[ersion] | -d[etails] | -j[son] | -p[retty] | -r[aw]}\n", progName, progName)
}

type longOpt struct {
	name   string
	short  byte
	hasArg bool
}

var longOpts = []longOpt{
	{"version", 'V', false}, {"help", 'h', false}, {"json", 'j', false}, {"oneline", 'o', false}, {"pretty", 'p', false},
	{"details", 'd', false}, {"raw", 'r', false}, {"force", 'f', false}, {"batch", 'b', true},
}

// errUnknownOpt and errMissingArg are the two getopt failures.
var (
	errUnknownOpt = errors.New("unknown option")
	errMissingArg = errors.New("missing argument")
)

type options struct {
	version, help, json, pretty, raw, force, oneline bool
	details                                          int
	batch                                            string
	haveBatch                                        bool
}

// parseOpts parses options the way GNU getopt_long does for rdma's
// ":Vhdropjfb:": options may follow operands, clusters ("-jp") and unique
// long-option prefixes are accepted, and "--" ends option parsing. -V and
// -h take effect as soon as they are met.
func parseOpts(args []string) (opts options, operands []string, err error) {
	set := func(c byte, arg string) {
		switch c {
		case 'V':
			opts.version = true
		case 'h':
			opts.help = true
		case 'j':
			opts.json = true
		case 'p':
			opts.pretty = true
		case 'd':
			opts.details++
		case 'r':
			opts.raw = true
		case 'o':
			opts.oneline = true
		case 'f':
			opts.force = true
		case 'b':
			opts.batch, opts.haveBatch = arg, true
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			var match *longOpt
			for j := range longOpts {
				if longOpts[j].name == name {
					match = &longOpts[j]
					break
				}
				if strings.HasPrefix(longOpts[j].name, name) {
					if match != nil {
						return opts, nil, errUnknownOpt // ambiguous
					}
					match = &longOpts[j]
				}
			}
			if match == nil || (hasVal && !match.hasArg) {
				return opts, nil, errUnknownOpt
			}
			if match.hasArg && !hasVal {
				if i+1 >= len(args) {
					return opts, nil, errMissingArg
				}
				i++
				val = args[i]
			}
			set(match.short, val)
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				c := a[k]
				if !strings.ContainsRune("Vhdropjfb", rune(c)) {
					return opts, nil, errUnknownOpt
				}
				if c == 'b' {
					val := a[k+1:]
					if val == "" {
						if i+1 >= len(args) {
							return opts, nil, errMissingArg
						}
						i++
						val = args[i]
					}
					set(c, val)
					break
				}
				set(c, "")
				if c == 'V' || c == 'h' {
					return opts, operands, nil
				}
			}
		default:
			operands = append(operands, a)
		}
		if opts.version || opts.help {
			return opts, operands, nil
		}
	}
	return opts, operands, nil
}

func run(args []string, stdout, stderr io.Writer, dial func() (backend, error)) int {
	opts, operands, err := parseOpts(args)
	switch {
	case errors.Is(err, errMissingArg):
		fmt.Fprintf(stderr, "-b option requires an argument\n")
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "Unknown option.\n")
		usage(stdout)
		return 1
	case opts.version:
		fmt.Fprintf(stdout, "%s utility, iproute2-7.3.0 compatible (goverbs)\n", progName)
		return 0
	case opts.help:
		usage(stdout)
		return 0
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	t := &tool{
		stdout:        out,
		stderr:        stderrFlusher{out, stderr},
		p:             &printer{out: out, json: opts.json, pretty: opts.pretty, sl: sl(opts.oneline)},
		details:       opts.details > 0,
		driverDetails: opts.details > 1,
		raw:           opts.raw,
		taskName:      taskName,
		openNetNS:     openNetNS,
		newMonitor:    dialMonitor,
		flush:         out.Flush,
	}

	be, err := dial()
	if err != nil {
		t.errf("Failed to open NETLINK_RDMA socket\n")
		return 1
	}
	defer be.Close()
	t.be = be
	if t.init() != 0 {
		return 1
	}
	if opts.haveBatch {
		return t.batch(opts.batch, opts.force)
	}
	if t.cmd(operands) != 0 {
		return 1
	}
	return 0
}

// stderrFlusher flushes buffered stdout before writing to stderr, so that
// the two streams interleave as they do for iproute2 on a terminal.
type stderrFlusher struct {
	out *bufio.Writer
	w   io.Writer
}

func (s stderrFlusher) Write(b []byte) (int, error) {
	s.out.Flush()
	return s.w.Write(b)
}

// init builds the device table, as rd_init does with a GET dump.
func (t *tool) init() int {
	devs, err := t.be.Devices()
	if err != nil {
		return t.nlError(err)
	}
	for _, d := range devs {
		if !d.Present.Has(attrPortIndex) {
			t.errf("This tool doesn't support switches yet\n")
			return t.nlError(unix.EINVAL)
		}
		t.devs = append(t.devs, devMap{name: d.Name, idx: d.Index, numPorts: d.NumPorts})
		for a := uint16(iproute2AttrMax); a < 128; a++ {
			if d.Present.Has(a) {
				t.errno = unix.EOPNOTSUPP // mnl_attr_type_valid(attr, RDMA_NLDEV_ATTR_MAX - 1)
			}
		}
	}
	return 0
}

// nlError reports a failed netlink exchange as iproute2's perror("error")
// does, and returns the failure code.
// nlResult is the status of a netlink request that returned err: 0, or nlError's.
func (t *tool) nlResult(err error) int {
	if err != nil {
		return t.nlError(err)
	}
	return 0
}

func (t *tool) nlError(err error) int {
	// libnetlink's nl_dump_ext_ack prints the kernel's message even when
	// errors are suppressed.
	if m := netlinkrdma.KernelMessage(err); m != "" {
		if !strings.HasSuffix(m, ".") {
			m += "."
		}
		t.errf("Error: %s\n", m)
	}
	if !t.suppressErrors {
		t.errf("error: %s\n", errText(err))
	}
	return -1
}

// errText is glibc's strerror text for the errno inside err.
func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if errno == 0 {
			return "Success"
		}
		s := errno.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}

// taskName is how process names are looked up; tests replace it.
var taskName = procTaskName

// procTaskName reads /proc/PID/comm as iproute2's get_task_name does.
func procTaskName(pid uint32) (string, bool) {
	if pid == 0 {
		return "", false
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "", false
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 63)).ReadString('\n')
	if err != nil && line == "" {
		return "", false
	}
	return strings.TrimSuffix(line, "\n"), true
}

// batch runs the commands of a batch file ("-" for standard input).
func (t *tool) batch(name string, force bool) int {
	in := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			t.errf("Cannot open file \"%s\" for reading: %s\n", name, errText(err))
			return 1
		}
		defer f.Close()
		in = f
	}
	ret := 0
	lineno := 0
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		lineno++
		line := sc.Text()
		for strings.HasSuffix(strings.SplitN(line, "#", 2)[0], "\\") {
			if !sc.Scan() {
				t.errf("Missing continuation line\n")
				return ret
			}
			lineno++
			line = strings.TrimSuffix(strings.SplitN(line, "#", 2)[0], "\\") + sc.Text()
		}
		line = strings.SplitN(line, "#", 2)[0]
		argv, ok := makeArgs(line)
		if !ok {
			t.errf("Unterminated quoted string\n")
			return 1
		}
		if len(argv) == 0 {
			continue
		}
		if t.cmd(argv) != 0 {
			t.errf("Command failed %s:%d\n", name, lineno)
			ret = 1
			if !force {
				break
			}
		}
	}
	return ret
}

// makeArgs splits a batch line into words; a word may be quoted with ' or ".
func makeArgs(line string) ([]string, bool) {
	var out []string
	for {
		line = strings.TrimLeft(line, " \t\r\n")
		if line == "" {
			return out, true
		}
		if q := line[0]; q == '\'' || q == '"' {
			end := strings.IndexByte(line[1:], q)
			if end < 0 {
				return nil, false
			}
			out = append(out, line[1:1+end])
			line = line[2+end:]
			continue
		}
		end := strings.IndexAny(line, " \t\r\n")
		if end < 0 {
			return append(out, line), true
		}
		out = append(out, line[:end])
		line = line[end+1:]
	}
}

// cmd dispatches one command line (rd_cmd).
func (t *tool) cmd(args []string) int {
	t.args = args
	return t.execCmd([]command{
		{"", t.cmdHelp},
		{"help", t.cmdHelp},
		{"dev", t.cmdDev},
		{"link", t.cmdLink},
		{"resource", t.cmdRes},
		{"system", t.cmdSys},
		{"statistic", t.cmdStat},
		{"monitor", t.cmdMon},
	}, "object")
}

func (t *tool) cmdHelp() int {
	usage(t.stdout)
	return 0
}

// openNetNS opens a network namespace as iproute2's netns_get_fd does: a
// path when arg has a '/', else /var/run/netns/ARG, else, when arg is an
// integer, /proc/ARG/ns/net. The error is that of the last open tried.
func openNetNS(arg string) (*os.File, error) {
	path := arg
	if !strings.Contains(arg, "/") {
		path = "/var/run/netns/" + arg
	}
	f, err := os.Open(path)
	if err == nil {
		return f, nil
	}
	if v, end, erange := cstd.Strtol(arg, 0); arg == "" || end != len(arg) || erange || v != int64(int32(v)) {
		return nil, err
	}
	return os.Open("/proc/" + arg + "/ns/net")
}
