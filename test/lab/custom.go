package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A kernel you built: the kernel selector "custom" boots the image $GOVERBS_LAB_KERNEL_IMAGE (a bzImage, such
// as arch/x86/boot/bzImage of a build tree) with the modules of $GOVERBS_LAB_KERNEL_MODULES (the directory
// given to `make modules_install INSTALL_MOD_PATH=DIR`, holding lib/modules/<release>; or that
// lib/modules/<release> directory itself), so a kernel developer runs the conformance suite and the interop
// tests on their own tree:
//
//	make -C ~/linux bzImage modules && make -C ~/linux modules_install INSTALL_MOD_PATH=~/linux-mods
//	GOVERBS_LAB_KERNEL_IMAGE=~/linux/arch/x86/boot/bzImage GOVERBS_LAB_KERNEL_MODULES=~/linux-mods \
//	    go run ./test/lab/cmd/labsuite -kernels custom ./test/conformance ./cmd/goverbs/internal/interop
//
// The kernel needs what the lab loads (Modules: virtio PCI and console, 9p over virtio, veth, the RDMA core,
// rdma_rxe, the CMs; each as a module or built in) and, for -provider siw, siw (CONFIG_RDMA_SIW, as a module or
// built in: the lab builds siw.ko from source only for Debian's kernels). $GOVERBS_LAB_KERNEL_CONFIG names its
// .config when it is not beside the modules (lib/modules/<release>/build/.config) or three directories above
// the image (the build tree's): with CONFIG_PVH=y the lab boots the uncompressed kernel, which is faster under
// TCG. What the lab derives from the kernel (the uncompressed image, the initramfs) is cached under a name
// made from the image's and the modules' contents, so a rebuilt tree is never served a stale copy.
const (
	CustomSelector   = "custom"
	KernelImageEnv   = "GOVERBS_LAB_KERNEL_IMAGE"
	KernelModulesEnv = "GOVERBS_LAB_KERNEL_MODULES"
	KernelConfigEnv  = "GOVERBS_LAB_KERNEL_CONFIG"
)

// customKernel is the kernel of the custom selector, from the environment.
func customKernel(cacheDir string) (*Kernel, error) {
	image, modPath := os.Getenv(KernelImageEnv), os.Getenv(KernelModulesEnv)
	if image == "" || modPath == "" {
		return nil, fmt.Errorf("lab: kernel %q: set %s to the kernel image (arch/x86/boot/bzImage) and %s to the modules_install directory (INSTALL_MOD_PATH)",
			CustomSelector, KernelImageEnv, KernelModulesEnv)
	}
	return loadCustomKernel(cacheDir, image, modPath, os.Getenv(KernelConfigEnv))
}

// loadCustomKernel describes the kernel image with the modules under modPath (an INSTALL_MOD_PATH or its
// lib/modules/<release>) and config (when "", found beside the modules or in the build tree of the image).
func loadCustomKernel(cacheDir, image, modPath, config string) (*Kernel, error) {
	if fi, err := os.Stat(image); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("lab: kernel image %s=%s: not a file (%v)", KernelImageEnv, image, err)
	}
	modsDir := modPath
	if !exists(filepath.Join(modPath, "modules.builtin")) {
		m, _ := filepath.Glob(filepath.Join(modPath, "lib", "modules", "*"))
		if len(m) != 1 {
			return nil, fmt.Errorf("lab: %s=%s: want exactly one lib/modules/<release> (make modules_install INSTALL_MOD_PATH=%s), found %d",
				KernelModulesEnv, modPath, modPath, len(m))
		}
		modsDir = m[0]
	}
	if !exists(filepath.Join(modsDir, "modules.builtin")) {
		return nil, fmt.Errorf("lab: %s: no modules.builtin (not a modules_install output)", modsDir)
	}
	id, err := customID(image, modsDir)
	if err != nil {
		return nil, err
	}
	k := &Kernel{Package: "custom-" + id, Version: filepath.Base(modsDir), Vmlinuz: image, ModulesDir: modsDir,
		cacheDir: filepath.Join(cacheDir, "kernels", "custom-"+id)}
	k.Packages = []string{k.Package}
	if config == "" {
		for _, c := range []string{filepath.Join(modsDir, "build", ".config"), filepath.Join(filepath.Dir(image), "..", "..", "..", ".config")} {
			if exists(c) {
				config = c
				break
			}
		}
	}
	if config != "" && exists(config) {
		k.Config = config
	}
	if p := filepath.Join(k.cacheDir, "vmlinux"); exists(p) {
		k.Vmlinux = p
	}
	return k, nil
}

// customID names a custom kernel by its contents: the image's bytes, and each module file's path, size and
// modification time (hashing every module's bytes would read hundreds of megabytes on each run).
func customID(image, modsDir string) (string, error) {
	h := sha256.New()
	f, err := os.Open(image)
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("lab: read %s: %w", image, err)
	}
	var files []string
	err = filepath.WalkDir(modsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == "source") {
			return filepath.SkipDir // the source tree, not what the lab loads (usually symbolic links, not followed)
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(modsDir, p)
			files = append(files, fmt.Sprintf("%s\x00%d\x00%d", rel, fi.Size(), fi.ModTime().UnixNano()))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("lab: index %s: %w", modsDir, err)
	}
	sort.Strings(files)
	fmt.Fprintf(h, "\x00%s\x00%s", filepath.Base(modsDir), strings.Join(files, "\x00"))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
