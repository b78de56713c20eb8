package ibstat

import (
	"fmt"
	"io"
	"strings"
)

// diagOpt is one option of infiniband-diags' common option machinery
// (struct ibdiag_opt).
type diagOpt struct {
	name    string
	letter  byte
	hasArg  bool
	argTmpl string
	desc    string
}

// ibstatOpts is ibstat's option table: its own options, then the common
// ones it does not exclude ("CDeGKLPsty"), in infiniband-diags' order.
var ibstatOpts = []diagOpt{
	{"list_of_cas", 'l', false, "", "list all IB devices"},
	{"short", 's', false, "", "short output"},
	{"port_list", 'p', false, "", "show port list"},
	{"config", 'z', true, "<config>", "use config file, default: " + defaultConfig},
	{"pkey-idx", 'Y', true, "<idx>", "P_Key table index for outgoing SA/GMP MADs (default 0)"},
	{"verbose", 'v', false, "", "increase verbosity level"},
	{"debug", 'd', false, "", "raise debug level"},
	{"help", 'h', false, "", "help message"},
	{"version", 'V', false, "", "show version"},
}

const defaultConfig = "/etc/infiniband-diags/ibdiag.conf"

var usageArgs = "<ca_name> [portnum]"

var usageExamples = []string{
	"-l       # list all IB devices",
	"mthca0 2 # stat port 2 of 'mthca0'",
}

// prettyPrint wraps str to width columns, continuing lines at column start,
// byte for byte like infiniband-diags' pretty_print.
func prettyPrint(b *strings.Builder, start, width int, str string) {
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

// writeUsage writes infiniband-diags' usage text (ibdiag_show_usage).
func writeUsage(w io.Writer, prog string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nUsage: %s [options] %s\n\n", prog, usageArgs)
	b.WriteString("Options:\n")
	for _, o := range ibstatOpts {
		n, _ := fmt.Fprintf(&b, "  --%s", o.name)
		m, _ := fmt.Fprintf(&b, ", -%c", o.letter)
		n += m
		if o.hasArg {
			m, _ = fmt.Fprintf(&b, " %s", o.argTmpl)
			n += m
		}
		if o.desc != "" {
			m, _ = fmt.Fprintf(&b, "%*s  ", max(24-n, 0), "")
			n += m
			prettyPrint(&b, n, 74, o.desc)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nExamples:\n")
	for _, e := range usageExamples {
		fmt.Fprintf(&b, "  %s %s\n", prog, e)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}
