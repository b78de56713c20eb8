package interop_test

import (
	"strings"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabPerftestNoLock: perftest's --no_lock makes a thread domain and a parent domain for its QPs and CQs;
// rxe has no thread domains, so trixie's perftest 6.24 fails with "Couldn't allocate TD", and goverbs' perftest,
// which now makes the same calls (uverbs.AllocTD, AllocParentDomain), must fail the same way: each side of a
// C pair and of a goverbs pair exits non-zero, and goverbs' server prints what the C server prints.
func TestLabPerftestNoLock(t *testing.T) {
	labtest.Require(t)
	peerRoot(t, "trixie")
	port := 23900
	runs := map[string][2]*side{}
	for _, impl := range []string{"c@trixie", "go"} {
		port++
		srv, cli := runPair(t, "ib_write_bw", impl, impl, port, []string{"-n", "5", "--no_lock"})
		for _, s := range []*side{srv, cli} {
			if s.rc == 0 || !strings.Contains(s.err.String(), "Couldn't allocate TD\n") {
				t.Errorf("%s: exit %d, stderr %q; want a failure with \"Couldn't allocate TD\"", s.impl, s.rc, s.err.String())
			}
		}
		runs[impl] = [2]*side{srv, cli}
	}
	c, g := runs["c@trixie"][0], runs["go"][0]
	if c.err.String() != g.err.String() || c.out.String() != g.out.String() {
		t.Errorf("server output differs:\nC stdout:\n%s\nC stderr:\n%s\ngoverbs stdout:\n%s\ngoverbs stderr:\n%s",
			c.out.String(), c.err.String(), g.out.String(), g.err.String())
	}
}
