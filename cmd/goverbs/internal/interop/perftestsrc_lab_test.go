package interop_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// perftestBinEnv names the directory of perftest binaries built from its source (test/perftestsrc's command),
// which TestLabPerftestFromSource pairs goverbs with.
const perftestBinEnv = "GOVERBS_PERFTEST_BIN"

// srcImpl is the side run from $GOVERBS_PERFTEST_BIN.
const srcImpl = "c@src"

// TestLabPerftestFromSource pairs goverbs' perftest with a perftest built from its source, newer than any
// Debian package (6.29 when this was written; Debian has 6.24), both ways, over TCP, -z and -R, with the
// built pair as the control. For 6.29 and later it also asserts what made goverbs change: over -R such a
// perftest no longer pairs with Debian 12's 6.06 (its rdma_cm key record grew from 56 to 64 bytes), while
// goverbs pairs with both. On demand: it runs when GOVERBS_PERFTEST_BIN is set —
//
//	GOVERBS_PERFTEST_BIN=$(go run ./test/perftestsrc/cmd/perftestsrc -src CHECKOUT) \
//	    go run ./test/lab/cmd/labsuite -kernels all -run TestLabPerftestFromSource ./cmd/goverbs/internal/interop
func TestLabPerftestFromSource(t *testing.T) {
	labtest.Require(t)
	dir := os.Getenv(perftestBinEnv)
	if dir == "" {
		t.Skipf("on demand: set %s to perftest built from its source (go run ./test/perftestsrc/cmd/perftestsrc -src CHECKOUT)", perftestBinEnv)
	}
	out, err := exec.Command(filepath.Join(dir, "ib_write_bw"), "-V").CombinedOutput()
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "Version: ")
	if !ok {
		t.Fatalf("%s/ib_write_bw -V: %q, %v", dir, out, err)
	}
	t.Logf("perftest %s from %s", version, dir)
	port := 23600
	for _, pc := range []pcase{
		{"ib_write_bw", "RC", nil},
		{"ib_send_lat", "RC", nil},
		{"ib_read_bw", "RC", nil},
		{"ib_send_bw", "UD", nil},
		{"ib_write_bw", "RC", []string{"-z"}},
		{"ib_send_lat", "RC", []string{"-z"}},
		{"ib_write_bw", "RC", []string{"-R"}},
		{"ib_read_bw", "RC", []string{"-R"}},
		{"ib_send_lat", "RC", []string{"-R"}},
		{"ib_send_bw", "UD", []string{"-R"}},
	} {
		cm := len(pc.args) > 0
		t.Run(strings.Join(append([]string{pc.tool, pc.conn}, pc.args...), "/"), func(t *testing.T) {
			args := append([]string{"-n", "20", "-c", pc.conn}, pc.args...)
			for _, dir := range [][2]string{{srcImpl, srcImpl}, {"go", srcImpl}, {srcImpl, "go"}} {
				port++
				var srv, cli *side
				if cm {
					srv, cli = runCMPair(t, pc.tool, dir[0], dir[1], port, args)
				} else {
					srv, cli = runPair(t, pc.tool, dir[0], dir[1], port, args)
				}
				if srv.rc != 0 || cli.rc != 0 {
					t.Fatalf("%s-server/%s-client: exit %d / %d\nserver stdout:\n%s\nserver stderr:\n%s\nclient stdout:\n%s\nclient stderr:\n%s",
						dir[0], dir[1], srv.rc, cli.rc, srv.out.String(), srv.err.String(), cli.out.String(), cli.err.String())
				}
			}
		})
	}
	if v, err := strconv.ParseFloat(version, 64); err != nil || v < 6.29 {
		return
	}
	// The C incompatibility goverbs bridges: 6.29 against Debian 12's 6.06 over -R fails, either way round.
	for _, dir := range [][2]string{{srcImpl, "c"}, {"c", srcImpl}} {
		port++
		srv, cli := runCMPair(t, "ib_write_bw", dir[0], dir[1], port, []string{"-n", "20", "-R"})
		if srv.rc == 0 && cli.rc == 0 {
			t.Errorf("%s-server/%s-client: perftest %s and 6.06 paired over -R: the incompatibility this test documents is gone (docs/perftest.md)", dir[0], dir[1], version)
		}
		t.Logf("%s-server/%s-client over -R: exit %d / %d (expected to fail)\nclient stderr:\n%s", dir[0], dir[1], srv.rc, cli.rc, cli.err.String())
	}
}
