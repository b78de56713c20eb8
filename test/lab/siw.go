package lab

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/lab/internal/kmod"
	"github.com/goverbs/goverbs/test/lab/internal/proto"
)

// ProviderEnv selects the lab's software RDMA provider: "rxe" (the default:
// rdma_rxe, device rxe0) or "siw" (soft-iWARP, device siw0). Config.Provider
// overrides it for one run.
const ProviderEnv = "GOVERBS_LAB_PROVIDER"

// The lab's providers.
const (
	ProviderRXE = "rxe"             // rdma_rxe, Debian's own module: rxe0 on veth0
	ProviderSIW = proto.ProviderSIW // siw, built out of tree from Debian's source (EnsureSIW): siw0 on veth0
)

// SIWDevice is the soft-iWARP device the lab creates with ProviderSIW.
const SIWDevice = proto.SIWDevice

// ProviderSelector returns GOVERBS_LAB_PROVIDER, checked ("" means rxe).
func ProviderSelector() (string, error) { return CheckProvider(os.Getenv(ProviderEnv)) }

// CheckProvider checks a provider name given other than through
// GOVERBS_LAB_PROVIDER and returns it ("" is rxe).
func CheckProvider(p string) (string, error) {
	switch p = strings.TrimSpace(p); p {
	case "":
		return ProviderRXE, nil
	case ProviderRXE, ProviderSIW:
		return p, nil
	}
	return "", fmt.Errorf("lab: provider %s=%q: want rxe or siw", ProviderEnv, p)
}

// DeviceFor is the lab's RDMA device with provider p: rxe0 or siw0.
func DeviceFor(p string) string {
	if p == ProviderSIW {
		return SIWDevice
	}
	return Device
}

// provider is the run's provider: Config.Provider, else GOVERBS_LAB_PROVIDER, else rxe.
func (cfg *Config) provider() (string, error) {
	if strings.TrimSpace(cfg.Provider) != "" {
		return CheckProvider(cfg.Provider)
	}
	return ProviderSelector()
}

// siwPreload are loaded before siw's own dependencies where the kernel has them as modules: up to 6.14
// libcrc32c (which siw's depends= names) asks the crypto API for "crc32c", a soft dependency modinfo does not
// list, and there is no modprobe in the VM to load it on demand.
var siwPreload = []string{"crc32c_generic"}

// SIWModule is a soft-iWARP module built for one lab kernel (EnsureSIW).
type SIWModule struct {
	Path string // siw.ko in the cache: CacheDir/siw/<kernel version>/siw.ko; "" when InTree
	Info SIWBuild
	// InTree: the kernel has siw itself (a kernel you built with CONFIG_RDMA_SIW), loaded from its own
	// modules like the others (or built in).
	InTree bool
}

// SIWBuild records how a siw.ko was built (CacheDir/siw/<kernel version>/build.json).
type SIWBuild struct {
	Kernel        string    // the kernel release it is for (uname -r), e.g. 6.1.0-56-amd64
	SourcePackage string    // e.g. linux-source-6.1
	SourceVersion string    // the kernel package's version, e.g. 6.1.192-2
	Packages      []string  // "package version" of every Debian package the build used: headers, kbuild, toolchain
	Compiler      string    // the compiler that built it, e.g. "gcc-12 (host): gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0"
	Refused       string    // the compiler tried first that the kernel's build refused, and why ("" if none)
	BuildSeconds  float64   // download, unpack and compile, wall time
	Size          int64     // bytes of siw.ko (debug info stripped)
	Depends       []string  // its modinfo depends=
	Vermagic      string    // its modinfo vermagic=
	Built         time.Time // when
}

// siwDir is where the siw.ko of kernel version v is cached.
func siwDir(cacheDir, v string) string { return filepath.Join(cacheDir, "siw", v) }

// loadSIW returns the cached module of kernel version v, if complete.
func loadSIW(cacheDir, v string) (*SIWModule, error) {
	dir := siwDir(cacheDir, v)
	b, err := os.ReadFile(filepath.Join(dir, "build.json"))
	if err != nil {
		return nil, err
	}
	m := &SIWModule{Path: filepath.Join(dir, "siw.ko")}
	if err := json.Unmarshal(b, &m.Info); err != nil {
		return nil, err
	}
	if !exists(m.Path) {
		return nil, fs.ErrNotExist
	}
	return m, nil
}

