// Package ibdiag is what infiniband-diags' tools share (ibdiag_common.c of
// rdma-core 65): the option table and the usage text ibdiag_show_usage
// prints from it, with pretty_print's wrapping. ibstat and perfquery use it.
package ibdiag

import (
	"fmt"
	"io"
	"strings"

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
