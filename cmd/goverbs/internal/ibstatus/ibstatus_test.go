package ibstatus

import (
	"flag"
	"io"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

var update = flag.Bool("update", false, "rewrite the goldens from the real ibstatus script (needs root, unshare, infiniband-diags)")

const trees = "../testdata"

var cases = []struct{ tree, args string }{
	{"rxe", ""},
	{"rxe", "rxe0"},
	{"rxe", "rxe0:1"},
	{"rxe", "rxe0:2"},
	{"rxe", "rxe0:1:1"},
	{"rxe", "rxe0 rxe0:1"},
	{"rxe", "foo"},
	{"rxe", "-h"},
	{"rxe", "-x"},
	{"mlx5", ""},
	{"mlx5", "mlx5_1:2"},
	{"edge", ""},
	{"edge", "badport"},
	{"edge", "nopkeys:1"},
	{"empty", ""},
	{"empty", "rxe0"},
}

func caseName(tree, args string) string { return golden.CaseName(tree, args, ":", "-") }

// TestGolden runs ibstatus and the real script (goldens made with -update inside a private mount namespace
// where the tree is /sys/class) on the same fake trees.
func TestGolden(t *testing.T) {
	golden.RequireC(t, *update, "ibstatus")
	g := golden.Trees{Dir: trees, Prog: "ibstatus", Update: *update, Name: caseName,
		Run: func(dir string, args []string, stdout, stderr io.Writer) int {
			return Command{FS: sysfs.Under(dir)}.Run("ibstatus", args, stdout, stderr)
		}}
	for _, c := range cases {
		g.Case(t, c.tree, c.args)
	}
}
