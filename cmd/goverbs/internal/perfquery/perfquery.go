// Package perfquery is goverbs' clone of infiniband-diags' perfquery
// (rdma-core 65, as Debian sid builds it): it reads a port's PerfMgt
// counters (ClassPortInfo, PortCounters, PortCountersExtended) through the
// kernel's user MAD interface (package umad) and prints them byte for byte
// like the C tool, with the same options, diagnostics and exit statuses.
//
// On RoCE, sid's perfquery never sends a MAD: its libibumad only pairs
// InfiniBand ports, so on a host whose RDMA ports are all Ethernet (rxe) it
// fails to open a umad port whatever the kernel ("Failed to open '(null)'
// port '0'"). The clone reproduces that (see umadlib.go); the PMA round
// trip itself, which Linux 7.2+ rxe answers, is package umad's (its lab
// test).
package perfquery

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibdiag"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/libumad"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

// Version is the infiniband-diags version -V reports.
const Version = ibdiag.Version

// Command is one configured perfquery. The zero value runs on the real
// system.
type Command struct {
	Prog   string    // argv[0] as printed; "perfquery" when empty
	FS     sysfs.FS  // the sysfs and /dev tree; sysfs.Host when zero
	Config string    // the default config file; ibdiag.DefaultConfig when empty
	Pid    int       // printed in ibwarn lines; os.Getpid() when zero
	Posix  *bool     // POSIXLY_CORRECT; the environment when nil
	MAD    Transport // MAD I/O; UmadTransport when nil
}

// Main is the tool as goverbs runs it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return Command{Prog: prog}.Run(args, stdout, stderr)
}

// opts is perfquery's table followed by the common options it does not
// exclude ("DK"), in ibdiag_process_opts' order.
var opts = ibdiag.WithCommon([]ibdiag.Opt{
	{Name: "extended", Letter: 'x', Desc: "show extended port counters"},
	{Name: "xmtsl", Letter: 'X', Desc: "show Xmt SL port counters"},
	{Name: "rcvsl", Letter: 'S', Desc: "show Rcv SL port counters"},
	{Name: "xmtdisc", Letter: 'D', Desc: "show Xmt Discard Details"},
	{Name: "rcverr", Letter: 'E', Desc: "show Rcv Error Details"},
	{Name: "extended_speeds", Letter: 'T', Desc: "show port extended speeds counters"},
	{Name: "oprcvcounters", Letter: 1, Desc: "show Rcv Counters per Op code"},
	{Name: "flowctlcounters", Letter: 2, Desc: "show flow control counters"},
	{Name: "vloppackets", Letter: 3, Desc: "show packets received per Op code per VL"},
	{Name: "vlopdata", Letter: 4, Desc: "show data received per Op code per VL"},
	{Name: "vlxmitflowctlerrors", Letter: 5, Desc: "show flow control update errors per VL"},
	{Name: "vlxmitcounters", Letter: 6, Desc: "show ticks waiting to transmit counters per VL"},
	{Name: "swportvlcong", Letter: 7, Desc: "show sw port VL congestion"},
	{Name: "rcvcc", Letter: 8, Desc: "show Rcv congestion control counters"},
	{Name: "slrcvfecn", Letter: 9, Desc: "show SL Rcv FECN counters"},
	{Name: "slrcvbecn", Letter: 10, Desc: "show SL Rcv BECN counters"},
	{Name: "xmitcc", Letter: 11, Desc: "show Xmit congestion control counters"},
	{Name: "vlxmittimecc", Letter: 12, Desc: "show VL Xmit Time congestion control counters"},
	{Name: "smplctl", Letter: 'c', Desc: "show samples control"},
	{Name: "all_ports", Letter: 'a', Desc: "show aggregated counters"},
	{Name: "loop_ports", Letter: 'l', Desc: "iterate through each port"},
	{Name: "reset_after_read", Letter: 'r', Desc: "reset counters after read"},
	{Name: "Reset_only", Letter: 'R', Desc: "only reset counters"},
}, "DK")

// usage is perfquery's usage text (ibdiag_show_usage).
var usage = ibdiag.Usage{Args: usageArgs, Opts: opts, Examples: usageExamples}

const usageArgs = " [<lid|guid> [[port(s)] [reset_mask]]]"

var usageExamples = []string{
	"\t\t# read local port's performance counters",
	"32 1\t\t# read performance counters from lid 32, port 1",
	"-x 32 1\t# read extended performance counters from lid 32, port 1",
	"-a 32\t\t# read performance counters from lid 32, all ports",
	"-r 32 1\t# read performance counters and reset",
	"-x -r 32 1\t# read extended performance counters and reset",
	"-R 0x20 1\t# reset performance counters of port 1 only",
	"-x -R 0x20 1\t# reset extended performance counters of port 1 only",
	"-R -a 32\t# reset performance counters of all ports",
	"-R 32 2 0x0fff\t# reset only error counters of port 2",
	"-R 32 2 0xf000\t# reset only non-error counters of port 2",
	"-a 32 1-10\t# read performance counters from lid 32, port 1-10, aggregate output",
	"-l 32 1-10\t# read performance counters from lid 32, port 1-10, output each port",
	"-a 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, aggregate output",
	"-l 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, output each port",
}

