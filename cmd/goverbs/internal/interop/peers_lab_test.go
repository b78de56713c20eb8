package interop_test

import (
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// peerRoot is labtest.PeerRoot: era's C tools root, mounted for chroot (impl "c@trixie").
func peerRoot(t *testing.T, era string) string { return labtest.PeerRoot(t, era) }

// TestLabPerftestPeers runs goverbs' perftest against another Debian release's perftest (trixie's 6.24, run
// from its own root by chroot) in both directions, one case per loop kind, and checks as
// TestLabPerftestInterop does: both sides succeed, and each side prints as many result lines as that
// release's C tool prints in the same role.
func TestLabPerftestPeers(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	port := 19600
	var refs refCount
	defer refs.note(t, "trixie's and sid's")
	for _, era := range []string{"trixie", "sid"} {
		peerRoot(t, era)
		peer := "c@" + era
		for _, pc := range []pcase{{"ib_write_bw", "RC", nil}, {"ib_send_bw", "UD", nil}, {"ib_read_lat", "RC", nil},
			{"ib_send_lat", "UC", nil}, {"ib_atomic_bw", "RC", nil}} {
			t.Run(strings.Join([]string{era, pc.tool, pc.conn}, "/"), func(t *testing.T) {
				kind := "bw"
				if strings.HasSuffix(pc.tool, "_lat") {
					kind = "lat"
				}
				args := append([]string{"-n", "20", "-c", pc.conn}, pc.args...)
				runs := map[string][2]*side{}
				for _, dir := range [][2]string{{"go", peer}, {peer, "go"}, {peer, peer}} {
					port++
					var srv, cli *side
					if dir[0] == peer && dir[1] == peer {
						var cached bool
						srv, cli, cached = refPair(t, pc.tool, peer, func() (*side, *side) { return runPair(t, pc.tool, dir[0], dir[1], port, args) })
						refs.add(cached)
					} else {
						srv, cli = runPair(t, pc.tool, dir[0], dir[1], port, args)
					}
					runs[dir[0]+"-"+dir[1]] = [2]*side{srv, cli}
					for _, s := range []*side{srv, cli} {
						if s.rc != 0 {
							t.Fatalf("%s-server/%s-client: %s side exited %d\nstdout:\n%s\nstderr:\n%s", dir[0], dir[1], s.impl, s.rc, s.out.String(), s.err.String())
						}
					}
				}
				ref := runs[peer+"-"+peer]
				for _, dir := range []string{"go-" + peer, peer + "-go"} {
					for i, s := range runs[dir] {
						role := [2]string{"server", "client"}[i]
						want := len(resultLines(ref[i].out.String(), kind))
						// (A latency server of read and write prints no results, in every release.)
						if got := resultLines(s.out.String(), kind); len(got) != want || (role == "client" && want == 0) {
							t.Errorf("%s: %s %s printed %d result lines, %s's C tool prints %d\n%s", dir, s.impl, role, len(got), era, want, s.out.String())
						}
						// Both releases have perftest 6.24, the version goverbs' output follows.
						if s.impl == "go" && shape(s.out.String()) != shape(ref[i].out.String()) {
							t.Errorf("%s: goverbs %s output differs in shape from %s's\ngoverbs:\n%s\n%s:\n%s", dir, role, era, s.out.String(), era, ref[i].out.String())
						}
					}
				}
			})
		}
	}
}

// TestLabPingpongPeers runs goverbs' pingpong against trixie's (rdma-core 56) and sid's (rdma-core 65)
// ibv_*_pingpong, each from its own root, both directions, polling and with events: both sides succeed, print
// the lines rdma-core prints and see each other's addresses.
func TestLabPingpongPeers(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	port := interop.Port(1100)
	for _, era := range []string{"trixie", "sid"} {
		peerRoot(t, era)
		for _, pc := range crossPPCases {
			for _, events := range []bool{false, true} {
				for _, goServer := range []bool{true, false} {
					port++
					args := pc.args(port, events)
					srv, cli := endpoint{impl: "c@" + era}, endpoint{impl: "go"}
					if goServer {
						srv, cli = cli, srv
					}
					t.Run(fmt.Sprintf("%s/%s/events=%v/goServer=%v", era, pc.tool, events, goServer), func(t *testing.T) {
						crossPingpong(t, pc.tool, srv, cli, port, args, pc.want)
					})
				}
			}
		}
	}
}

// TestLabRdmaCMPeers runs goverbs' rdma_cm tools against trixie's (rdma-core 56) and sid's (rdma-core 65)
// rdmacm-utils, each from its own root, in both directions: rping (with and without -V), ucmatose, udaddy
// and rstream (-T v: the receivers check every byte; 50 transfers of 1000 bytes). Each pair must succeed and print what it prints against
// the host's tools (rdma-core 44).
func TestLabRdmaCMPeers(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	port := interop.Port(780)
	for _, era := range []string{"trixie", "sid"} {
		cRun := cPPIn(peerRoot(t, era))
		for _, goServer := range []bool{false, true} {
			dir := "c-server"
			if goServer {
				dir = "go-server"
			}
			for _, extra := range [][]string{nil, {"-V"}} {
				port++
				p := port
				t.Run(fmt.Sprintf("%s/rping%v/%s", era, extra, dir), func(t *testing.T) {
					pairRpingWith(t, cRun, p, extra, goServer, 10, 64)
				})
			}
			port++
			p := port
			t.Run(fmt.Sprintf("%s/ucmatose/%s", era, dir), func(t *testing.T) {
				pairToolWith(t, cRun, cmatoseTool, p, []string{"-b", labIP, "-p", interop.Itoa(p)}, []string{"-s", labIP, "-p", interop.Itoa(p)},
					goServer, cmatoseServerOut, cmatoseClientOut)
			})
			t.Run(fmt.Sprintf("%s/udaddy/%s", era, dir), func(t *testing.T) {
				pairToolWith(t, cRun, udaddyTool, 7174, []string{"-b", labIP}, []string{"-s", labIP}, goServer,
					udaddyServerOut, udaddyClientOut)
			})
			port++
			p2 := port
			t.Run(fmt.Sprintf("%s/rstream/%s", era, dir), func(t *testing.T) {
				pairStreamWith(t, cRun, rstreamTool, p2, []string{"-T", "v", "-S", "1000", "-C", "50"}, goServer)
			})
		}
	}
}
