package lab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/test/lab/internal/cpio"
	"github.com/goverbs/goverbs/test/lab/internal/kmod"
	"github.com/goverbs/goverbs/test/lab/internal/proto"
)

// modulePath is the Go module the lab's init program is built from.
const modulePath = "github.com/goverbs/goverbs"

// initPackage is the init program, relative to the module root.
const initPackage = "./test/lab/internal/labinit/cmd/labinit"

// Modules are the kernel modules the VM loads (their dependencies are added
// from modinfo), in the order they are wanted. Those in OptionalModules are
// loaded only when the kernel has them.
var Modules = []string{
	"virtio_pci", "virtio_console",
	"9pnet_virtio", "9p",
	"veth",
	"crc32_generic",
	"ib_core", "ib_uverbs", "ib_umad",
	"udp_tunnel", "ip6_udp_tunnel", "rdma_rxe",
	"configfs", "iw_cm", "ib_cm", "rdma_cm", "rdma_ucm",
	"sch_netem", // tc netem, for the fault tests (test/faults)
}

// OptionalModules are wanted where they exist. crc32_generic: up to 6.14 rxe
// asks the crypto API for "crc32" (a soft dependency modinfo does not list),
// so it must be loaded before rdma_rxe, or "rdma link add" fails with ENOENT
// (there is no modprobe in the VM). 6.15 switched rxe to the crc32 library
// ("RDMA/rxe: switch to using the crc32 library"), and 7.x has no
// crc32_generic at all (crc32 is lib/crc/crc32.ko, which rdma_rxe's depends=
// names, or built in).
//
// sch_netem: the fault tests need it; a kernel without it still boots the
// lab for everything else.
var OptionalModules = map[string]bool{"crc32_generic": true, "sch_netem": true}

// kernelModules is Modules less the optional ones tree has neither as a
// module nor built in.
func kernelModules(tree *kmod.Tree) []string {
	var mods []string
	for _, m := range Modules {
		if _, ok := tree.Path(m); OptionalModules[m] && !ok && !tree.Builtin(m) {
			continue
		}
		mods = append(mods, m)
	}
	return mods
}

// moduleRoot finds the goverbs source tree: $GOVERBS_LAB_SRC, the current
// directory or a parent of it, or the directory this file was compiled from.
func moduleRoot() (string, error) {
	isRoot := func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		return err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+modulePath+"\n"))
	}
	if d := os.Getenv("GOVERBS_LAB_SRC"); d != "" {
		if isRoot(d) {
			return filepath.Abs(d)
		}
		return "", fmt.Errorf("lab: GOVERBS_LAB_SRC=%s is not the %s module root", d, modulePath)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isRoot(d) {
				return d, nil
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if d := filepath.Join(filepath.Dir(file), "..", ".."); isRoot(d) {
			return filepath.Clean(d), nil
		}
	}
	return "", errors.New("lab: cannot find the goverbs source tree to build the VM's init from; run inside the module or set GOVERBS_LAB_SRC")
}

// initSources lists the non-test .go files of the init program's package
// and of every package of this module it imports, directly or not. (The
// other modules it uses are pinned by go.mod and go.sum.)
func initSources(root string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	var visit func(dir string) error
	visit = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		for _, e := range ents {
			name := e.Name()
			if !e.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(dir, name)
			files = append(files, path)
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(p, modulePath+"/"); ok {
					if err := visit(filepath.Join(root, filepath.FromSlash(rest))); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	err := visit(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(initPackage, "./"))))
	return files, err
}