// EnsureSIW returns the soft-iWARP module for kernel k (selected by sel, as for EnsureKernelFor), building it
// the first time: Debian builds no siw (CONFIG_RDMA_SIW is not set), so the lab compiles
// drivers/infiniband/sw/siw of the kernel's own source package (linux-source-X.Y at the kernel's version)
// against its own headers (linux-headers-<abi>-amd64 and -common, linux-kbuild), all downloaded with apt-get
// download the way the kernel is (the host's apt for 6.1, the private configuration for the others), with
// make -C <headers> M=<siw> CONFIG_RDMA_SIW=m modules. The compiler: the host's gcc-12 first; where the
// kernel's build refuses it (6.12 and 7.x pass gcc-14 flags such as -fmin-function-alignment), the kernel's
// own compiler (CONFIG_CC_VERSION_TEXT: trixie's gcc-14 at its exact version), unpacked with its libraries
// into CacheDir/siw/toolchain/ (dpkg -x, as the peer roots). trixie's kbuild tools (modpost, objtool) and
// its gcc need a newer C library than bookworm's: they are run through that root's dynamic loader. Module BTF
// is not generated (it needs pahole; loading does not need it). The build's output is shown only when it
// fails; the error names the step and the package.
func EnsureSIW(ctx context.Context, cacheDir, sel string, k *Kernel, log io.Writer) (*SIWModule, error) {
	if s, _ := CheckKernelSelector(sel); s == CustomSelector {
		tree, err := kmod.OpenTree(k.ModulesDir)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		if _, ok := tree.Path("siw"); !ok && !tree.Builtin("siw") {
			return nil, fmt.Errorf("lab: kernel %s (%s) has no siw: build it with CONFIG_RDMA_SIW=m or =y (the lab builds siw.ko from source for Debian's kernels only)", k.Version, k.ModulesDir)
		}
		return &SIWModule{InTree: true, Info: SIWBuild{Kernel: k.Version}}, nil
	}
	if m, err := loadSIW(cacheDir, k.Version); err == nil {
		return m, nil
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if m, err := loadSIW(cacheDir, k.Version); err == nil {
		return m, nil // another process built it meanwhile
	}
	b := &siwBuilder{ctx: ctx, cacheDir: cacheDir, k: k, log: log, start: time.Now()}
	if sel, err = CheckKernelSelector(sel); err != nil {
		return nil, err
	}
	if sel != "" && sel != "6.1" {
		b.apt = &PrivateApt{Dir: filepath.Join(cacheDir, "apt")}
		if err := b.apt.ensure(ctx, false, log); err != nil {
			return nil, err
		}
	}
	m, err := b.build()
	if err != nil {
		return nil, fmt.Errorf("lab: build siw.ko for kernel %s: %w", k.Version, err)
	}
	return m, nil
}

// siwBuilder is one build of siw.ko.
type siwBuilder struct {
	ctx      context.Context
	cacheDir string
	k        *Kernel
	apt      *PrivateApt // nil: the host's apt (bookworm's 6.1)
	log      io.Writer
	start    time.Time
	info     SIWBuild
	tc       *toolchain // the kernel's compiler and C library, when needed
}

func (b *siwBuilder) build() (*SIWModule, error) {
	k := b.k
	dir := siwDir(b.cacheDir, k.Version)
	b.info.Kernel = k.Version
	// The kernel package's version names the source and headers to build against.
	kdebs, _ := filepath.Glob(filepath.Join(b.cacheDir, k.Package+"_*.deb"))
	if len(kdebs) == 0 {
		return nil, fmt.Errorf("find the kernel's version: %s_*.deb is not in %s (delete %s to download the kernel again)", k.Package, b.cacheDir, kernelDir(k))
	}
	sort.Strings(kdebs)
	version := debFileVersion(kdebs[len(kdebs)-1])
	series := seriesOf(version)
	if series == "" {
		return nil, fmt.Errorf("kernel package version %q has no major.minor", version)
	}
	abi, ok := strings.CutSuffix(k.Version, "-amd64")
	if !ok {
		return nil, fmt.Errorf("kernel release %s is not an amd64 flavour", k.Version)
	}
	b.info.SourcePackage, b.info.SourceVersion = "linux-source-"+series, version
	fmt.Fprintf(b.log, "lab: building siw.ko for %s from %s %s (once) into %s\n", k.Version, b.info.SourcePackage, version, dir)

	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), ".build-"+k.Version+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	// 1. The siw sources, kept (a few hundred KiB) in the cache; the source package (≈150 MB) is not.
	srcDir := filepath.Join(dir, "src")
	if !exists(filepath.Join(srcDir, "Makefile")) {
		deb, err := b.download(b.info.SourcePackage, version)
		if err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), ".src-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if err := extractSIWSource(b.ctx, deb, series, tmp); err != nil {
			return nil, fmt.Errorf("extract drivers/infiniband/sw/siw from %s: %w", filepath.Base(deb), err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		os.RemoveAll(srcDir)
		if err := os.Rename(tmp, srcDir); err != nil {
			return nil, err
		}
		os.Remove(deb)
	} else {
		b.info.Packages = append(b.info.Packages, b.info.SourcePackage+" "+version)
	}

	// 2. The headers and kbuild, unpacked into a build root of this build's own.
	hdr, err := b.download("linux-headers-"+k.Version, version)
	if err != nil {
		return nil, err
	}
	common, err := b.download("linux-headers-"+abi+"-common", version)
	if err != nil {
		return nil, err
	}
	deps, err := exec.CommandContext(b.ctx, "dpkg-deb", "-f", hdr, "Depends").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb -f %s Depends: %w", hdr, err)
	}
	kbuildPkg := regexp.MustCompile(`\blinux-kbuild-[^\s,()]+`).FindString(string(deps))
	if kbuildPkg == "" {
		return nil, fmt.Errorf("linux-headers-%s depends on no linux-kbuild-* package (%s)", k.Version, strings.TrimSpace(string(deps)))
	}
	// The kbuild package of the kernel's own version where the archive still has it (bookworm's security
	// suite keeps only the newest of a series: linux-kbuild-6.1 6.1.192-3 for the 6.1.192-2 kernel).
	kbuild, err := b.download(kbuildPkg, version)
	if err != nil {
		fmt.Fprintf(b.log, "lab: %s %s is no longer in the archive; taking its newest %s\n", kbuildPkg, version, kbuildPkg)
		if kbuild, err = b.download(kbuildPkg, ""); err != nil {
			return nil, err
		}
	}
	root := filepath.Join(work, "root")
	for _, deb := range []string{hdr, common, kbuild} {
		if out, err := exec.CommandContext(b.ctx, "dpkg", "-x", deb, root).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("dpkg -x %s: %w: %s", deb, err, tail(out, 2000))
		}
	}
	build := filepath.Join(root, "usr", "src", "linux-headers-"+k.Version)
	// The headers' Makefile includes /usr/src/linux-headers-<abi>-common/Makefile (and 7.x sets KBUILD_OUTPUT
	// to /usr/src/...): point it into the build root.
	mk, err := os.ReadFile(filepath.Join(build, "Makefile"))
	if err != nil {
		return nil, fmt.Errorf("headers package %s: %w", filepath.Base(hdr), err)
	}
	mk = bytes.ReplaceAll(mk, []byte("/usr/src/"), []byte(filepath.Join(root, "usr", "src")+"/"))
	if err := os.WriteFile(filepath.Join(build, "Makefile"), mk, 0o644); err != nil {
		return nil, err
	}
	config, err := os.ReadFile(filepath.Join(build, ".config"))
	if err != nil {
		return nil, fmt.Errorf("headers package %s: %w", filepath.Base(hdr), err)
	}
	ccText := configString(config, "CONFIG_CC_VERSION_TEXT")

	// 3. Tools of the headers' release that need a newer C library than the host's run through the
	// kernel compiler's root, with its C library.
	kbuildDir := filepath.Join(root, "usr", "lib", kbuildPkg)
	newer, err := needNewerLibc(kbuildDir)
	if err != nil {
		return nil, err
	}
	if len(newer) > 0 {
		if b.tc, err = b.toolchain(ccText); err != nil {
			return nil, fmt.Errorf("%s's tools (%s) need a newer C library than the host's: %w", kbuildPkg, relNames(kbuildDir, newer), err)
		}
		for _, f := range newer {
			if err := b.tc.wrap(f); err != nil {
				return nil, err
			}
		}
	}

	// 4. Compile: the host's gcc-12 first, then the kernel's own compiler if the build refuses it.
	var out []byte
	built := false
	if gcc, err := exec.LookPath("gcc-12"); err == nil {
		out, err = b.make(build, srcDir, work, gcc)
		if err == nil {
			b.info.Compiler = "gcc-12 (host): " + firstLine(b.ccVersion(gcc))
			built = true
		} else if !refusedCompiler(out) {
			return nil, fmt.Errorf("make M=drivers/infiniband/sw/siw with gcc-12 (kernel built with %q): %w:\n%s", ccText, err, tail(out, 4000))
		} else {
			b.info.Refused = refusedLine(out)
		}
	} else {
		b.info.Refused = "gcc-12: not installed on the host"
	}
	if !built {
		if b.tc == nil {
			if b.tc, err = b.toolchain(ccText); err != nil {
				return nil, fmt.Errorf("the kernel's build refuses %s; getting its own compiler (%s): %w", b.info.Refused, ccText, err)
			}
		}
		if out, err = b.make(build, srcDir, work, b.tc.cc); err != nil {
			return nil, fmt.Errorf("make M=drivers/infiniband/sw/siw with %s: %w:\n%s", b.tc.name, err, tail(out, 4000))
		}
		b.info.Compiler = b.tc.name + " (" + b.tc.dir + "): " + firstLine(b.ccVersion(b.tc.cc))
	}
	if b.tc != nil {
		b.info.Packages = append(b.info.Packages, b.tc.packages...)
	}

	// 5. Strip the debug info (as Debian's modules are), check and record.
	ko := filepath.Join(work, "siw.ko")
	if out, err := exec.CommandContext(b.ctx, "objcopy", "--strip-debug", filepath.Join(work, "siw", "siw.ko"), ko).CombinedOutput(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, missingTool("objcopy", "binutils")
		}
		return nil, fmt.Errorf("objcopy --strip-debug siw.ko: %w: %s", err, tail(out, 2000))
	}
	img, err := os.ReadFile(ko)
	if err != nil {
		return nil, err
	}
	mi, err := kmod.ReadModinfoELF(img)
	if err != nil {
		return nil, fmt.Errorf("built siw.ko: %w", err)
	}
	b.info.Vermagic, b.info.Depends = mi.Get("vermagic"), mi.Depends()
	if !strings.HasPrefix(b.info.Vermagic, k.Version+" ") {
		return nil, fmt.Errorf("built siw.ko has vermagic %q, not kernel %s's", b.info.Vermagic, k.Version)
	}
	b.info.Size = int64(len(img))
	b.info.Built = time.Now().UTC().Truncate(time.Second)
	b.info.BuildSeconds = float64(time.Since(b.start).Milliseconds()) / 1000
	js, _ := json.MarshalIndent(b.info, "", "  ")
	if err := writeFileAtomic(filepath.Join(dir, "siw.ko"), img, 0o644); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, "build.json"), append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(b.log, "lab: built siw.ko for %s with %s in %.1fs (%d KiB)\n", k.Version, strings.SplitN(b.info.Compiler, ":", 2)[0], b.info.BuildSeconds, b.info.Size>>10)
	return loadSIW(b.cacheDir, k.Version)
}

