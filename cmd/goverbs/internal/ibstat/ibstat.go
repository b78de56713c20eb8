// Package ibstat is goverbs' clone of infiniband-diags' ibstat (rdma-core
// 65): it prints the state of InfiniBand CAs and ports from sysfs, byte for
// byte like the C tool, with the same options, diagnostics and exit codes.
//
// The data model (CA, Port) is libibumad's umad_ca_t/umad_port_t; WriteCA and
// WritePort format it without any device, and Command reads it from a
// configurable sysfs tree, with each port's effective speed from libibverbs
// (Verbs).
package ibstat

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibdiag"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/libumad"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

// Version is the infiniband-diags version ibstat -V reports.
const Version = ibdiag.Version

// Command is one configured ibstat. The zero value reads the real system.
type Command struct {
	// Prog is argv[0] as diagnostics print it; "ibstat" when empty.
	Prog string
	// FS is the tree to read; sysfs.Host when zero.
	FS sysfs.FS
	// Config is the default configuration file whose existence ibstat
	// checks (it affects the errno text of fatal messages);
	// /etc/infiniband-diags/ibdiag.conf when empty.
	Config string
	// Pid is printed in "ibwarn: [pid]" and "ibpanic: [pid]" lines;
	// os.Getpid() when zero.
	Pid int
	// Posix stops option parsing at the first operand (POSIXLY_CORRECT);
	// when nil, the environment decides.
	Posix *bool
	// Verbs opens the CAs' verbs contexts for their ports' effective
	// speed; when nil, UverbsVerbs if FS is the host's tree, else
	// SysfsVerbs over FS.
	Verbs Verbs
}

// Main is the tool as goverbs runs it: ibstat on the real system, prog
// being argv[0] as diagnostics print it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return Command{Prog: prog}.Run(args, stdout, stderr)
}

