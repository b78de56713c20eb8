// Command perftestsrc builds perftest's ib_* benchmarks from a checkout of its source (package perftestsrc) for
// the lab's on-demand pairing with goverbs:
//
//	go run ./test/perftestsrc/cmd/perftestsrc -src ~/src/perftest [-out DIR]
//	GOVERBS_PERFTEST_BIN=DIR go run ./test/lab/cmd/labsuite -kernels all -run TestLabPerftestFromSource ./cmd/goverbs/internal/interop
//
// -out defaults to the lab cache's perftest/VERSION (it must be a directory the lab VM sees: the host's root
// is visible in it read-only). It prints the directory.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goverbs/goverbs/test/lab"
	"github.com/goverbs/goverbs/test/perftestsrc"
)

func main() {
	src := flag.String("src", "", "a checkout of github.com/linux-rdma/perftest")
	out := flag.String("out", "", "where the binaries go (default: the lab cache's perftest/VERSION)")
	flag.Parse()
	if *src == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: perftestsrc -src PERFTEST_CHECKOUT [-out DIR]")
		os.Exit(2)
	}
	dir := *out
	if dir == "" {
		v, err := perftestsrc.Version(*src)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cache, err := lab.CacheDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		dir = filepath.Join(cache, "perftest", v)
	}
	if _, err := perftestsrc.Build(context.Background(), *src, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
