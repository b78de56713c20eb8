package labtest

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/goverbs/goverbs/test/lab"
)

// PeerEnv names the variable that carries the root of an era's C tools (labsuite builds it with
// lab.EnsurePeerRoot and sets GOVERBS_LAB_PEER_TRIXIE, GOVERBS_LAB_PEER_SID).
func PeerEnv(era string) string { return "GOVERBS_LAB_PEER_" + strings.ToUpper(era) }

var peerMounts sync.Map // era -> error of the one-time mount setup

// PeerRoot returns the root of era's C tools (another Debian release's rdma-core, perftest, iproute2) with the
// VM's /dev, /sys, /proc and a tmpfs on /tmp and /run mounted in it, so that a command can run there by chroot
// (exec.Cmd's SysProcAttr.Chroot). Outside labsuite it skips the test, or fails it under GOVERBS_LAB_REQUIRED.
func PeerRoot(t testing.TB, era string) string {
	t.Helper()
	root := os.Getenv(PeerEnv(era))
	if root == "" {
		if Required() {
			t.Fatalf("%s is not set: run the lab tests with labsuite, which builds %s's tools root", PeerEnv(era), era)
		}
		t.Skipf("%s is not set: run with go run ./test/lab/cmd/labsuite, which builds %s's tools root", PeerEnv(era), era)
	}
	errv, _ := peerMounts.LoadOrStore(era, sync.OnceValue(func() error { return lab.MountPeerRoot(root) }))
	if err := errv.(func() error)(); err != nil {
		t.Fatalf("%s peer root %s: %v", era, root, err)
	}
	return root
}
