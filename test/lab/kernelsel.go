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
	"regexp"
	"strings"
	"time"
)

// metaPackage is the Debian package whose dependency names the current kernel.
const metaPackage = "linux-image-amd64"

// resolveMaxAge is how long a resolved kernel package name (and the private
// apt lists) are trusted before apt is asked again.
const resolveMaxAge = 24 * time.Hour

// KernelEnv selects the lab's kernel: "6.1" (the default), "6.12", "newest",
// or any other Debian major.minor the private apt suites carry.
const KernelEnv = "GOVERBS_LAB_KERNEL"

// Matrix is the kernel matrix `make test` runs (labsuite -kernels all):
// bookworm's 6.1, the 6.12 LTS of trixie, and the newest Debian kernel.
var Matrix = []string{"6.1", "6.12", "newest"}

var selectorRE = regexp.MustCompile(`^(newest|[0-9]+\.[0-9]+)$`)

// KernelSelector returns GOVERBS_LAB_KERNEL, checked ("" means 6.1).
func KernelSelector() (string, error) {
	return CheckKernelSelector(os.Getenv(KernelEnv))
}

// CheckKernelSelector checks a kernel selector given other than through
// GOVERBS_LAB_KERNEL (Config.Kernel, EnsureKernelFor) and returns it trimmed
// ("" means 6.1).
func CheckKernelSelector(sel string) (string, error) {
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return "", nil
	}
	if sel == CustomSelector {
		return sel, nil
	}
	if !selectorRE.MatchString(sel) {
		return "", fmt.Errorf("lab: kernel selector %s=%q: want 6.1, 6.12, newest, another major.minor, or custom (a kernel you built: %s and %s)", KernelEnv, sel, KernelImageEnv, KernelModulesEnv)
	}
	return sel, nil
}

// PrivateApt is an apt configuration of the lab's own, in the cache
// (CacheDir/apt), that reaches the Debian suites the host's apt sources do
// not: trixie (6.12), trixie-backports and sid (the newest kernels). The
// system's apt configuration is never changed; only apt-get download and
// apt-cache run with it.
type PrivateApt struct{ Dir string }

// privateSuites are the suites the private configuration lists.
var privateSuites = []string{"trixie", "trixie-backports", "sid"}

// args returns apt's options for the private configuration (none for nil:
// the host's configuration).
func (a *PrivateApt) args() []string {
	if a == nil {
		return nil
	}
	return []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(a.Dir, "sources.list"),
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(a.Dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(a.Dir, "cache"),
		"-o", "Dir::State::status=" + filepath.Join(a.Dir, "status"),
		"-o", "Debug::NoLocking=1",
		"-o", "APT::Sandbox::User=root",
	}
}

// ensure writes the configuration and runs apt-get update with it when its
// lists are missing, older than resolveMaxAge, or force is set.
func (a *PrivateApt) ensure(ctx context.Context, force bool, log io.Writer) error {
	var src strings.Builder
	for _, s := range privateSuites {
		fmt.Fprintf(&src, "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n", s)
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(a.Dir, d), 0o755); err != nil {
			return fmt.Errorf("lab: private apt: %w", err)
		}
	}
	srcPath := filepath.Join(a.Dir, "sources.list")
	if b, err := os.ReadFile(srcPath); err != nil || string(b) != src.String() {
		if err := writeFileAtomic(srcPath, []byte(src.String()), 0o644); err != nil {
			return fmt.Errorf("lab: private apt: %w", err)
		}
		force = true
	}
	if !exists(filepath.Join(a.Dir, "status")) {
		if err := os.WriteFile(filepath.Join(a.Dir, "status"), nil, 0o644); err != nil {
			return fmt.Errorf("lab: private apt: %w", err)
		}
	}
	stamp := filepath.Join(a.Dir, "updated")
	fresh := func() bool {
		fi, err := os.Stat(stamp)
		return err == nil && !force && time.Since(fi.ModTime()) < resolveMaxAge
	}
	if fresh() {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return missingTool("apt-get", "apt")
	}
	// One apt-get update at a time (the configuration runs apt without its own locks).
	unlock, err := lockCache(filepath.Dir(a.Dir))
	if err != nil {
		return err
	}
	defer unlock()
	if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < time.Minute {
		return nil // another process just updated
	}
	fmt.Fprintf(log, "lab: apt-get update for %s (private configuration in %s)\n", strings.Join(privateSuites, ", "), a.Dir)
	out, err := exec.CommandContext(ctx, "apt-get", append(a.args(), "update")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: apt-get update (private configuration %s): %w: %s", a.Dir, err, tail(out, 2000))
	}
	return writeFileAtomic(stamp, nil, 0o644)
}

// stampPath is where the packages a selector resolved to are remembered.
func stampPath(cacheDir, sel string) string {
	if sel == "" || sel == "6.1" {
		return filepath.Join(cacheDir, "kernel-package")
	}
	return filepath.Join(cacheDir, "kernel-package-"+sel)
}

