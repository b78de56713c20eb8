package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// enterPeerRoot prepares root (lab.EnsurePeerRoot's, read-only in the VM) for chroot as test/labtest's
// PeerRoot does — the VM's /dev and /sys bound, a proc, tmpfs on /tmp and /run — and copies the C peer into
// its /tmp. It returns the peer's path inside root.
func enterPeerRoot(root, cpeer string) (string, error) {
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
			return "", &os.PathError{Op: "mount " + m.src + " on", Path: filepath.Join(root, m.dir), Err: err}
		}
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