// Run runs the command with args (without the program name), writing to
// stdout and stderr, and returns the exit status the C tool would have.
func (c Command) Run(args []string, stdout, stderr io.Writer) (status int) {
	if c.Prog == "" {
		c.Prog = "ibstat"
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
	posix := os.Getenv("POSIXLY_CORRECT") != ""
	if c.Posix != nil {
		posix = *c.Posix
	}
	defer ibdiag.Recover(&status)
	if c.Verbs == nil {
		if c.FS == sysfs.Host {
			c.Verbs = &UverbsVerbs{Stderr: stderr}
		} else {
			c.Verbs = &SysfsVerbs{FS: c.FS, Stderr: stderr}
		}
	}
	s := &state{cmd: c, stdout: stdout, stderr: stderr,
		u: &libumad.Lib{FS: c.FS, Stderr: stderr, PID: c.Pid}}
	s.readConfig(c.Config)
	return s.main(args, posix)
}

type state struct {
	cmd            Command
	stdout, stderr io.Writer
	u              *libumad.Lib
	debug          int
}

// readConfig mirrors read_ibdiag_config's effect that matters: the stat of
// the file, which leaves ENOENT in errno when it is missing. Nothing in the
// file changes what ibstat prints.
func (s *state) readConfig(path string) {
	if _, err := os.Stat(path); err != nil {
		s.u.SetErr(err)
	}
}

func (s *state) usage() { usage.Exit(s.stderr, s.cmd.Prog) }

// panicf is libibmad's IBPANIC from main: message, strerror(errno), exit -1.
func (s *state) panicf(format string, args ...any) {
	fmt.Fprintf(s.stderr, "ibpanic: [%d] main: %s: %s\n", s.cmd.Pid, fmt.Sprintf(format, args...), cstd.Strerror(s.u.Errno))
	panic(ibdiag.Exit(255))
}

// exitf is infiniband-diags' IBEXIT from fn: a message on stdout, exit -1.
func (s *state) exitf(fn, format string, args ...any) {
	ibdiag.Exitf(s.stdout, s.cmd.Prog, s.cmd.Pid, s.debug, fn, format, args...)
}

// debugf is infiniband-diags' DEBUG from fn: with -d, a line on stdout.
func (s *state) debugf(fn, format string, args ...any) {
	if s.debug > 0 {
		fmt.Fprintf(s.stdout, "ibdebug: [%d] %s: %s\n", s.cmd.Pid, fn, fmt.Sprintf(format, args...))
	}
}

func (s *state) main(args []string, posix bool) int {
	short, long := usage.Getopt()
	var listOnly, shortFmt, listPorts bool
	p := getopt.New(s.cmd.Prog, args, short, long, s.stderr, posix)
	for o := range p.All() {
		switch o.Val {
		case 'l':
			listOnly = true
		case 's':
			shortFmt = true
		case 'p':
			listPorts = true
		case 'z':
			s.readConfig(o.Arg)
		case 'Y':
			// The P_Key index of outgoing MADs: validated, unused by ibstat.
			if _, msg := ibdiag.PKeyIndex(o.Arg); msg != "" {
				s.exitf("process_opt", "%s", msg)
			}
		case 'h':
			s.usage()
		case 'V':
			ibdiag.WriteVersion(s.stderr, s.cmd.Prog)
			return 0
		case 'v':
			// ibverbose: ibstat prints nothing more.
		case 'd':
			s.debug++
			s.u.Debug = s.debug - 1
		default:
			s.usage()
		}
	}
	operands := p.Operands()
	devPort := -1
	if len(operands) > 1 {
		v, _, _ := cstd.Strtol(operands[1], 0)
		devPort = int(int32(v))
	}
	s.u.Trace("umad_init", "umad_init")
	names, err := s.u.DeviceList()
	if err != nil {
		s.panicf("can't list IB device names")
	}
	var sel []string
	if len(operands) > 0 {
		for _, n := range names {
			if n == operands[0] {
				sel = []string{n}
				break
			}
		}
		if sel == nil {
			s.panicf("'%s' IB device can't be found", operands[0])
		}
	} else {
		sel = names
	}
	if listPorts {
		for _, n := range sel {
			guids, err := s.u.PortGUIDs(n)
			if err != nil {
				s.panicf("can't list ports")
			}
			for _, g := range guids {
				if g != 0 {
					fmt.Fprintf(s.stdout, "0x%016x\n", g)
				}
			}
		}
		return 0
	}
	for _, n := range sel {
		if listOnly {
			fmt.Fprintf(s.stdout, "%s\n", n)
			continue
		}
		if err := s.caStat(n, devPort, shortFmt); err != nil {
			s.u.Warn("main", "stat of IB device '%s' failed", n)
		}
	}
	return 0
}

// caStat is ibstat's ca_stat.
func (s *state) caStat(name string, port int, noPorts bool) error {
	ca, err := getCA(s.u, name)
	if err != nil {
		// A device that is no RDMA endpoint (its port has neither GID 0
		// nor the CM capability) is passed over.
		check := port
		if port == -1 {
			check = 1
		}
		if !portHasGID(s.u, name, check) && !portHasCMCap(s.u, name, check) {
			s.debugf("ca_stat", "The device %s is not RDMA endpoint device", name)
			return nil
		}
		return err
	}
	if ca.NodeType == 0 {
		return nil
	}
	var speed func(port int) (uint64, error)
	if ctx := s.cmd.Verbs.Open(name); ctx != nil {
		defer ctx.Close()
		speed = ctx.PortSpeed
	}
	if !noPorts && port >= 0 {
		if port > ca.NumPorts || ca.Ports[port] == nil {
			s.u.Warn("ca_stat", "%s: '%s' has no port number %d - max (%d)", NodeTypeName(ca.NodeType), name, port, ca.NumPorts)
			return fmt.Errorf("stat port %d of %s: %w", port, name, unix.EINVAL)
		}
		fmt.Fprintf(s.stdout, "%s: '%s'\n", NodeTypeName(ca.NodeType), ca.Name)
		writePort(s.stdout, ca.Ports[port], true, speed)
		return nil
	}
	if noPorts {
		WriteCA(s.stdout, ca)
		return nil
	}
	WriteCA(s.stdout, ca)
	for _, p := range ca.Ports[:ca.NumPorts+1] {
		if p != nil {
			writePort(s.stdout, p, false, speed)
		}
	}
	return nil
}
