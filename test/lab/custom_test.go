package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A kernel you built is described from its image and modules_install output, named by their contents, and
// its config found in the build tree; what the lab derives from it lives in the cache, never in the tree.
func TestCustomKernel(t *testing.T) {
	tree := t.TempDir()
	image := filepath.Join(tree, "arch", "x86", "boot", "bzImage")
	mods := filepath.Join(t.TempDir(), "lib", "modules", "6.99.0-rc1+")
	for _, d := range []string{filepath.Dir(image), filepath.Join(mods, "kernel", "drivers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(image, "not really a bzImage")
	write(filepath.Join(tree, ".config"), "CONFIG_PVH=y\n")
	write(filepath.Join(mods, "modules.builtin"), "kernel/drivers/veth.ko\n")
	ko := filepath.Join(mods, "kernel", "drivers", "rdma_rxe.ko")
	write(ko, "module")
	if err := os.Symlink(tree, filepath.Join(mods, "build")); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	modPath := filepath.Dir(filepath.Dir(filepath.Dir(mods)))

	k, err := loadCustomKernel(cache, image, modPath, "")
	if err != nil {
		t.Fatal(err)
	}
	if k.Version != "6.99.0-rc1+" || k.Vmlinuz != image || k.ModulesDir != mods || !strings.HasPrefix(k.Package, "custom-") ||
		k.Config != filepath.Join(mods, "build", ".config") || !strings.HasPrefix(kernelDir(k), cache) {
		t.Errorf("custom kernel %+v (derived files in %s)", k, kernelDir(k))
	}
	again, err := loadCustomKernel(cache, image, mods, "") // the lib/modules/<release> directory itself
	if err != nil || again.Package != k.Package {
		t.Errorf("same kernel named %q, then %q (%v)", k.Package, again.Package, err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(ko, future, future); err != nil {
		t.Fatal(err)
	}
	if rebuilt, err := loadCustomKernel(cache, image, modPath, ""); err != nil || rebuilt.Package == k.Package {
		t.Errorf("a rebuilt module kept the name %q (%v)", k.Package, err)
	}

	if _, err := loadCustomKernel(cache, image, t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "lib/modules/<release>") {
		t.Errorf("modules directory without lib/modules: %v", err)
	}
	if _, err := loadCustomKernel(cache, filepath.Join(tree, "nope"), modPath, ""); err == nil || !strings.Contains(err.Error(), KernelImageEnv) {
		t.Errorf("missing image: %v", err)
	}
	t.Setenv(KernelImageEnv, "")
	if _, err := EnsureKernelFor(t.Context(), cache, CustomSelector, os.Stderr); err == nil || !strings.Contains(err.Error(), KernelModulesEnv) {
		t.Errorf("custom without its variables: %v", err)
	}
	if sel, err := CheckKernelSelector(" custom "); err != nil || sel != CustomSelector {
		t.Errorf("CheckKernelSelector(custom) = %q, %v", sel, err)
	}
}