// state is one run.
type state struct {
	cmd            Command
	stdout, stderr io.Writer
	u              *lib
	debug          int
	verbose        int
	ca             *string
	caPort         int
	timeout        int
	pkeyIdx        int

	extended, xmtSL, rcvSL, xmtDisc, rcvErr, extSpeeds, smplCtl bool
	longOnly                                                    byte // the first long-only option seen (1..12)
	allPorts, loopPorts, reset, resetOnly                       int
	port                                                        int
	ports                                                       []int
	pair                                                        caPair
	nextFD                                                      int
	closers                                                     []func() error
	pairSet                                                     bool
}

// Run runs perfquery with args (without the program name) and returns the
// exit status.
func (c Command) Run(args []string, stdout, stderr io.Writer) (status int) {
	if c.Prog == "" {
		c.Prog = "perfquery"
	}
	if c.FS == (sysfs.FS{}) {
		c.FS = sysfs.Host
	}
	if c.Config == "" {
		c.Config = ibdiag.DefaultConfig
	}
	if c.Pid == 0 {
		c.Pid = os.Getpid()
	}
	if c.MAD == nil {
		c.MAD = &UmadTransport{FS: c.FS}
	}
	posix := os.Getenv("POSIXLY_CORRECT") != ""
	if c.Posix != nil {
		posix = *c.Posix
	}
	defer ibdiag.Recover(&status)
	s := &state{cmd: c, stdout: stdout, stderr: stderr, u: &lib{Lib: &libumad.Lib{FS: c.FS, Stderr: stderr, PID: c.Pid}}}
	s.readConfig(c.Config)
	return s.main(args, posix)
}

// readConfig is read_ibdiag_config: CA, Port and timeout matter here.
func (s *state) readConfig(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, _ := strings.Cut(line, "=")
		if name == "" {
			continue
		}
		switch {
		case strings.HasPrefix(name, "CA"):
			v := val
			s.ca = &v
		case strings.HasPrefix(name, "Port"):
			v, _, _ := cstd.Strtoul(val, 0)
			s.caPort = int(int32(v))
		case strings.HasPrefix(name, "timeout"):
			v, _, _ := cstd.Strtoul(val, 0)
			s.timeout = int(int32(v))
		}
	}
}

func (s *state) usage() { usage.Exit(s.stderr, s.cmd.Prog) }

// exitf is IBEXIT: a message on stdout, exit -1.
func (s *state) exitf(fn, format string, args ...any) {
	ibdiag.Exitf(s.stdout, s.cmd.Prog, s.cmd.Pid, s.debug, fn, format, args...)
}

func (s *state) warn(fn, format string, args ...any) {
	fmt.Fprintf(s.stderr, "ibwarn: [%d] %s: %s\n", s.cmd.Pid, fn, fmt.Sprintf(format, args...))
}

func (s *state) main(args []string, posix bool) int {
	short, long := usage.Getopt()
	p := getopt.New(s.cmd.Prog, args, short, long, s.stderr, posix)
	for o := range p.All() {
		switch o.Val {
		case 'x':
			s.extended = true
		case 'X':
			s.xmtSL = true
		case 'S':
			s.rcvSL = true
		case 'D':
			s.xmtDisc = true
		case 'E':
			s.rcvErr = true
		case 'T':
			s.extSpeeds = true
		case 'c':
			s.smplCtl = true
		case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12:
			if s.longOnly == 0 || o.Val < s.longOnly {
				s.longOnly = o.Val
			}
		case 'a':
			s.allPorts++
			s.port = allPorts
		case 'l':
			s.loopPorts++
		case 'r':
			s.reset++
		case 'R':
			s.resetOnly++
		case 'z':
			s.readConfig(o.Arg)
		case 'h':
			s.usage()
		case 'V':
			ibdiag.WriteVersion(s.stderr, s.cmd.Prog)
			return 0
		case 'e':
		case 'v':
			s.verbose++
		case 'd':
			s.debug++
			s.u.Debug = s.debug - 1
		case 'C':
			v := o.Arg
			s.ca = &v
		case 'P':
			v, _, _ := cstd.Strtoul(o.Arg, 0)
			s.caPort = int(int32(v))
		case 'L', 'G':
			// The destination type: perfquery never reaches an address
			// argument on the hosts goverbs targets (see the package doc).
		case 't':
			v, end, erange := cstd.Strtol(o.Arg, 0)
			if erange || end != len(o.Arg) || v <= 0 || v > math.MaxInt32 {
				s.exitf("process_opt", "Invalid timeout \"%s\".  Timeout requires a positive integer value < %d.", o.Arg, math.MaxInt32)
			}
			s.timeout = int(v)
		case 's':
			// resolve_portid_str(..., IB_DEST_LID): a LID in 1..0xbfff.
			v, _, _ := cstd.Strtol(o.Arg, 0)
			if v <= 0 || v >= 0xc000 {
				s.exitf("process_opt", "cannot resolve SM destination port %s", o.Arg)
			}
		case 'y':
			_, end, erange := cstd.Strtoul(o.Arg, 0)
			if erange || end != len(o.Arg) {
				// The C tool asks getpass("M_Key: ") here.
				s.exitf("process_opt", "Bad M_Key")
			}
		case 'Y':
			v, msg := ibdiag.PKeyIndex(o.Arg)
			if msg != "" {
				s.exitf("process_opt", "%s", msg)
			}
			s.pkeyIdx = v
		default:
			s.usage()
		}
	}
	return s.run(p.Operands())
}

const allPorts = 0xff
