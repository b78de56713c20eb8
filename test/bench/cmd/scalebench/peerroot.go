package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goverbs/goverbs/test/lab"
)

// enterPeerRoot prepares root (lab.EnsurePeerRoot's, read-only in the VM) for chroot (lab.MountPeerRoot) and
// copies the C peer into its /tmp. It returns the peer's path inside root.
func enterPeerRoot(root, cpeer string) (string, error) {
	if err := lab.MountPeerRoot(root); err != nil {
		return "", err
	}
	b, err := os.ReadFile(cpeer)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "tmp", "scalepeer"), b, 0o755); err != nil {
		return "", err
	}
	return "/tmp/scalepeer", nil
}

// peerLibs names the rdma-core the C peer runs with: the version of root's librdmacm package, or the
// system's.
func peerLibs(root string) string {
	if root == "" {
		return "the system's rdma-core"
	}
	debs, _ := filepath.Glob(filepath.Join(filepath.Dir(root), "debs", "librdmacm*.deb"))
	for _, d := range debs {
		f := strings.Split(filepath.Base(d), "_")
		if len(f) >= 2 {
			return fmt.Sprintf("rdma-core %s (Debian %s)", f[1], peerEra)
		}
	}
	return "Debian " + peerEra + "'s rdma-core"
}
