package lab

import (
	"context"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PeerEras are the Debian releases whose C tools the lab can run beside the host's (bookworm's rdma-core 44,
// perftest 6.06, iproute2 6.1), each from a root of its own that EnsurePeerRoot builds.
var PeerEras = map[string]string{
	"trixie": "rdma-core 56, perftest 6.24, iproute2 6.15",
	"sid":    "rdma-core 65, perftest 6.24, iproute2 7.3",
}

// peerPackages is the runtime closure of rdma-core's tools, perftest and iproute2's rdma in trixie (found with
// a readelf NEEDED fixed point over the binaries and the provider plugins; see
// ../shared/reference/kernels-and-peers.md §5), and in sid (checked the same way: every tool of the root
// starts in a chroot of it). No shell, no perl: commands run as argv, not scripts.
var peerPackages = []string{
	"libc6", "libgcc-s1", "libibverbs1", "ibverbs-providers", "ibverbs-utils", "libnl-3-200", "libnl-route-3-200",
	"librdmacm1t64", "rdmacm-utils", "perftest", "libpci3", "libudev1", "zlib1g", "iproute2", "libmnl0", "libcap2",
	"libselinux1", "libpcre2-8-0", "libbpf1", "libelf1t64", "libzstd1", "libibumad3", "libibmad5",
	"libibnetdisc5t64", "infiniband-diags",
	// socat, an unmodified C program the rsocket tests run under librspreload (rsocket TestLabPreloadSocat).
	"socat", "libssl3t64", "libwrap0",
}

// PeerMountPoints are the directories of a peer root where the VM's own /dev, /sys, /proc and a tmpfs go
// (libibverbs reads /sys/class/infiniband_verbs and opens /dev/infiniband/uverbsN; the tools write /tmp).
var PeerMountPoints = []string{"dev", "sys", "proc", "tmp", "run"}

// MountPeerRoot prepares root (EnsurePeerRoot's, read-only in the VM) for chroot, inside the VM: the VM's
// /dev and /sys bound onto it (recursively), a proc, and a tmpfs on /tmp and /run — PeerMountPoints. Once per
// VM and root: mounting twice stacks the mounts.
func MountPeerRoot(root string) error {
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
}

// EnsurePeerRoot returns the directory of a root filesystem holding era's C tools (apt-get download of
// era's packages through the private apt configuration, dpkg -x, Debian's merged-/usr links), building it in
// CacheDir/peers/<era>/root the first time. Inside the VM the host's cache is visible read-only at the same
// path; a test runs a tool there with chroot after binding the VM's /dev, /sys and /proc onto
// PeerMountPoints (a chroot rather than ld.so --library-path: libibverbs finds its providers through
// compiled-in paths, /etc/libibverbs.d and /usr/lib/x86_64-linux-gnu/libibverbs).
func EnsurePeerRoot(ctx context.Context, cacheDir, era string, log io.Writer) (string, error) {
	if _, ok := PeerEras[era]; !ok {
		return "", fmt.Errorf("lab: unknown peer era %q (have trixie, sid)", era)
	}
	base := filepath.Join(cacheDir, "peers", era)
	root := filepath.Join(base, "root")
	// The marker holds the package list the root was made of: a root made of another list is made again.
	marker := strings.Join(peerPackages, "\n") + "\n"
	complete := func() bool {
		b, err := os.ReadFile(filepath.Join(base, "complete"))
		return err == nil && string(b) == marker
	}
	if complete() {
		return root, nil
	}
	apt := &PrivateApt{Dir: filepath.Join(cacheDir, "apt")}
	if err := apt.ensure(ctx, false, log); err != nil {
		return "", err
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if complete() {
		return root, nil
	}
	os.Remove(filepath.Join(base, "complete"))
	debDir := filepath.Join(base, "debs")
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return "", fmt.Errorf("lab: peer root %s: %w", era, err)
	}
	var want []string
	for _, p := range peerPackages {
		if m, _ := filepath.Glob(filepath.Join(debDir, p+"_*.deb")); len(m) == 0 {
			want = append(want, p+"/"+era)
		}
	}
	if len(want) > 0 {
		fmt.Fprintf(log, "lab: downloading %d %s packages for the peer root (once) into %s\n", len(want), era, debDir)
		cmd := exec.CommandContext(ctx, "apt-get", append(apt.args(), append([]string{"download"}, want...)...)...)
		cmd.Dir = debDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("lab: apt-get download (%s peers): %w: %s", era, err, tail(out, 2000))
		}
	}
	debs, _ := filepath.Glob(filepath.Join(debDir, "*.deb"))
	os.RemoveAll(root)
	tmp, err := os.MkdirTemp(base, ".root-")
	if err != nil {
		return "", fmt.Errorf("lab: peer root %s: %w", era, err)
	}
	defer os.RemoveAll(tmp)
	// Merged /usr: trixie's packages ship usr/lib, usr/bin, ... and the loader's PT_INTERP is /lib64/....
	for _, l := range []struct{ name, target string }{{"lib", "usr/lib"}, {"lib64", "usr/lib64"}, {"bin", "usr/bin"}, {"sbin", "usr/sbin"}} {
		if err := os.MkdirAll(filepath.Join(tmp, l.target), 0o755); err != nil {
			return "", err
		}
		if err := os.Symlink(l.target, filepath.Join(tmp, l.name)); err != nil {
			return "", fmt.Errorf("lab: peer root %s: %w", era, err)
		}
	}
	for _, d := range append([]string{"etc"}, PeerMountPoints...) {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return "", err
		}
	}
	for _, deb := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg", "-x", deb, tmp).CombinedOutput(); err != nil {
			return "", fmt.Errorf("lab: dpkg -x %s: %w: %s", deb, err, tail(out, 2000))
		}
	}
	if !exists(filepath.Join(tmp, "usr", "bin", "ib_write_bw")) {
		return "", fmt.Errorf("lab: peer root %s: no usr/bin/ib_write_bw after unpacking %d packages", era, len(debs))
	}
	if err := os.Rename(tmp, root); err != nil {
		return "", fmt.Errorf("lab: peer root %s: %w", era, err)
	}
	if err := os.WriteFile(filepath.Join(base, "complete"), []byte(marker), 0o644); err != nil {
		return "", err
	}
	return root, nil
}
