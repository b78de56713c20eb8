package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
)

// peerEnv names the variable that carries the root of an era's C tools (labsuite builds it with
// lab.EnsurePeerRoot and sets GOVERBS_LAB_PEER_TRIXIE).
func peerEnv(era string) string { return "GOVERBS_LAB_PEER_" + strings.ToUpper(era) }

var peerMounts sync.Map // era -> error of the one-time mount setup

// peerRoot returns the root of era's C tools with the VM's /dev, /sys, /proc and tmpfs mounted in it, so that
// command can chroot into it (impl "c@trixie").
func peerRoot(t *testing.T, era string) string {
	t.Helper()
	root := os.Getenv(peerEnv(era))
	if root == "" {
		if labtest.Required() {
			t.Fatalf("%s is not set: run the lab tests with labsuite, which builds %s's tools root", peerEnv(era), era)
		}
		t.Skipf("%s is not set: run with go run ./test/lab/cmd/labsuite, which builds %s's tools root", peerEnv(era), era)
	}
	errv, _ := peerMounts.LoadOrStore(era, sync.OnceValue(func() error {
		for _, m := range []struct {
			src, dir, fstype string
			flags            uintptr
		}{
			{"/dev", "dev", "", unix.MS_BIND | unix.MS_REC},
			{"/sys", "sys", "", unix.MS_BIND | unix.MS_REC},
			{"proc", "proc", "proc", 0},
			{"tmpfs", "tmp", "tmpfs", 0},
			{"tmpfs", "run", "tmpfs", 0},
		} {
			if err := unix.Mount(m.src, filepath.Join(root, m.dir), m.fstype, m.flags, ""); err != nil {
				return &os.PathError{Op: "mount " + m.src + " on", Path: filepath.Join(root, m.dir), Err: err}
			}
		}
		return nil
	}))
	if err := errv.(func() error)(); err != nil {
		t.Fatalf("%s peer root %s: %v", era, root, err)
	}
	return root
}

// TestLabPerftestPeers runs goverbs' perftest against another Debian release's perftest (trixie's 6.24, run
// from its own root by chroot) in both directions, one case per loop kind, and checks as
// TestLabPerftestInterop does: both sides succeed, and each side prints as many result lines as that
// release's C tool prints in the same role.
func TestLabPerftestPeers(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	port := 19600
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
					srv, cli := runPair(t, pc.tool, dir[0], dir[1], port, args)
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
	port := Port(1100)
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
