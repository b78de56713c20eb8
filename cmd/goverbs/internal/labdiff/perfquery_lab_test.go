package labdiff

import (
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/perfquery"
	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabPerfquery compares perfquery with sid's (rdma-core 65) on rxe0.
// Every kernel gives the same result: sid's libibumad pairs only
// InfiniBand ports, so on a RoCE-only host it opens no umad port and
// perfquery fails before sending a MAD ("Failed to open '(null)' port
// '0'"), even on Linux 7.2+, whose rxe answers PerfMgt GETs (package umad's
// lab test reaches them directly). The outputs are exact (no counters are
// printed), with pids normalized.
func TestLabPerfquery(t *testing.T) {
	labtest.Require(t)
	compare(t, "perfquery", perfquery.Main, []string{
		"", "-x", "-a", "-l", "-x -a", "-x -l", "-C DEV -P 1", "-C DEV", "-C DEV -P 2", "-P 1", "-C foo",
		"0 1", "1 1", "-x 0 1", "-G 0x1", "-r", "-R", "-X", "-c", "1 255", "-a 1 1-2", "-l 1 1,2", "1 3-1",
		"-t 100 -x", "-t 0", "-v", "-d", "-dd", "-ddd -C DEV", "-e", "-s 1", "-s 0", "-Y 70000",
		"-V", "-h", "--foo", "--vlopdata",
	})
}
