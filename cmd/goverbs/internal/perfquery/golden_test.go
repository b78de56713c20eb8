package perfquery

import (
	"bytes"
	"flag"
	"path/filepath"
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

func goldenName(tree, args string) string {
	n := tree
	if args != "" {
		n += "_" + strings.NewReplacer(" ", "_", "/", "%").Replace(args)
	}
	return filepath.Join("testdata", "golden", n+".golden")
}

func TestGolden(t *testing.T) {
	golden.RequireC(t, *update, "perfquery")
	for _, c := range goldenCases {
		file := goldenName(c.tree, c.args)
		t.Run(strings.TrimSuffix(filepath.Base(file), ".golden"), func(t *testing.T) {
			args := strings.Fields(c.args)
			tree := filepath.Join("testdata", c.tree)
			if *update {
				golden.Regenerate(t, tree, "perfquery", args, file, golden.NormalizeStdoutPid)
			}
			var out, errb bytes.Buffer
			cmd := Command{FS: sysfs.Under(tree), Config: "testdata/ibdiag.conf", Pid: golden.Pid, Posix: new(bool)}
			st := cmd.Run(args, &out, &errb)
			golden.Check(t, file, golden.Result{Stdout: out.String(), Stderr: errb.String(), Status: st})
		})
	}
}
