// Command gengolden writes providers/mlx5/internal/hw/testdata/golden.txt: the exact bytes of every WQE shape, receive WQE,
// CQE case and CQ doorbell the mlx5 provider produces or consumes, as rdma-core's mlx5dv.h helpers build them.
// Run it through `go generate ./providers/mlx5/internal/hw`; it needs gcc and mlx5dv.h (libibverbs-dev).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/goverbs/goverbs/providers/mlx5/internal/cmd/gengolden/golden"
)

func main() {
	out := flag.String("o", "testdata/golden.txt", "output file")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	b, err := golden.Generate()
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
