// Package ibdiag is what infiniband-diags' tools share (ibdiag_common.c of
// rdma-core 65): the option table and the usage text ibdiag_show_usage
// prints from it, with pretty_print's wrapping, the common options, IBEXIT and the exit() calls that end a
// run. ibstat and perfquery use it.
package ibdiag

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
)

// Opt is one option (struct ibdiag_opt): a long name, a letter (a value
// outside printable ASCII marks a long-only option), whether it takes an
// argument, the argument's name in the usage text and its description.
type Opt struct {
	Name    string
	Letter  byte
	HasArg  bool
	ArgTmpl string
	Desc    string
}

// DefaultConfig is the configuration file the common --config option names.
const DefaultConfig = "/etc/infiniband-diags/ibdiag.conf"

// commonOpts is ibdiag_common.c's table of the options every tool has unless it excludes them, in its order.
// Direct (-D) and show_keys (-K), which every clone excludes, are left out.
var commonOpts = []Opt{
	{Name: "config", Letter: 'z', HasArg: true, ArgTmpl: "<config>", Desc: "use config file, default: " + DefaultConfig},
	{Name: "Ca", Letter: 'C', HasArg: true, ArgTmpl: "<ca>", Desc: "Ca name to use"},
	{Name: "Port", Letter: 'P', HasArg: true, ArgTmpl: "<port>", Desc: "Ca port number to use"},
	{Name: "Lid", Letter: 'L', Desc: "use LID address argument"},
	{Name: "Guid", Letter: 'G', Desc: "use GUID address argument"},
	{Name: "timeout", Letter: 't', HasArg: true, ArgTmpl: "<ms>", Desc: "timeout in ms"},
	{Name: "sm_port", Letter: 's', HasArg: true, ArgTmpl: "<lid>", Desc: "SM port lid"},
	{Name: "m_key", Letter: 'y', HasArg: true, ArgTmpl: "<key>", Desc: "M_Key to use in request"},
	{Name: "pkey-idx", Letter: 'Y', HasArg: true, ArgTmpl: "<idx>", Desc: "P_Key table index for outgoing SA/GMP MADs (default 0)"},
	{Name: "errors", Letter: 'e', Desc: "show send and receive errors"},
	{Name: "verbose", Letter: 'v', Desc: "increase verbosity level"},
	{Name: "debug", Letter: 'd', Desc: "raise debug level"},
	{Name: "help", Letter: 'h', Desc: "help message"},
	{Name: "version", Letter: 'V', Desc: "show version"},
}

// WithCommon is a tool's option table as ibdiag_process_opts builds it: the tool's own options, then the
// common ones whose letters are not in exclude (the tool's exclude_common_str; it must name D and K).
func WithCommon(own []Opt, exclude string) []Opt {
	opts := append([]Opt(nil), own...)
	for _, o := range commonOpts {
		if strings.IndexByte(exclude, o.Letter) < 0 {
			opts = append(opts, o)
		}
	}
	return opts
}

// Version is the infiniband-diags release the clones report (-V).
const Version = "65.0"

// WriteVersion is the common option -V: "PROG BUILD VERSION: 65.0" on w.
func WriteVersion(w io.Writer, prog string) {
	fmt.Fprintf(w, "%s BUILD VERSION: %s\n", prog, Version)
}

// PKeyIndex checks the argument of the common option -Y (--pkey-idx) as process_opt does: an integer in
// [0, 65535]. msg is IBEXIT's message when it is not one.
func PKeyIndex(arg string) (idx int, msg string) {
	v, end, erange := cstd.Strtol(arg, 0)
	if erange || end == 0 || end != len(arg) || v < 0 || v > math.MaxUint16 {
		return 0, fmt.Sprintf("Invalid P_Key index \"%s\".  Requires an integer in the range [0, %d].", arg, math.MaxUint16)
	}
	return int(v), ""
}

// Exit is the status of one of the C tool's exit() calls: a tool panics with it to unwind to its Run, which
// defers Recover.
type Exit int

// Recover, deferred by a tool's Run, stores the status of an Exit panic in *status; any other panic goes on.
func Recover(status *int) {
	if r := recover(); r != nil {
		e, ok := r.(Exit)
		if !ok {
			panic(r)
		}
		*status = int(e)
	}
}

// Exitf is IBEXIT from fn: "PROG: iberror: failed: MSG" on w (with debug > 0 the pid and fn too), then
// exit(-1).
func Exitf(w io.Writer, prog string, pid, debug int, fn, format string, args ...any) {
	if debug > 0 {
		fmt.Fprintf(w, "%s: iberror: [pid %d] %s: failed: %s\n", prog, pid, fn, fmt.Sprintf(format, args...))
	} else {
		fmt.Fprintf(w, "%s: iberror: failed: %s\n", prog, fmt.Sprintf(format, args...))
	}
	panic(Exit(255))
}

// Usage is a tool's usage text: "Usage: PROG [options] Args", the options,
// then "PROG Example" lines.
type Usage struct {
	Args     string
	Opts     []Opt
	Examples []string
}

// Write writes the usage text as ibdiag_show_usage does.
func (u Usage) Write(w io.Writer, prog string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nUsage: %s [options] %s\n\n", prog, u.Args)
	b.WriteString("Options:\n")
	for _, o := range u.Opts {
		n, _ := fmt.Fprintf(&b, "  --%s", o.Name)
		if o.Letter >= 0x20 && o.Letter < 0x7f {
			m, _ := fmt.Fprintf(&b, ", -%c", o.Letter)
			n += m
		}
		if o.HasArg {
			m, _ := fmt.Fprintf(&b, " %s", o.ArgTmpl)
			n += m
		}
		if o.Desc != "" {
			m, _ := fmt.Fprintf(&b, "%*s  ", max(24-n, 0), "")
			n += m
			PrettyPrint(&b, n, 74, o.Desc)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nExamples:\n")
	for _, e := range u.Examples {
		fmt.Fprintf(&b, "  %s %s\n", prog, e)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// Exit writes the usage text to w and exits 2, as ibdiag_show_usage does.
func (u Usage) Exit(w io.Writer, prog string) {
	u.Write(w, prog)
	panic(Exit(2))
}

// PrettyPrint wraps str to width columns, continuing lines at column
// start, byte for byte like infiniband-diags' pretty_print.
func PrettyPrint(b *strings.Builder, start, width int, str string) {
	n := width - start
	for {
		str = strings.TrimLeft(str, " \t\n\v\f\r")
		// p walks the spaces of str; e is one past the last accepted space.
		p := 0
		var e int
		for {
			e = p + 1
			i := strings.IndexByte(str[min(e, len(str)):], ' ')
			if i < 0 {
				p = -1
				break
			}
			p = e + i
			if p >= n {
				break
			}
		}
		if p < 0 {
			b.WriteString(str)
			return
		}
		if e == 1 {
			e = p
		}
		fmt.Fprintf(b, "%s\n%*s", str[:e], start, "")
		str = str[e:]
	}
}

// Getopt returns the short option string and the long options of u's
// table, as ibdiag_process_opts builds them for getopt_long.
func (u Usage) Getopt() (short string, long []getopt.LongOption) {
	long = make([]getopt.LongOption, len(u.Opts))
	for i, o := range u.Opts {
		ha := getopt.NoArgument
		short += string(rune(o.Letter))
		if o.HasArg {
			ha = getopt.RequiredArgument
			short += ":"
		}
		long[i] = getopt.LongOption{Name: o.Name, HasArg: ha, Val: o.Letter}
	}
	return short, long
}
