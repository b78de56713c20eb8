package pingpong

import (
	"fmt"
	"io"
)

// transports maps "goverbs pingpong TRANSPORT" to the C program it runs and
// the name that program reports as argv[0].
var transports = map[string]struct {
	prog string
	main func(prog string, args []string, stdout, stderr io.Writer) int
}{
	"rc":   {"ibv_rc_pingpong", MainRC},
	"uc":   {"ibv_uc_pingpong", MainUC},
	"ud":   {"ibv_ud_pingpong", MainUD},
	"srq":  {"ibv_srq_pingpong", MainSRQ},
	"xsrq": {"ibv_xsrq_pingpong", MainXSRQ},
}

// Main runs "goverbs pingpong TRANSPORT [options] [host]": args[0] picks the
// C program (rc, uc, ud, srq, xsrq), which then runs under its C name. prog
// is unused: the programs print their own names.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if t, ok := transports[args[0]]; ok {
			return t.main(t.prog, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "usage: goverbs pingpong rc|uc|ud|srq|xsrq [options] [host]\n")
	return 1
}