// resolveKernelPackages returns the packages that make up the kernel sel
// selects, and the private apt configuration to download them with (nil:
// the host's). Results are remembered for resolveMaxAge.
func resolveKernelPackages(ctx context.Context, cacheDir, sel string, force bool, log io.Writer) ([]string, *PrivateApt, error) {
	var apt *PrivateApt
	if sel != "" && sel != "6.1" {
		apt = &PrivateApt{Dir: filepath.Join(cacheDir, "apt")}
	}
	if p := os.Getenv("GOVERBS_LAB_KERNEL_PACKAGE"); p != "" {
		if v, ok := strings.CutPrefix(p, "linux-binary-unsigned-"); ok {
			return splitPackages(v), apt, ensureIf(ctx, apt, log)
		}
		return []string{p}, apt, ensureIf(ctx, apt, log)
	}
	stamp := stampPath(cacheDir, sel)
	var previous []string
	if b, err := os.ReadFile(stamp); err == nil {
		previous = strings.Fields(string(b))
		if fi, err := os.Stat(stamp); err == nil && !force && time.Since(fi.ModTime()) < resolveMaxAge && len(previous) > 0 {
			return previous, apt, nil
		}
	}
	if _, err := exec.LookPath("apt-cache"); err != nil {
		return nil, apt, missingTool("apt-cache", "apt")
	}
	var pkgs []string
	if apt == nil {
		cmd := exec.CommandContext(ctx, "apt-cache", "depends", metaPackage)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, nil, fmt.Errorf("lab: resolve kernel: apt-cache depends %s: %w: %s", metaPackage, err, strings.TrimSpace(stderr.String()))
		}
		name, err := parseAptDepends(out)
		if err != nil {
			return nil, nil, err
		}
		if sel == "6.1" && !strings.HasPrefix(name, "linux-image-6.1.") {
			return nil, nil, fmt.Errorf("lab: %s=6.1: the host's apt sources name %s for %s, not a 6.1 kernel; set GOVERBS_LAB_KERNEL_PACKAGE", KernelEnv, name, metaPackage)
		}
		pkgs = []string{name + "-unsigned"}
	} else {
		if err := apt.ensure(ctx, force, log); err != nil {
			return nil, apt, err
		}
		out, err := exec.CommandContext(ctx, "apt-cache", append(apt.args(), "show", metaPackage)...).Output()
		if err != nil {
			return nil, apt, fmt.Errorf("lab: resolve kernel: apt-cache show %s (private configuration %s): %w", metaPackage, apt.Dir, err)
		}
		recs := parseAptShow(out)
		rec, err := pickKernel(ctx, recs, sel)
		if err != nil {
			return nil, apt, err
		}
		v := strings.TrimPrefix(rec.image, "linux-image-")
		// Up to 6.18 Debian ships linux-image-V-unsigned; from 6.19 the kernel is split.
		if exec.CommandContext(ctx, "apt-cache", append(apt.args(), "show", "--no-all-versions", rec.image+"-unsigned")...).Run() == nil {
			pkgs = []string{rec.image + "-unsigned"}
		} else {
			pkgs = splitPackages(v)
		}
	}
	if len(previous) > 0 && previous[0] != pkgs[0] {
		fmt.Fprintf(log, "lab: %s=%s now resolves to %s (was %s): the Debian archive has moved on\n", KernelEnv, selName(sel), strings.Join(pkgs, " "), strings.Join(previous, " "))
	}
	_ = writeFileAtomic(stamp, []byte(strings.Join(pkgs, " ")+"\n"), 0o644)
	return pkgs, apt, nil
}

func ensureIf(ctx context.Context, apt *PrivateApt, log io.Writer) error {
	if apt == nil {
		return nil
	}
	return apt.ensure(ctx, false, log)
}

func selName(sel string) string {
	if sel == "" {
		return "6.1"
	}
	return sel
}

// splitPackages are the three packages of a 6.19+ Debian kernel of version v
// (e.g. 7.3.4+deb13-amd64): image, modules, and config/System.map.
func splitPackages(v string) []string {
	return []string{"linux-binary-unsigned-" + v, "linux-modules-" + v, "linux-base-" + v}
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

// metaRecord is one version of linux-image-amd64: its version and the
// kernel image package it depends on (linux-image-V).
type metaRecord struct {
	version string
	image   string
}

var imageDepRE = regexp.MustCompile(`\blinux-image-[0-9][^ ,()]*`)

// parseAptShow reads the records of "apt-cache show linux-image-amd64".
func parseAptShow(out []byte) []metaRecord {
	var recs []metaRecord
	var cur metaRecord
	flush := func() {
		if cur.version != "" && cur.image != "" {
			recs = append(recs, cur)
		}
		cur = metaRecord{}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "Version: "):
			cur.version = strings.TrimPrefix(line, "Version: ")
		case strings.HasPrefix(line, "Depends: "):
			cur.image = imageDepRE.FindString(line)
		}
	}
	flush()
	return recs
}

// pickKernel chooses the newest record (sel "newest") or the newest whose
// version is sel.* (sel "6.12").
func pickKernel(ctx context.Context, recs []metaRecord, sel string) (metaRecord, error) {
	var best metaRecord
	var have []string
	for _, r := range recs {
		have = append(have, r.version)
		if sel != "newest" && !strings.HasPrefix(r.version, sel+".") {
			continue
		}
		if best.version == "" || debVersionGreater(ctx, r.version, best.version) {
			best = r
		}
	}
	if best.version == "" {
		return best, fmt.Errorf("lab: %s=%s: no %s %s.* in %s (the archive has %s); pick one of those, or name a package with GOVERBS_LAB_KERNEL_PACKAGE",
			KernelEnv, sel, metaPackage, sel, strings.Join(privateSuites, ", "), strings.Join(have, ", "))
	}
	return best, nil
}

// debVersionGreater compares Debian versions with dpkg.
func debVersionGreater(ctx context.Context, a, b string) bool {
	err := exec.CommandContext(ctx, "dpkg", "--compare-versions", a, "gt", b).Run()
	var exit *exec.ExitError
	return err == nil || (err != nil && !errors.As(err, &exit) && a > b)
}
