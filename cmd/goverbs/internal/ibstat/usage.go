package ibstat

import "github.com/goverbs/goverbs/cmd/goverbs/internal/ibdiag"

// usage is ibstat's usage text: its options, then the common ones it does
// not exclude ("CDeGKLPsty"), in infiniband-diags' order.
var usage = ibdiag.Usage{
	Args: "<ca_name> [portnum]",
	Opts: ibdiag.WithCommon([]ibdiag.Opt{
		{Name: "list_of_cas", Letter: 'l', Desc: "list all IB devices"},
		{Name: "short", Letter: 's', Desc: "short output"},
		{Name: "port_list", Letter: 'p', Desc: "show port list"},
	}, "CDeGKLPsty"),
	Examples: []string{
		"-l       # list all IB devices",
		"mthca0 2 # stat port 2 of 'mthca0'",
	},
}
