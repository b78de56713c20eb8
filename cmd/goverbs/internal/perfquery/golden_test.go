package perfquery

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

var update = flag.Bool("update", false, "rewrite the goldens from the real C perfquery (needs root, unshare, the lab's sid root)")

// goldenCases run against the fake trees (testdata/mktrees.sh); their
// goldens are the output of rdma-core 65's perfquery (Debian sid) on the
// same trees (-update). None reaches a MAD: on RoCE (roce) sid's libibumad
// finds no InfiniBand port to pair, without ib_umad (noumad) the ABI
// version is missing, on ib the device nodes are plain files and agent
// registration fails, and empty has no device. Those are exactly the
// outcomes on the lab's rxe (see the lab comparison in labdiff).
var goldenCases = []struct{ tree, args string }{
	{"roce", ""},
	{"roce", "-x"},
	{"roce", "-a"},
	{"roce", "-l"},
	{"roce", "-x -a"},
	{"roce", "-C rxe0 -P 1"},
	{"roce", "-C rxe0 -P 2"},
	{"roce", "-C foo"},
	{"roce", "-P 3"},
	{"roce", "0 1"},
	{"roce", "-r"},
	{"roce", "-R"},
	{"roce", "-X"},
	{"roce", "-d"},
	{"roce", "-d -d"},
	{"roce", "-d -d -d -C rxe0"},
	{"roce", "-h"},
	{"roce", "-V"},
	{"roce", "--foo"},
	{"roce", "-q"},
	{"roce", "1 5-2"},
	{"roce", "1 1-3"},
	{"roce", "-a 1 1,2,4"},
	{"roce", "-t 0"},
	{"roce", "-t 12x"},
	{"roce", "-t 100 -x"},
	{"roce", "-Y 65536"},
	{"roce", "-Y 3"},
	{"roce", "-s 0"},
	{"roce", "-s 5"},
	{"roce", "-y zz"},
	{"roce", "-z /nonexistent"},
	{"roce", "--Ca"},
	{"roce", "--vlopdata"},
	{"noumad", ""},
	{"noumad", "-d -d -C rxe0 -P 1"},
	{"ib", ""},
	{"ib", "-d"},
	{"ib", "-d -d"},
	{"ib", "-C mlx5_1"},
	{"ib", "-C mlx5_1 -P 2"},
	{"ib", "-P 1 -x"},
	{"ib", "-d -d -d -C mlx5_1 -P 1"},
	{"empty", ""},
	{"empty", "-d -d"},
}

// goldenName is a case's name: the tree, then the arguments with '_' for blanks and '%' for slashes.
func goldenName(tree, args string) string {
	if args == "" {
		return tree
	}
	return tree + "_" + strings.NewReplacer(" ", "_", "/", "%").Replace(args)
}

func TestGolden(t *testing.T) {
	golden.RequireC(t, *update, "perfquery")
	g := golden.Trees{Dir: "testdata", Prog: "perfquery", Update: *update, Fix: golden.NormalizeStdoutPid, Name: goldenName,
		Run: func(dir string, args []string, stdout, stderr io.Writer) int {
			cmd := Command{FS: sysfs.Under(dir), Config: "testdata/ibdiag.conf", Pid: golden.Pid, Posix: new(bool)}
			return cmd.Run(args, stdout, stderr)
		}}
	for _, c := range goldenCases {
		g.Case(t, c.tree, c.args)
	}
}
