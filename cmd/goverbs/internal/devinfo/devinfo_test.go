package devinfo

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

var update = flag.Bool("update", false, "rewrite the goldens from the real C ibv_devinfo (needs root, unshare, ibverbs-utils)")

const trees = "../testdata"

// sysfsCases need only the device list: the C tool cannot open the fake
// devices either, so both print "Failed to open device" where a query would
// start.
var sysfsCases = []struct {
	tree string
	args string
}{
	{"rxe", ""},
	{"rxe", "-l"},
	{"rxe", "--list"},
	{"rxe", "--li"},
	{"rxe", "-v -l"},
	{"rxe", "-l -x"},
	{"rxe", "-x -l"},
	{"rxe", "-i 0 -l"},
	{"rxe", "-l -i 0"},
	{"rxe", "-d foo"},
	{"rxe", "-d foo -d rxe0"},
	{"rxe", "--ib-dev=foo"},
	{"rxe", "-drxe0 -i 3"},
	{"rxe", "-i 0"},
	{"rxe", "-i abc"},
	{"rxe", "-i -1"},
	{"rxe", "-i 4294967296"},
	{"rxe", "--ib-port=0x0"},
	{"rxe", "-x"},
	{"rxe", "-:"},
	{"rxe", "--ib"},
	{"rxe", "--ib=3"},
	{"rxe", "--ib-dev"},
	{"rxe", "-d"},
	{"rxe", "--list=1"},
	{"rxe", "--bogus"},
	{"rxe", "-h"},
	{"rxe", "extra operand"},
	{"rxe", "-- -l"},
	{"mlx5", "-l"},
	{"mlx5", ""},
	{"mlx5", "-d mlx5_1"},
	{"empty", ""},
	{"empty", "-l"},
	{"empty", "-d rxe0"},
	{"verbs_badabi", "-l"},
	{"verbs_edge", "-l"},
	{"verbs_edge", "-d rxe_nodev"},
}

func TestSysfsGolden(t *testing.T) {
	golden.RequireC(t, *update, "ibv_devinfo")
	g := golden.Trees{Dir: trees, Prog: "ibv_devinfo", Update: *update,
		Run: func(dir string, args []string, stdout, stderr io.Writer) int {
			cmd := Command{Source: SysfsSource{FS: sysfs.Under(dir), Stderr: stderr}, Posix: new(bool)}
			return cmd.Run(args, stdout, stderr)
		}}
	for _, c := range sysfsCases {
		g.Case(t, c.tree, c.args)
	}
}

func TestInetNtop6(t *testing.T) {
	// Expected strings are glibc 2.36 inet_ntop output.
	tests := map[string]string{
		"00000000000000000000ffff0ae90001": "::ffff:10.233.0.1",
		"fe800000000000000042acfffe110002": "fe80::42:acff:fe11:2",
		"00000000000000000000000001020304": "::1.2.3.4",
		"00000000000000000000000000000001": "::1",
		"00000000000000000000000000000000": "::",
		"0001000000000000000000000000ffff": "1::ffff",
		"00000000000000000000fffe0a000001": "::fffe:a00:1",
		"00010000000100000000000000010000": "1:0:1::1:0",
		"20010db8000000010000000000000001": "2001:db8:0:1::1",
		"0000000000000000000000000000ffff": "::ffff",
		"000000000000ffff0000000001020304": "::ffff:0:0:102:304",
		"00010002000300040005000600070008": "1:2:3:4:5:6:7:8",
		"00010000000300000000000600000000": "1:0:3::6:0:0",
	}
	for h, want := range tests {
		var a [16]byte
		for i := range a {
			var b byte
			for _, c := range h[2*i : 2*i+2] {
				b = b<<4 | byte(strings.IndexRune("0123456789abcdef", c))
			}
			a[i] = b
		}
		if got := InetNtop6(a); got != want {
			t.Errorf("InetNtop6(%s) = %q, want %q", h, got, want)
		}
	}
}
