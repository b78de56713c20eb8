package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Kernel is an unpacked Debian kernel.
type Kernel struct {
	// Package is the kernel image package, e.g. linux-image-6.1.0-56-amd64-unsigned, or for the split
	// packaging of 6.19+ linux-binary-unsigned-7.3.4+deb13-amd64 (Packages lists all of them).
	Package  string
	Packages []string
	Version  string // e.g. 6.1.0-56-amd64, 7.3.4+deb13-amd64 (the modules directory's name)
	Vmlinuz  string // path of the compressed kernel image (bzImage)
	// Vmlinux is the uncompressed ELF image QEMU boots through the PVH
	// entry point, saving the guest the decompression (seconds under TCG);
	// "" when it could not be made (no PVH support, no xz/zstd tool).
	Vmlinux    string
	ModulesDir string // path of [usr/]lib/modules/<Version>
	Config     string // path of the kernel's config (boot/config-V or usr/lib/modules/V/config), "" if absent
	// cacheDir, for a kernel you built (CustomSelector), is where the lab keeps what it derives from it; for
	// Debian's kernels that is the directory their packages are unpacked in.
	cacheDir string
}

// MissingToolError reports a prerequisite program that is not installed.
type MissingToolError struct {
	Tool    string // e.g. "qemu-system-x86_64"
	Package string // the Debian package that provides it
}

func (e *MissingToolError) Error() string {
	return "lab: " + e.Tool + " not found: apt-get install " + e.Package
}

func missingTool(tool, pkg string) error { return &MissingToolError{Tool: tool, Package: pkg} }

// EnsureKernel returns the Debian kernel the lab boots, downloading
// (apt-get download) and unpacking (dpkg -x) it into the cache the first
// time. Which kernel: GOVERBS_LAB_KERNEL_PACKAGE names a package outright;
// otherwise GOVERBS_LAB_KERNEL selects one (see KernelSelector): "" or "6.1"
// is the -unsigned variant of the host apt's linux-image-amd64 dependency
// (bookworm's 6.1), "6.12" or any other X.Y the newest linux-image-amd64 X.Y.*
// of the lab's private apt configuration (trixie, trixie-backports, sid; see
// PrivateApt), "newest" the newest of all. Progress messages go to log.
func EnsureKernel(ctx context.Context, cacheDir string, log io.Writer) (*Kernel, error) {
	sel, err := KernelSelector()
	if err != nil {
		return nil, err
	}
	return EnsureKernelFor(ctx, cacheDir, sel, log)
}

