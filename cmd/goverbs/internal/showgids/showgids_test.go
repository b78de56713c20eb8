package showgids

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the goldens by running mlnx-tools' show_gids (from the mirror) with bash (needs root, unshare)")

const trees = "../testdata"

// Mirror and Commit name the reference script: mlnx-tools' sbin/show_gids.
const (
	Mirror = "/work/.mirror/Mellanox+mlnx-tools/repo"
	Commit = "8fbfd9cfff34e2d32f1dd5a115c42eb8bd3b66c8"
)

// scriptName is $0 in the goldens: the script runs as "bash show_gids" from
// a directory holding only it.
const goldenScript = "show_gids"

var cases = []struct {
	tree string
	args []string
}{
	{"roce", nil},
	{"roce", []string{""}},
	{"roce", []string{"mlx5_0"}},
	{"roce", []string{"mlx5_1 nports"}},
	{"roce", []string{" mlx5_1\tmlx5_0\n"}},
	{"roce", []string{"mlx5_1", "mlx5_0"}},
	{"roce", []string{"odd"}},
	{"roce", []string{"nosuch"}},
	{"roce", []string{"-h"}},
	{"roce", []string{" "}},
	{"roce", []string{"it's"}},
	{"roce", []string{"a'b$"}},
	{"roce", []string{"x:y\x01\xe9"}},
	{"roce", []string{"../infiniband/mlx5_1"}},
	{"rxe", nil},
	{"mlx5", nil},
	{"edge", nil},
	{"empty", nil},
}

func caseName(tree string, args []string) string {
	n := tree
	for _, a := range args {
		n += "_" + fmt.Sprintf("%x", a)
		if strings.Trim(a, "abcdefghijklmnopqrstuvwxyz0123456789_-") == "" && a != "" {
			n = n[:len(n)-2*len(a)] + a
		}
	}
	return n
}

// runScript runs the reference script with bash, in a private mount
// namespace where the tree's sys/class is /sys/class.
func runScript(t *testing.T, tree string, args []string) golden.Result {
	t.Helper()
	src, err := exec.Command("git", "-C", Mirror, "show", Commit+":sbin/show_gids").Output()
	if err != nil {
		t.Fatalf("-update: the reference script: git show %s:sbin/show_gids in %s: %v", Commit, Mirror, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, goldenScript), src, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(tree)
	if err != nil {
		t.Fatal(err)
	}
	const sh = `mount --bind "$1/sys/class" /sys/class || exit 125; cd "$2" || exit 125; shift 2; exec bash "$@"`
	cmd := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", sh, "sh", abs, dir, goldenScript}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	r, err := golden.Exec(cmd)
	if err == nil && r.Status == 125 {
		err = errors.New("exit status 125")
	}
	if err != nil {
		t.Fatalf("run show_gids in a mount namespace: %v: %s", err, r.Stderr)
	}
	return r
}

// TestGolden runs show_gids and compares with the script's output on the
// same fake trees (goldens made with -update).
func TestGolden(t *testing.T) {
	regen := *update
	if regen {
		if os.Geteuid() != 0 {
			t.Fatal("-update: not root (a mount namespace is needed)")
		}
		if _, err := os.Stat(Mirror); err != nil {
			t.Logf("-update: no mlnx-tools mirror at %s: not regenerating, comparing with the checked-in goldens", Mirror)
			regen = false
		}
	}
	for _, c := range cases {
		name := caseName(c.tree, c.args)
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("testdata", "golden", name+".golden")
			tree := filepath.Join(trees, c.tree)
			if regen {
				if err := golden.Write(file, runScript(t, tree, c.args)); err != nil {
					t.Fatal(err)
				}
			}
			golden.CheckRun(t, file, func(stdout, stderr io.Writer) int {
				return Command{Class: filepath.Join(tree, "sys", "class"), Script: goldenScript}.Run(c.args, stdout, stderr)
			})
		})
	}
}
