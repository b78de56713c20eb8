package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// metaPackage is the Debian package whose dependency names the current kernel.
const metaPackage = "linux-image-amd64"

// resolveMaxAge is how long a resolved kernel package name is trusted before
// apt-cache is asked again.
const resolveMaxAge = 24 * time.Hour

// Kernel is an unpacked Debian kernel package.
type Kernel struct {
	Package string // e.g. linux-image-6.1.0-56-amd64-unsigned
	Version string // e.g. 6.1.0-56-amd64
	Vmlinuz string // path of the compressed kernel image (bzImage)
	// Vmlinux is the uncompressed ELF image QEMU boots through the PVH
	// entry point, saving the guest the decompression (seconds under TCG);
	// "" when it could not be made (no PVH support, no xz tool).
	Vmlinux    string
	ModulesDir string // path of lib/modules/<Version>
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
// time. GOVERBS_LAB_KERNEL_PACKAGE overrides the package name; otherwise it
// is the -unsigned variant of linux-image-amd64's dependency. Progress
// messages go to log.
func EnsureKernel(ctx context.Context, cacheDir string, log io.Writer) (*Kernel, error) {
	pkg, resolveErr := resolveKernelPackage(ctx, cacheDir, false)
	if resolveErr != nil {
		// Offline or without apt: use whatever kernel is unpacked already.
		if k := anyCachedKernel(cacheDir); k != nil {
			return k, nil
		}
		var missing *MissingToolError
		if errors.As(resolveErr, &missing) {
			return nil, resolveErr
		}
		fmt.Fprintf(log, "%v; running apt-get update\n", resolveErr)
		if err := aptGetUpdate(ctx); err != nil {
			return nil, fmt.Errorf("%w; then %w", resolveErr, err)
		}
		if pkg, resolveErr = resolveKernelPackage(ctx, cacheDir, true); resolveErr != nil {
			return nil, resolveErr
		}
	}
	dir := filepath.Join(cacheDir, "kernels", pkg)
	if k, err := loadKernel(pkg, dir); err == nil {
		return k, nil
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if k, err := loadKernel(pkg, dir); err == nil {
		return k, nil // another process unpacked it meanwhile
	}
	deb, err := downloadPackage(ctx, cacheDir, pkg, log)
	if err != nil {
		return nil, err
	}
	if err := unpackDeb(ctx, deb, dir); err != nil {
		return nil, err
	}
	return loadKernel(pkg, dir)
}

// ensureVmlinux makes k.Vmlinux if the kernel supports PVH boot; failing
// that, the lab boots the compressed image, so errors only lose speed.
func ensureVmlinux(ctx context.Context, cacheDir string, k *Kernel) {
	if k.Vmlinux != "" {
		return
	}
	dir := filepath.Dir(filepath.Dir(k.Vmlinuz))
	config, err := os.ReadFile(filepath.Join(dir, "boot", "config-"+k.Version))
	if err != nil || !bytes.Contains(config, []byte("\nCONFIG_PVH=y\n")) {
		return
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return
	}
	defer unlock()
	path := filepath.Join(dir, "vmlinux")
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

// decompressKernel extracts the ELF vmlinux from a bzImage compressed with
// xz (Debian's choice), using the xz tool.
func decompressKernel(ctx context.Context, bzImage []byte) ([]byte, error) {
	i := bytes.Index(bzImage, []byte("\xfd7zXZ\x00"))
	if i < 0 {
		return nil, errors.New("lab: kernel image is not xz-compressed")
	}
	cmd := exec.CommandContext(ctx, "xz", "-dc", "--single-stream")
	cmd.Stdin = bytes.NewReader(bzImage[i:])
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("lab: decompress kernel: %w", err)
	}
	if !bytes.HasPrefix(out, []byte("\x7fELF")) {
		return nil, errors.New("lab: decompressed kernel is not an ELF image")
	}
	return out, nil
}

// resolveKernelPackage returns the name of the -unsigned kernel package.
func resolveKernelPackage(ctx context.Context, cacheDir string, force bool) (string, error) {
	if p := os.Getenv("GOVERBS_LAB_KERNEL_PACKAGE"); p != "" {
		return p, nil
	}
	stamp := filepath.Join(cacheDir, "kernel-package")
	if fi, err := os.Stat(stamp); err == nil && !force && time.Since(fi.ModTime()) < resolveMaxAge {
		if b, err := os.ReadFile(stamp); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b)), nil
		}
	}
	if _, err := exec.LookPath("apt-cache"); err != nil {
		return "", missingTool("apt-cache", "apt")
	}
	cmd := exec.CommandContext(ctx, "apt-cache", "depends", metaPackage)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("lab: resolve kernel: apt-cache depends %s: %w: %s", metaPackage, err, strings.TrimSpace(stderr.String()))
	}
	name, err := parseAptDepends(out)
	if err != nil {
		return "", err
	}
	pkg := name + "-unsigned"
	_ = writeFileAtomic(stamp, []byte(pkg+"\n"), 0o644)
	return pkg, nil
}

// parseAptDepends picks the kernel image package out of the output of
// "apt-cache depends linux-image-amd64" (lines like
// "  Depends: linux-image-6.1.0-56-amd64").
func parseAptDepends(out []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.TrimPrefix(f[0], "|") == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("lab: resolve kernel: apt-cache depends %s names no linux-image-* package", metaPackage)
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

// downloadPackage returns the cached .deb of pkg, downloading it if needed.
func downloadPackage(ctx context.Context, cacheDir, pkg string, log io.Writer) (string, error) {
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
	cmd := exec.CommandContext(ctx, "apt-get", "download", pkg)
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

// unpackDeb unpacks deb into dir (which must not exist) with dpkg -x.
func unpackDeb(ctx context.Context, deb, dir string) error {
	if _, err := exec.LookPath("dpkg"); err != nil {
		return missingTool("dpkg", "dpkg")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("lab: unpack %s: %w", deb, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpack-")
	if err != nil {
		return fmt.Errorf("lab: unpack %s: %w", deb, err)
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, "dpkg", "-x", deb, tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("lab: dpkg -x %s: %w: %s", deb, err, tail(out, 2000))
	}
	if err := os.Rename(tmp, dir); err != nil && !exists(dir) {
		return fmt.Errorf("lab: unpack %s: %w", deb, err)
	}
	return nil
}

// loadKernel checks an unpacked kernel package directory.
func loadKernel(pkg, dir string) (*Kernel, error) {
	mods, err := filepath.Glob(filepath.Join(dir, "lib", "modules", "*"))
	if err != nil || len(mods) != 1 {
		return nil, fmt.Errorf("lab: %s: expected one lib/modules/<version> directory, found %d", dir, len(mods))
	}
	version := filepath.Base(mods[0])
	vmlinuz := filepath.Join(dir, "boot", "vmlinuz-"+version)
	if !exists(vmlinuz) {
		return nil, fmt.Errorf("lab: %s: missing boot/vmlinuz-%s", dir, version)
	}
	k := &Kernel{Package: pkg, Version: version, Vmlinuz: vmlinuz, ModulesDir: mods[0]}
	if p := filepath.Join(dir, "vmlinux"); exists(p) {
		k.Vmlinux = p
	}
	return k, nil
}

// anyCachedKernel returns the newest-named unpacked kernel, or nil.
func anyCachedKernel(cacheDir string) *Kernel {
	dirs, _ := filepath.Glob(filepath.Join(cacheDir, "kernels", "linux-image-*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if k, err := loadKernel(filepath.Base(dirs[i]), dirs[i]); err == nil {
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