// initSourceHash hashes what the init binary is built from.
func initSourceHash(ctx context.Context, root string) (string, error) {
	goVersion, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", errors.New("lab: go not found in PATH: the lab builds its VM init with the Go toolchain")
		}
		return "", fmt.Errorf("lab: go env GOVERSION: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "labinit v1\x00%s\x00", bytes.TrimSpace(goVersion))
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	srcs, err := initSources(root)
	if err != nil {
		return "", fmt.Errorf("lab: hash init sources: %w", err)
	}
	files = append(files, srcs...)
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !(errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(f, "go.sum")) {
			return "", fmt.Errorf("lab: hash init sources: %w", err)
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// ensureInit returns the path of the static init binary, building it with
// the host Go toolchain when its sources changed.
func ensureInit(ctx context.Context, cacheDir string) (path, hash string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	hash, err = initSourceHash(ctx, root)
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(cacheDir, "init", "labinit-"+hash)
	if exists(path) {
		return path, hash, nil
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if exists(path) {
		return path, hash, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", fmt.Errorf("lab: build init: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	defer os.Remove(tmp)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, initPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("lab: build init (go build %s in %s): %w: %s", initPackage, root, err, tail(out, 4000))
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", "", fmt.Errorf("lab: build init: %w", err)
	}
	pruneDir(filepath.Dir(path), path)
	return path, hash, nil
}

// ensureInitramfs returns the path of the initramfs for kernel k with the
// init binary initPath, building it (an uncompressed newc cpio) if needed.
// With siw (ProviderSIW) the archive also holds siw.ko, after the modules it
// needs; nil for rxe.
func ensureInitramfs(cacheDir string, k *Kernel, initPath, initHash string, siw *SIWModule) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "initramfs v2\x00%s\x00%s\x00%s\x00%s", initHash, k.Package, k.Version, strings.Join(Modules, ","))
	if siw != nil && siw.InTree {
		fmt.Fprintf(h, "\x00siw in tree\x00%s", strings.Join(siwPreload, ","))
	} else if siw != nil {
		ko, err := os.ReadFile(siw.Path)
		if err != nil {
			return "", fmt.Errorf("lab: build initramfs: %w", err)
		}
		fmt.Fprintf(h, "\x00siw\x00%x\x00%s", sha256.Sum256(ko), strings.Join(siwPreload, ","))
	}
	path := filepath.Join(cacheDir, "initramfs", hex.EncodeToString(h.Sum(nil))[:24]+".cpio")
	if exists(path) {
		return path, nil
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if exists(path) {
		return path, nil
	}
	data, err := buildInitramfs(k, initPath, siw)
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(path, data, 0o644); err != nil {
		return "", fmt.Errorf("lab: write initramfs: %w", err)
	}
	pruneDir(filepath.Dir(path), path)
	return path, nil
}

// buildInitramfs assembles the archive in memory.
func buildInitramfs(k *Kernel, initPath string, siw *SIWModule) ([]byte, error) {
	tree, err := kmod.OpenTree(k.ModulesDir)
	if err != nil {
		return nil, fmt.Errorf("lab: build initramfs: %w", err)
	}
	mods, err := tree.Closure(kernelModules(tree))
	if err != nil {
		return nil, fmt.Errorf("lab: build initramfs for kernel %s: %w", k.Version, err)
	}
	if siw != nil && siw.InTree {
		var roots []string
		for _, m := range append(kernelModules(tree), append(siwPreload, "siw")...) {
			if _, ok := tree.Path(m); ok || tree.Builtin(m) || !slices.Contains(siwPreload, m) {
				roots = append(roots, m)
			}
		}
		if mods, err = tree.Closure(roots); err != nil {
			return nil, fmt.Errorf("lab: build initramfs for kernel %s: %w", k.Version, err)
		}
	} else if siw != nil {
		if mods, err = withSIW(tree, mods, siw); err != nil {
			return nil, fmt.Errorf("lab: build initramfs for kernel %s: %w", k.Version, err)
		}
	}
	initBin, err := os.ReadFile(initPath)
	if err != nil {
		return nil, fmt.Errorf("lab: build initramfs: %w", err)
	}
	var buf bytes.Buffer
	w := cpio.NewWriter(&buf)
	for _, d := range []string{"dev", "proc", "sys", "host", "lab", "lab/ctl", proto.ModulesDir} {
		if err := w.WriteDir(d, 0o755); err != nil {
			return nil, err
		}
	}
	// The kernel opens /dev/console for init's stdio before devtmpfs exists.
	if err := w.WriteHeader(&cpio.Header{Name: "dev/console", Mode: cpio.TypeChar | 0o600, DevMajor: 5, DevMinor: 1}); err != nil {
		return nil, err
	}
	if err := w.WriteFile("init", 0o755, initBin); err != nil {
		return nil, err
	}
	var order strings.Builder
	for i, m := range mods {
		name := fmt.Sprintf("%02d-%s.ko", i, m.Name)
		if err := w.WriteFile(proto.ModulesDir+"/"+name, 0o644, m.Image); err != nil {
			return nil, err
		}
		order.WriteString(name + "\n")
	}
	if err := w.WriteFile(proto.ModulesOrder, 0o644, []byte(order.String())); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// withSIW appends to mods the out-of-tree siw.ko and, before it, the kernel's
// modules it needs (its modinfo depends=, their dependencies, and
// siwPreload where the kernel has them) that mods lacks.
func withSIW(tree *kmod.Tree, mods []kmod.Module, siw *SIWModule) ([]kmod.Module, error) {
	img, err := os.ReadFile(siw.Path)
	if err != nil {
		return nil, err
	}
	mi, err := kmod.ReadModinfoELF(img)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", siw.Path, err)
	}
	var roots []string
	for _, m := range siwPreload {
		if _, ok := tree.Path(m); ok {
			roots = append(roots, m)
		}
	}
	deps, err := tree.Closure(append(roots, mi.Depends()...))
	if err != nil {
		return nil, fmt.Errorf("siw.ko's dependencies: %w", err)
	}
	have := map[string]bool{}
	for _, m := range mods {
		have[m.Name] = true
	}
	for _, m := range deps {
		if !have[m.Name] {
			mods = append(mods, m)
			have[m.Name] = true
		}
	}
	return append(mods, kmod.Module{Name: "siw", Image: img}), nil
}
