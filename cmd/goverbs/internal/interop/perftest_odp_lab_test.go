package interop_test

import (
	"strings"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabPerftestODP runs perftest with --odp (the buffer registered with IBV_ACCESS_ON_DEMAND) goverbs against
// Debian 12's perftest 6.06 both ways, with the C pair as the reference. rxe has ODP MRs from Linux 6.15: there
// every pairing must succeed and print the C tool's result lines; on older kernels the device reports no ODP
// capabilities, so every side, C and goverbs alike, must refuse with perftest's message (6.06's for Debian 12's C
// side, 6.24's for goverbs) and a failing status.
// On ODP kernels trixie's perftest 6.24 (which also checks the general ODP cap and the verb's own cap) is paired
// with goverbs too.
func TestLabPerftestODP(t *testing.T) {
	labtest.Require(t)
	odp := labtest.Kernel().AtLeast(6, 15)
	port := 23600
	cases := []pcase{{"ib_write_bw", "RC", nil}, {"ib_read_bw", "RC", nil}, {"ib_send_bw", "RC", nil},
		{"ib_write_lat", "RC", nil}, {"ib_send_bw", "UD", nil}}
	if !odp {
		cases = cases[:1]
	}
	for _, pc := range cases {
		t.Run(pc.tool+"/"+pc.conn, func(t *testing.T) {
			kind := "bw"
			if strings.HasSuffix(pc.tool, "_lat") {
				kind = "lat"
			}
			args := []string{"-n", "20", "-c", pc.conn, "--odp"}
			runs := map[string][2]*side{}
			for _, dir := range [][2]string{{"go", "c"}, {"c", "go"}, {"c", "c"}} {
				port++
				srv, cli := runPair(t, pc.tool, dir[0], dir[1], port, args)
				runs[dir[0]+"-"+dir[1]] = [2]*side{srv, cli}
				for _, s := range []*side{srv, cli} {
					if odp && s.rc != 0 {
						t.Fatalf("%s-server/%s-client: %s side exited %d\nstdout:\n%s\nstderr:\n%s", dir[0], dir[1], s.impl, s.rc,
							s.out.String(), s.err.String())
					}
					if !odp {
						// 6.06 checks RC send and receive caps whatever the verb; goverbs, as 6.24, the general cap first.
						refusal := " Send is not supported for RC transport.\n"
						if s.impl == "go" {
							refusal = " The device does not support On-Demand Paging.\n"
						}
						if s.rc == 0 || !strings.Contains(s.err.String(), refusal) {
							t.Errorf("Linux %s (no ODP): %s-server/%s-client: %s side exited %d, stderr %q; want a failure with %q",
								labtest.Kernel(), dir[0], dir[1], s.impl, s.rc, s.err.String(), refusal)
						}
					}
				}
			}
			if !odp {
				return
			}
			ref := runs["c-c"]
			for _, dir := range []string{"go-c", "c-go"} {
				for i, s := range runs[dir] {
					want := len(resultLines(ref[i].out.String(), kind))
					if got := resultLines(s.out.String(), kind); len(got) != want || want == 0 {
						t.Errorf("%s: %s %s printed %d result lines, the C pair's %d\n%s", dir, s.impl, [2]string{"server", "client"}[i],
							len(got), want, s.out.String())
					}
				}
			}
		})
	}
	if !odp {
		return
	}
	labtest.RequireRoot(t)
	peer := "c@trixie"
	peerRoot(t, "trixie")
	for _, tool := range []string{"ib_write_bw", "ib_read_lat"} {
		t.Run("trixie/"+tool, func(t *testing.T) {
			for _, dir := range [][2]string{{"go", peer}, {peer, "go"}} {
				port++
				srv, cli := runPair(t, tool, dir[0], dir[1], port, []string{"-n", "20", "--odp"})
				for _, s := range []*side{srv, cli} {
					if s.rc != 0 {
						t.Fatalf("%s-server/%s-client: %s side exited %d\nstdout:\n%s\nstderr:\n%s", dir[0], dir[1], s.impl, s.rc,
							s.out.String(), s.err.String())
					}
				}
			}
		})
	}
}