// make builds the module out of tree: a copy of the siw sources in work/siw, against the headers in build,
// with the compiler cc. It returns make's output (shown only when it fails).
func (b *siwBuilder) make(build, srcDir, work, cc string) ([]byte, error) {
	m := filepath.Join(work, "siw")
	os.RemoveAll(m)
	if err := os.CopyFS(m, os.DirFS(srcDir)); err != nil {
		return nil, err
	}
	args := []string{"-C", build, "M=" + m, "CONFIG_RDMA_SIW=m", "CONFIG_DEBUG_INFO_BTF_MODULES=", "CC=" + cc,
		fmt.Sprintf("-j%d", runtime.NumCPU()), "modules"}
	cmd := exec.CommandContext(b.ctx, "make", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if errors.Is(err, exec.ErrNotFound) {
		return nil, missingTool("make", "make")
	}
	if err == nil && !exists(filepath.Join(m, "siw.ko")) {
		err = errors.New("no siw.ko")
	}
	return out, err
}

func (b *siwBuilder) ccVersion(cc string) string {
	out, _ := exec.CommandContext(b.ctx, cc, "--version").Output()
	return string(out)
}

// download returns the cached .deb of pkg at version ("" for apt's candidate), downloading it with apt-get
// download (pkg=version) into the cache as the kernel's packages are.
func (b *siwBuilder) download(pkg, version string) (string, error) {
	pat := pkg + "_*.deb"
	if version != "" {
		pat = pkg + "_" + strings.ReplaceAll(version, ":", "%3a") + "_*.deb"
	}
	if debs, _ := filepath.Glob(filepath.Join(b.cacheDir, pat)); len(debs) > 0 {
		sort.Strings(debs)
		b.info.Packages = append(b.info.Packages, pkg+" "+debFileVersion(debs[len(debs)-1]))
		return debs[len(debs)-1], nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", missingTool("apt-get", "apt")
	}
	tmp, err := os.MkdirTemp(b.cacheDir, ".download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	spec := pkg
	if version != "" {
		spec += "=" + version
	}
	fmt.Fprintf(b.log, "lab: downloading %s (once) into %s\n", spec, b.cacheDir)
	cmd := exec.CommandContext(b.ctx, "apt-get", append(b.apt.args(), "download", spec)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		where := "the host's apt sources"
		if b.apt != nil {
			where = "the private configuration " + b.apt.Dir
		}
		return "", fmt.Errorf("apt-get download %s (%s): %w: %s", spec, where, err, tail(out, 1000))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, pkg+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: expected one .deb, found %d", spec, len(debs))
	}
	dst := filepath.Join(b.cacheDir, filepath.Base(debs[0]))
	if err := os.Rename(debs[0], dst); err != nil {
		return "", err
	}
	b.info.Packages = append(b.info.Packages, pkg+" "+debFileVersion(dst))
	return dst, nil
}

// debFileVersion is the version in a .deb's file name (name_version_arch.deb).
func debFileVersion(path string) string {
	f := strings.Split(strings.TrimSuffix(filepath.Base(path), ".deb"), "_")
	if len(f) != 3 {
		return ""
	}
	return strings.ReplaceAll(f[1], "%3a", ":")
}

var seriesRE = regexp.MustCompile(`^(?:[0-9]+:)?([0-9]+\.[0-9]+)[.~+-]`)

// seriesOf is the major.minor of a kernel package version: 6.1.192-2 → 6.1, 7.3.4-1~bpo13+1 → 7.3.
func seriesOf(version string) string {
	if m := seriesRE.FindStringSubmatch(version); m != nil {
		return m[1]
	}
	return ""
}

// configString is the value of a string option of a kernel .config ("" if absent).
func configString(config []byte, key string) string {
	for _, line := range strings.Split(string(config), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// refusedCompiler reports whether a failed build's output says the compiler refused a flag the kernel's
// build passes (a compiler older than the kernel's).
func refusedCompiler(out []byte) bool { return refusedLine(out) != "" }

func refusedLine(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "unrecognized command-line option") || strings.Contains(line, "unrecognized command line option") ||
			strings.Contains(line, "unrecognized argument in option") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func relNames(dir string, files []string) string {
	var n []string
	for _, f := range files {
		r, _ := filepath.Rel(dir, f)
		n = append(n, r)
	}
	return strings.Join(n, ", ")
}

// extractSIWSource copies drivers/infiniband/sw/siw out of linux-source-<series>.tar.xz inside the source
// package deb into dst: dpkg-deb --fsys-tarfile | tar -xO (the inner tarball) | xz -dc | tar -x (the
// directory), about 10 s for the whole archive.
func extractSIWSource(ctx context.Context, deb, series, dst string) error {
	for _, t := range []struct{ tool, pkg string }{{"dpkg-deb", "dpkg"}, {"tar", "tar"}, {"xz", "xz-utils"}} {
		if _, err := exec.LookPath(t.tool); err != nil {
			return missingTool(t.tool, t.pkg)
		}
	}
	const script = `dpkg-deb --fsys-tarfile "$1" | tar -xO "./usr/src/linux-source-$2.tar.xz" | xz -dc | tar -x -C "$3" --strip-components=5 "linux-source-$2/drivers/infiniband/sw/siw"`
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", script, "sh", deb, series, dst).CombinedOutput()
	if !exists(filepath.Join(dst, "Makefile")) || !exists(filepath.Join(dst, "siw_main.c")) {
		return fmt.Errorf("no linux-source-%s/drivers/infiniband/sw/siw/{Makefile,siw_main.c} in usr/src/linux-source-%s.tar.xz (%v): %s", series, series, err, tail(out, 2000))
	}
	return nil
}

// hostLibcVersions are the symbol versions the host's C library (and libm, libstdc++) define.
func hostLibcVersions() map[string]bool {
	have := map[string]bool{}
	for _, lib := range []string{"libc.so.6", "libm.so.6", "libstdc++.so.6"} {
		for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"} {
			f, err := elf.Open(filepath.Join(d, lib))
			if err != nil {
				continue
			}
			vs, _ := f.DynamicVersions()
			f.Close()
			for _, v := range vs {
				have[lib+" "+v.Name] = true
			}
			break
		}
	}
	return have
}

// needNewerLibc lists the dynamically linked executables under dir that need a version of libc, libm or
// libstdc++ the host's do not define (a newer Debian release's build tools on an older host).
func needNewerLibc(dir string) ([]string, error) {
	have := hostLibcVersions()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, err := d.Info(); err != nil || fi.Mode()&0o111 == 0 {
			return err
		}
		f, err := elf.Open(p)
		if err != nil {
			return nil // a script
		}
		defer f.Close()
		interp := false
		for _, prog := range f.Progs {
			interp = interp || prog.Type == elf.PT_INTERP
		}
		if !interp {
			return nil // a shared library or a static program
		}
		needs, _ := f.DynamicVersionNeeds()
		for _, n := range needs {
			if n.Name != "libc.so.6" && n.Name != "libm.so.6" && n.Name != "libstdc++.so.6" {
				continue
			}
			for _, dep := range n.Needs {
				if !have[n.Name+" "+dep.Dep] {
					files = append(files, p)
					return nil
				}
			}
		}
		return nil
	})
	return files, err
}

// toolchain is a Debian release's compiler unpacked with its C library (CacheDir/siw/toolchain/<name>):
// programs in it run through its own dynamic loader.
type toolchain struct {
	name     string   // e.g. x86_64-linux-gnu-gcc-14 14.2.0-19
	dir      string   // the root
	cc       string   // the compiler driver (a wrapper script)
	packages []string // "package version" of what it is made of
}

// toolchainSuite is the Debian suite the lab takes the kernels' compiler from: trixie's gcc-14 built 6.12 and
// trixie-backports' 7.x.
const toolchainSuite = "trixie"

// toolchainLibs are the compiler's runtime libraries (gcc-14's and cpp-14's Depends in trixie, with libc6) and
// libelf (objtool), taken from toolchainSuite.
var toolchainLibs = []string{"libc6", "libgcc-s1", "libstdc++6", "libgmp10", "libisl23", "libmpc3", "libmpfr6", "libzstd1", "zlib1g", "libelf1t64"}

var ccTextRE = regexp.MustCompile(`^(?:x86_64-linux-gnu-)?gcc-([0-9]+) \(Debian ([^)]+)\)`)

// toolchain returns the root with the compiler the kernel was built with (ccText: its CONFIG_CC_VERSION_TEXT,
// e.g. "x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0"), making it the first time.
func (b *siwBuilder) toolchain(ccText string) (*toolchain, error) {
	m := ccTextRE.FindStringSubmatch(ccText)
	if m == nil {
		return nil, fmt.Errorf("the kernel's compiler %q is not a Debian gcc-N", ccText)
	}
	major, version := m[1], m[2]
	if b.apt == nil {
		b.apt = &PrivateApt{Dir: filepath.Join(b.cacheDir, "apt")}
		if err := b.apt.ensure(b.ctx, false, b.log); err != nil {
			return nil, err
		}
	}
	base := filepath.Join(b.cacheDir, "siw", "toolchain", "gcc-"+major+"_"+version)
	tc := &toolchain{name: "x86_64-linux-gnu-gcc-" + major + " " + version, dir: filepath.Join(base, "root")}
	tc.cc = filepath.Join(tc.dir, "usr", "bin", "x86_64-linux-gnu-gcc-"+major)
	if done, err := os.ReadFile(filepath.Join(base, "complete")); err == nil {
		tc.packages = strings.Split(strings.TrimSpace(string(done)), "\n")
		return tc, nil
	}
	debDir := filepath.Join(base, "debs")
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return nil, err
	}
	var want []string
	for _, p := range []string{"gcc-" + major, "gcc-" + major + "-x86-64-linux-gnu", "cpp-" + major, "cpp-" + major + "-x86-64-linux-gnu", "gcc-" + major + "-base", "libgcc-" + major + "-dev"} {
		want = append(want, p+"="+version)
	}
	for _, p := range toolchainLibs {
		want = append(want, p+"/"+toolchainSuite)
	}
	var missing []string
	for _, w := range want {
		name, _, _ := strings.Cut(strings.Split(w, "/")[0], "=")
		if m, _ := filepath.Glob(filepath.Join(debDir, name+"_*.deb")); len(m) == 0 {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(b.log, "lab: downloading %d packages of %s's compiler gcc-%s %s (once) into %s\n", len(missing), toolchainSuite, major, version, debDir)
		cmd := exec.CommandContext(b.ctx, "apt-get", append(b.apt.args(), append([]string{"download"}, missing...)...)...)
		cmd.Dir = debDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("apt-get download %s (private configuration %s): %w: %s", strings.Join(missing, " "), b.apt.Dir, err, tail(out, 2000))
		}
	}
	debs, _ := filepath.Glob(filepath.Join(debDir, "*.deb"))
	sort.Strings(debs)
	tmp, err := os.MkdirTemp(base, ".root-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, deb := range debs {
		if out, err := exec.CommandContext(b.ctx, "dpkg", "-x", deb, tmp).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("dpkg -x %s: %w: %s", deb, err, tail(out, 2000))
		}
		f := strings.Split(strings.TrimSuffix(filepath.Base(deb), ".deb"), "_")
		tc.packages = append(tc.packages, f[0]+" "+debFileVersion(deb))
	}
	os.RemoveAll(tc.dir)
	if err := os.Rename(tmp, tc.dir); err != nil {
		return nil, err
	}
	if !exists(filepath.Join(tc.dir, tc.loader())) {
		return nil, fmt.Errorf("no %s in %s after unpacking %d packages", tc.loader(), tc.dir, len(debs))
	}
	// The driver and the compilers proper need the root's C library.
	for _, d := range []string{filepath.Join(tc.dir, "usr", "bin"), filepath.Join(tc.dir, "usr", "libexec", "gcc")} {
		newer, err := needNewerLibc(d)
		if err != nil {
			return nil, err
		}
		for _, f := range newer {
			if err := tc.wrap(f); err != nil {
				return nil, err
			}
		}
	}
	if !exists(tc.cc) {
		return nil, fmt.Errorf("no %s after unpacking %d packages", tc.cc, len(debs))
	}
	if err := os.WriteFile(filepath.Join(base, "complete"), []byte(strings.Join(tc.packages, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return tc, nil
}

func (tc *toolchain) loader() string { return "usr/lib64/ld-linux-x86-64.so.2" }

// wrap replaces the executable f by a script that runs it (renamed f.lab-real) through the toolchain root's
// dynamic loader and libraries, under its own name (gcc finds cc1 and its headers relative to argv[0]).
func (tc *toolchain) wrap(f string) error {
	real := f + ".lab-real"
	if err := os.Rename(f, real); err != nil {
		return err
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	script := fmt.Sprintf("#!/bin/sh\n# goverbs lab: %s needs a newer C library than the host's\nexec %s --library-path %s --argv0 \"$0\" %s \"$@\"\n",
		filepath.Base(f), q(filepath.Join(tc.dir, tc.loader())), q(filepath.Join(tc.dir, "usr", "lib", "x86_64-linux-gnu")), q(real))
	return os.WriteFile(f, []byte(script), 0o755)
}
