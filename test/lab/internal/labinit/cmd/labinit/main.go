// Command labinit is the lab VM's /init. It is built by package lab
// (CGO_ENABLED=0) and packed into the initramfs; it is not meant to be run
// anywhere else.
package main

import (
	"fmt"
	"os"

	"github.com/goverbs/goverbs/test/lab/internal/labinit"
)

func main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "labinit: this is the lab VM's init program; run it through test/lab")
		os.Exit(2)
	}
	labinit.Main()
}
