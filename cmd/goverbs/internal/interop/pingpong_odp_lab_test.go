package interop_test

import (
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabPingpongODP runs ibv_rc_pingpong -o (and -o -P, prefetch) and ibv_srq_pingpong -o, goverbs against
// rdma-core's, both ways, on kernels whose rxe has ODP (6.15+). On older kernels both tools refuse before
// connecting, and goverbs' refusal must be rdma-core's byte for byte. (With -P bookworm's rdma-core 44 also
// prints "Couldn't prefetch MR(95). Continue anyway": its rxe provider has no advise_mr; goverbs asks the
// kernel, as rdma-core from v59 does. Only stdout is compared.)
func TestLabPingpongODP(t *testing.T) {
	labtest.Require(t)
	dev := labtest.Device()
	if !labtest.Kernel().AtLeast(6, 15) {
		for _, c := range []struct {
			tool ppTool
			args []string
		}{{ppRC, []string{"-d", dev, "-o"}}, {ppRC, []string{"-d", dev, "-o", "-P"}}, {ppSRQ, []string{"-d", dev, "-o"}}} {
			interop.NeedTool(t, c.tool.ctool, "ibverbs-utils")
			want, got := cPP(c.tool, c.args), goPP(c.tool, c.args)
			if want.rc == 0 || got != want {
				t.Errorf("Linux %s, %s %q:\n--- C: rc %d\n%s%s--- goverbs: rc %d\n%s%s", labtest.Kernel(), c.tool.ctool, c.args,
					want.rc, want.out, want.err, got.rc, got.out, got.err)
			}
		}
		return
	}
	interop.NeedTool(t, ppRC.ctool, "ibverbs-utils")
	port := interop.Port(450)
	for _, c := range []struct {
		tool  ppTool
		extra []string
	}{
		{ppRC, []string{"-n", "10", "-o"}},
		{ppRC, []string{"-n", "10", "-o", "-P"}},
		{ppSRQ, []string{"-q", "4", "-n", "12", "-c", "-o"}},
	} {
		for _, goServer := range []bool{true, false} {
			port++
			args := append([]string{"-d", dev, "-g", "1", "-s", "4096", "-p", interop.Itoa(port)}, c.extra...)
			want := ppLines
			if c.tool.ctool == ppSRQ.ctool {
				want = srqLines(4)
			}
			t.Run(fmt.Sprintf("%s%v/goServer=%v", c.tool.ctool, c.extra, goServer), func(t *testing.T) {
				pairPP(t, c.tool, port, args, goServer, want)
			})
		}
	}
}
