package ibstat

import (
	"bytes"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

var update = flag.Bool("update", false, "rewrite the goldens from the real C ibstat (needs root, unshare, infiniband-diags)")

const trees = "../testdata"

// cases are run against both the C tool (to make goldens) and ours.
var cases = []struct {
	tree string
	args string
}{
	{"rxe", ""},
	{"rxe", "-s"},
	{"rxe", "-p"},
	{"rxe", "-l"},
	{"rxe", "rxe0"},
	{"rxe", "rxe0 1"},
	{"rxe", "rxe0 2"},
	{"rxe", "rxe0 0"},
	{"rxe", "rxe0 abc"},
	{"rxe", "rxe0 0x1"},
	{"rxe", "rxe0 4294967297"},
	{"rxe", "-- rxe0 -1"},
	{"rxe", "rxe0 1 extra"},
	{"rxe", "foo"},
	{"rxe", "-l rxe0"},
	{"rxe", "-p rxe0"},
	{"rxe", "-s rxe0 1"},
	{"rxe", "-lp"},
	{"rxe", "--list_of_cas --short --port_list"},
	{"rxe", "--l"},
	{"rxe", "--sh rxe0"},
	{"rxe", "-v -d rxe0"},
	{"rxe", "-dd"},
	{"rxe", "-d -d -p"},
	{"rxe", "-dd rxe0 2"},
	{"rxe", "-dd foo"},
	{"rxe", "-h"},
	{"rxe", "--help=1"},
	{"rxe", "-V"},
	{"rxe", "--version"},
	{"rxe", "-x"},
	{"rxe", "--ver"},
	{"rxe", "--bogus"},
	{"rxe", "-z"},
	{"rxe", "-z /nonexistent/ibdiag.conf rxe0 9"},
	{"rxe", "-C rxe0"},
	{"rxe", "-P 1"},
	{"rxe", "-e"},
	{"rxe", "-Y 5 rxe0"},
	{"rxe", "--pkey-idx=0xffff -s"},
	{"rxe", "-Y abc"},
	{"rxe", "-Y 65536"},
	{"rxe", "--pkey-idx=-1"},
	{"rxe", "-Y 1x"},
	{"rxe", "-d -Y 99999999999999999999"},
	{"rxe", "-Y"},
	{"mlx5", ""},
	{"mlx5", "-p"},
	{"mlx5", "-l"},
	{"mlx5", "-s"},
	{"mlx5", "mlx5_1 2"},
	{"mlx5", "mlx5_0 3"},
	{"edge", "-l"},
	{"edge", "-p"},
	{"edge", ""},
	{"edge", "rxe_b"},
	{"edge", "rxe_b 3"},
	{"edge", "-p rxe_b"},
	{"edge", "rxe_edge_device_long_name"},
	{"edge", "rxe_edge_device_long_name 0"},
	{"edge", "nopkeys"},
	{"edge", "badport"},
	{"edge", "iwarp0"},
	{"edge", "-d"},
	{"edge", "badport 10"},
	{"edge", "-d -- badport -3"},
	{"edge", "nopkeys 2"},
	{"edge", "cmonly"},
	{"edge", "cmonly 2"},
	{"edge", "-s"},
	{"empty", ""},
	{"empty", "-p"},
	{"empty", "rxe0"},
}

func TestGolden(t *testing.T) {
	golden.RequireC(t, *update, "ibstat")
	g := golden.Trees{Dir: trees, Prog: "ibstat", Update: *update, Fix: golden.NormalizeStdoutPid,
		Run: func(dir string, args []string, stdout, stderr io.Writer) int {
			return ibstat(sysfs.Under(dir), args, stdout, stderr)
		}}
	for _, c := range cases {
		g.Case(t, c.tree, c.args)
	}
}

// ibstat runs the tool on the tree fs as the golden tests do.
func ibstat(fs sysfs.FS, args []string, stdout, stderr io.Writer) int {
	return Command{FS: fs, Config: "testdata/ibdiag.conf", Pid: golden.Pid, Posix: new(bool)}.Run(args, stdout, stderr)
}

func TestWritePort(t *testing.T) {
	p := &Port{PortNum: 1, State: 4, PhysState: 5, Rate: 2, BaseLID: 0x80000000, CapMask: 1, PortGUID: 0x1, LinkLayer: "IB"}
	var b bytes.Buffer
	WritePort(&b, p, true)
	want := "Port 1:\nState: Active\nPhysical state: LinkUp\nRate: 2.5\nBase lid: -2147483648\nLMC: 0\nSM lid: 0\nCapability mask: 0x00000001\nPort GUID: 0x0000000000000001\nLink layer: IB\n"
	if b.String() != want {
		t.Fatalf("got %q want %q", b.String(), want)
	}
}

// The goldens captured by the C ibstat in the lab VM (testdata/lab), against
// the sysfs tree captured in the same boot.
func TestLabCapture(t *testing.T) {
	lab := filepath.Join(trees, "lab")
	for name, args := range map[string]string{
		"ibstat": "", "ibstat_-s": "-s", "ibstat_-p": "-p", "ibstat_-l": "-l", "ibstat_rxe0_1": "rxe0 1",
		"ibstat_rxe0_2": "rxe0 2", "ibstat_foo": "foo", "ibstat_-dd_rxe0_2": "-dd rxe0 2", "ibstat_nonroot": "",
	} {
		t.Run(name, func(t *testing.T) {
			golden.CheckRun(t, filepath.Join(lab, "golden", name+".golden"), func(stdout, stderr io.Writer) int {
				return ibstat(sysfs.Under(filepath.Join(lab, "tree")), strings.Fields(args), stdout, stderr)
			})
		})
	}
}