// EnsureKernelFor is EnsureKernel for the selector sel instead of
// GOVERBS_LAB_KERNEL's ("" means 6.1; GOVERBS_LAB_KERNEL_PACKAGE still wins).
// It reads no selector from the environment, so concurrent callers (labsuite
// -j) can prepare different kernels at once; the cache is locked while a
// kernel is downloaded or unpacked.
func EnsureKernelFor(ctx context.Context, cacheDir, sel string, log io.Writer) (*Kernel, error) {
	sel, err := CheckKernelSelector(sel)
	if err != nil {
		return nil, err
	}
	if sel == CustomSelector {
		return customKernel(cacheDir)
	}
	pkgs, apt, resolveErr := resolveKernelPackages(ctx, cacheDir, sel, false, log)
	if resolveErr != nil {
		// Offline or without apt: use the kernel this selector resolved to last time, if unpacked.
		if k := cachedKernel(cacheDir, sel); k != nil {
			fmt.Fprintf(log, "lab: %v; using the cached %s\n", resolveErr, k.Package)
			return k, nil
		}
		var missing *MissingToolError
		if errors.As(resolveErr, &missing) {
			return nil, resolveErr
		}
		if apt != nil {
			return nil, resolveErr // the private configuration was updated already
		}
		fmt.Fprintf(log, "%v; running apt-get update\n", resolveErr)
		if err := aptGetUpdate(ctx); err != nil {
			return nil, fmt.Errorf("%w; then %w", resolveErr, err)
		}
		if pkgs, apt, resolveErr = resolveKernelPackages(ctx, cacheDir, sel, true, log); resolveErr != nil {
			return nil, resolveErr
		}
	}
	dir := filepath.Join(cacheDir, "kernels", pkgs[0])
	if k, err := loadKernel(pkgs, dir); err == nil {
		return k, nil
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if k, err := loadKernel(pkgs, dir); err == nil {
		return k, nil // another process unpacked it meanwhile
	}
	var debs []string
	for _, p := range pkgs {
		deb, err := downloadPackage(ctx, cacheDir, p, apt, log)
		if err != nil {
			if sel != "" && os.Getenv("GOVERBS_LAB_KERNEL_PACKAGE") == "" {
				err = fmt.Errorf("%w (GOVERBS_LAB_KERNEL=%s resolved to %s from cached package lists; if the Debian archive has moved on, delete %s to resolve again)",
					err, sel, strings.Join(pkgs, " "), stampPath(cacheDir, sel))
			}
			return nil, err
		}
		debs = append(debs, deb)
	}
	if err := unpackDebs(ctx, debs, dir); err != nil {
		return nil, err
	}
	return loadKernel(pkgs, dir)
}

// ensureVmlinux makes k.Vmlinux if the kernel supports PVH boot; failing
// that, the lab boots the compressed image, so errors only lose speed.
func ensureVmlinux(ctx context.Context, cacheDir string, k *Kernel) {
	if k.Vmlinux != "" || k.Config == "" {
		return
	}
	config, err := os.ReadFile(k.Config)
	if err != nil || !bytes.Contains(config, []byte("\nCONFIG_PVH=y\n")) {
		return
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return
	}
	defer unlock()
	path := filepath.Join(kernelDir(k), "vmlinux")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	if !exists(path) {
		img, err := os.ReadFile(k.Vmlinuz)
		if err != nil {
			return
		}
		elf, err := decompressKernel(ctx, img)
		if err != nil || writeFileAtomic(path, elf, 0o644) != nil {
			return
		}
	}
	k.Vmlinux = path
}

// kernelDir is the directory the kernel's packages are unpacked in.
func kernelDir(k *Kernel) string {
	if k.cacheDir != "" {
		return k.cacheDir
	}
	d := k.ModulesDir
	for i := 0; i < 3; i++ { // [usr/]lib/modules/V
		d = filepath.Dir(d)
	}
	if filepath.Base(d) == "usr" {
		d = filepath.Dir(d)
	}
	return d
}

// bzImagePayload returns the compressed kernel inside a bzImage, from the
// boot protocol's setup header (setup_sects at 0x1f1, payload_offset and
// payload_length at 0x248 and 0x24c, protocol 2.08+). The kernel build
// appends the uncompressed size as a little-endian uint32 to the payload.
func bzImagePayload(img []byte) (payload []byte, size uint32, ok bool) {
	if len(img) < 0x250 || string(img[0x202:0x206]) != "HdrS" {
		return nil, 0, false
	}
	setup := int(img[0x1f1])
	if setup == 0 {
		setup = 4
	}
	off := (setup+1)*512 + int(binary.LittleEndian.Uint32(img[0x248:]))
	n := int(binary.LittleEndian.Uint32(img[0x24c:]))
	if n < 8 || off < 0 || off+n > len(img) {
		return nil, 0, false
	}
	p := img[off : off+n]
	return p[:n-4], binary.LittleEndian.Uint32(p[n-4:]), true
}

// decompressKernel extracts the ELF vmlinux from a bzImage compressed with
// xz (Debian up to 6.1) or zstd (6.12 and later), using the xz or zstd tool.
func decompressKernel(ctx context.Context, bzImage []byte) ([]byte, error) {
	payload, size, ok := bzImagePayload(bzImage)
	if !ok {
		return nil, errors.New("lab: kernel image has no bzImage setup header")
	}
	var cmd *exec.Cmd
	switch {
	case bytes.HasPrefix(payload, []byte("\xfd7zXZ\x00")):
		cmd = exec.CommandContext(ctx, "xz", "-dc", "--single-stream")
	case bytes.HasPrefix(payload, []byte("\x28\xb5\x2f\xfd")):
		cmd = exec.CommandContext(ctx, "zstd", "-dc")
	default:
		return nil, fmt.Errorf("lab: kernel image is compressed with neither xz nor zstd (payload starts % x)", payload[:4])
	}
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("lab: decompress kernel (%s): %w", cmd.Args[0], err)
	}
	if !bytes.HasPrefix(out, []byte("\x7fELF")) || uint32(len(out)) != size {
		return nil, fmt.Errorf("lab: decompressed kernel is not the %d-byte ELF image the bzImage announces", size)
	}
	return out, nil
}

func aptGetUpdate(ctx context.Context) error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return missingTool("apt-get", "apt")
	}
	out, err := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: apt-get update: %w: %s", err, tail(out, 2000))
	}
	return nil
}

