package ibstat

import "github.com/goverbs/goverbs/cmd/goverbs/internal/ibdiag"

// usage is ibstat's usage text: its options, then the common ones it does
// not exclude ("CDeGKLPsty"), in infiniband-diags' order.
var usage = ibdiag.Usage{
	Args: "<ca_name> [portnum]",
	Opts: []ibdiag.Opt{
		{Name: "list_of_cas", Letter: 'l', Desc: "list all IB devices"},
		{Name: "short", Letter: 's', Desc: "short output"},
		{Name: "port_list", Letter: 'p', Desc: "show port list"},
		{Name: "config", Letter: 'z', HasArg: true, ArgTmpl: "<config>", Desc: "use config file, default: " + ibdiag.DefaultConfig},
		{Name: "pkey-idx", Letter: 'Y', HasArg: true, ArgTmpl: "<idx>", Desc: "P_Key table index for outgoing SA/GMP MADs (default 0)"},
		{Name: "verbose", Letter: 'v', Desc: "increase verbosity level"},
		{Name: "debug", Letter: 'd', Desc: "raise debug level"},
		{Name: "help", Letter: 'h', Desc: "help message"},
		{Name: "version", Letter: 'V', Desc: "show version"},
	},
	Examples: []string{
		"-l       # list all IB devices",
		"mthca0 2 # stat port 2 of 'mthca0'",
	},
}
