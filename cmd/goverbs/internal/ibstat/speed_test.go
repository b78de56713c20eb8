package ibstat

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

// fakeVerbs opens every device, whose ports answer ibv_query_port_speed
// from speeds (EOPNOTSUPP for the others); open false opens none.
type fakeVerbs struct {
	open   bool
	speeds map[int]uint64
}

func (f fakeVerbs) Open(string) VerbsContext {
	if !f.open {
		return nil
	}
	return f
}

func (f fakeVerbs) PortSpeed(port int) (uint64, error) {
	if v, ok := f.speeds[port]; ok {
		return v, nil
	}
	return 0, unix.EOPNOTSUPP
}

func (f fakeVerbs) Close() error { return nil }

// speedCases make the C ibstat print effective speeds: "go test -update"
// runs it with devinfo's fakeverbs library (testdata/fakeverbs there), which
// opens the fake devices and answers ibv_query_port_speed.
var speedCases = []struct {
	name  string
	args  string
	verbs fakeVerbs
}{
	{"speed", "", fakeVerbs{true, map[int]uint64{1: 250, 2: 1234567}}},
	{"speed_port", "mlx5_1 2", fakeVerbs{true, map[int]uint64{2: 4}}},
	{"speed_some", "mlx5_0", fakeVerbs{true, map[int]uint64{2: 0}}},
	{"speed_none", "-s", fakeVerbs{true, nil}},
	{"speed_badport", "mlx5_0 3", fakeVerbs{true, map[int]uint64{1: 1000}}},
	{"speed_openfail", "mlx5_0 1", fakeVerbs{false, map[int]uint64{1: 1000}}},
}

func (f fakeVerbs) spec() string {
	var b strings.Builder
	if !f.open {
		b.WriteString("openfail\n")
	}
	for p, v := range f.speeds {
		fmt.Fprintf(&b, "portspeed %d %d\n", p, v)
	}
	return b.String()
}

func TestCEffectiveSpeed(t *testing.T) {
	tree := filepath.Join(trees, "mlx5")
	var shim string
	if *update {
		shim = golden.BuildFakeverbs(t, "ibstat", "../devinfo/testdata/fakeverbs")
	}
	for _, c := range speedCases {
		t.Run(c.name, func(t *testing.T) {
			args := strings.Fields(c.args)
			file := filepath.Join("testdata", "golden", "c_"+c.name+".golden")
			if *update {
				golden.RegenerateFakeverbs(t, shim, c.verbs.spec(), tree, "ibstat", args, file)
			}
			golden.CheckRun(t, file, func(stdout, stderr io.Writer) int {
				cmd := Command{FS: sysfs.Under(tree), Config: "testdata/ibdiag.conf", Pid: golden.Pid, Posix: new(bool), Verbs: c.verbs}
				return cmd.Run(args, stdout, stderr)
			})
		})
	}
}

func TestFormatG(t *testing.T) {
	// printf("%g") of glibc.
	for v, want := range map[float64]string{
		0: "0", 25: "25", 0.4: "0.4", 123456.7: "123457", 999999.5: "1e+06", 1234567: "1.23457e+06",
		0.0001: "0.0001", 0.00001234: "1.234e-05", 100000: "100000", 2e6: "2e+06", 429496729.5: "4.29497e+08",
	} {
		if got := formatG(v); got != want {
			t.Errorf("formatG(%v) = %q, want %q", v, got, want)
		}
	}
}