// downloadPackage returns the cached .deb of pkg, downloading it if needed
// with apt-get (and the private configuration apt, when not nil).
func downloadPackage(ctx context.Context, cacheDir, pkg string, apt *PrivateApt, log io.Writer) (string, error) {
	if debs, _ := filepath.Glob(filepath.Join(cacheDir, pkg+"_*.deb")); len(debs) > 0 {
		sort.Strings(debs)
		return debs[len(debs)-1], nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", missingTool("apt-get", "apt")
	}
	tmp, err := os.MkdirTemp(cacheDir, ".download-")
	if err != nil {
		return "", fmt.Errorf("lab: download %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "lab: downloading %s (once) into %s\n", pkg, cacheDir)
	cmd := exec.CommandContext(ctx, "apt-get", append(apt.args(), "download", pkg)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("lab: apt-get download %s: %w: %s", pkg, err, tail(out, 2000))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, pkg+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("lab: apt-get download %s: expected one .deb, found %d", pkg, len(debs))
	}
	dst := filepath.Join(cacheDir, filepath.Base(debs[0]))
	if err := os.Rename(debs[0], dst); err != nil {
		return "", fmt.Errorf("lab: download %s: %w", pkg, err)
	}
	return dst, nil
}

// unpackDebs unpacks the debs into dir (which must not exist) with dpkg -x.
func unpackDebs(ctx context.Context, debs []string, dir string) error {
	if _, err := exec.LookPath("dpkg"); err != nil {
		return missingTool("dpkg", "dpkg")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("lab: unpack %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpack-")
	if err != nil {
		return fmt.Errorf("lab: unpack %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	for _, deb := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg", "-x", deb, tmp).CombinedOutput(); err != nil {
			return fmt.Errorf("lab: dpkg -x %s: %w: %s", deb, err, tail(out, 2000))
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !exists(dir) {
		return fmt.Errorf("lab: unpack %s: %w", dir, err)
	}
	return nil
}

// loadKernel checks an unpacked kernel directory. Up to 6.1 (bookworm) the
// image is boot/vmlinuz-V and the modules lib/modules/V; trixie moved the
// modules to usr/lib/modules/V; from 6.19 (split packages) there is no boot/
// and the image is usr/lib/modules/V/vmlinuz[.unsigned], the config beside it.
func loadKernel(pkgs []string, dir string) (*Kernel, error) {
	var mods []string
	for _, pat := range []string{"lib/modules/*", "usr/lib/modules/*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		mods = append(mods, m...)
	}
	if len(mods) != 1 {
		return nil, fmt.Errorf("lab: %s: expected one [usr/]lib/modules/<version> directory, found %d", dir, len(mods))
	}
	version := filepath.Base(mods[0])
	k := &Kernel{Package: pkgs[0], Packages: pkgs, Version: version, ModulesDir: mods[0]}
	for _, p := range []string{filepath.Join(dir, "boot", "vmlinuz-"+version), filepath.Join(mods[0], "vmlinuz.unsigned"), filepath.Join(mods[0], "vmlinuz")} {
		if exists(p) {
			k.Vmlinuz = p
			break
		}
	}
	if k.Vmlinuz == "" {
		return nil, fmt.Errorf("lab: %s: no kernel image (boot/vmlinuz-%s or %s/vmlinuz.unsigned)", dir, version, mods[0])
	}
	for _, p := range []string{filepath.Join(dir, "boot", "config-"+version), filepath.Join(mods[0], "config")} {
		if exists(p) {
			k.Config = p
			break
		}
	}
	if p := filepath.Join(dir, "vmlinux"); exists(p) {
		k.Vmlinux = p
	}
	return k, nil
}

// cachedKernel returns the unpacked kernel sel resolved to last time or, for
// the default selector, the newest-named unpacked 6.1 kernel; nil if none.
func cachedKernel(cacheDir, sel string) *Kernel {
	if b, err := os.ReadFile(stampPath(cacheDir, sel)); err == nil {
		if pkgs := strings.Fields(string(b)); len(pkgs) > 0 {
			if k, err := loadKernel(pkgs, filepath.Join(cacheDir, "kernels", pkgs[0])); err == nil {
				return k
			}
		}
	}
	if sel != "" && sel != "6.1" {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(cacheDir, "kernels", "linux-image-6.1.*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if k, err := loadKernel([]string{filepath.Base(dirs[i])}, dirs[i]); err == nil {
			return k
		}
	}
	return nil
}

// tail returns at most the last n bytes of b, trimmed, as a string.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
