package lab

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseAptDepends(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"bookworm", "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n", "linux-image-6.1.0-56-amd64", false},
		{"alternatives", "linux-image-amd64\n |Depends: linux-image-6.1.0-57-amd64\n  Depends: linux-image-6.1.0-56-amd64\n", "linux-image-6.1.0-57-amd64", false},
		{"other deps first", "linux-image-amd64\n  Depends: firmware-linux-free\n  Recommends: x\n  Depends: linux-image-6.1.0-9-amd64\n", "linux-image-6.1.0-9-amd64", false},
		{"none", "linux-image-amd64\n", "", true},
		{"empty", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAptDepends([]byte(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseAptDepends = %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzParseAptDepends(f *testing.F) {
	f.Add([]byte("linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseAptDepends(b)
		if err == nil && (!strings.HasPrefix(got, "linux-image-") || strings.ContainsAny(got, " \t\n")) {
			t.Fatalf("parseAptDepends(%q) = %q", b, got)
		}
	})
}

func TestHidden(t *testing.T) {
	for p, want := range map[string]bool{
		"/tmp": true, "/tmp/go-build1/b001": true, "/run/user/0": true, "/dev/shm/x": true,
		"/": false, "/tmpfoo": false, "/work/tmp": false, "/home/u/src": false, "/runner": false,
	} {
		if got := Hidden(p); got != want {
			t.Errorf("Hidden(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestCovered(t *testing.T) {
	shares := []Share{{HostPath: "/tmp/a"}, {HostPath: "/tmp/out", GuestPath: "/run/x"}}
	for p, want := range map[string]bool{
		"/tmp/a": true, "/tmp/a/b": true, "/tmp/ab": false, "/tmp/out": false, "/tmp": false,
	} {
		if got := covered(shares, p); got != want {
			t.Errorf("covered(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestCPUHasVirt(t *testing.T) {
	dir := t.TempDir()
	for name, tt := range map[string]struct {
		content string
		want    bool
	}{
		"intel": {"processor\t: 0\nflags\t\t: fpu vme vmx sse\n", true},
		"amd":   {"processor\t: 0\nflags\t\t: fpu svm\n", true},
		"none":  {"processor\t: 0\nflags\t\t: fpu vme sse hypervisor\n", false},
		"empty": {"", false},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := cpuHasVirt(p)
		if err != nil || got != tt.want {
			t.Errorf("%s: cpuHasVirt = %v, %v; want %v", name, got, err, tt.want)
		}
	}
}

func TestHostEnv(t *testing.T) {
	t.Setenv("GOVERBS_LAB_REQUIRED", "1")
	t.Setenv("GOVERBS_DEVICE", "rxe0")
	t.Setenv("GOTRACEBACK", "all")
	t.Setenv("TERM", "xterm")
	t.Setenv("SSH_AUTH_SOCK", "/x")
	env := HostEnv()
	for k, v := range map[string]string{"GOVERBS_LAB_REQUIRED": "1", "GOVERBS_DEVICE": "rxe0", "GOTRACEBACK": "all"} {
		if env[k] != v {
			t.Errorf("HostEnv()[%s] = %q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"TERM", "SSH_AUTH_SOCK"} {
		if _, ok := env[k]; ok {
			t.Errorf("HostEnv() passes %s", k)
		}
	}
}

func TestQEMUArgs(t *testing.T) {
	r := &run{
		cfg:      &Config{Memory: 1024, CPUs: 2},
		kernel:   &Kernel{Vmlinuz: "/k/vmlinuz", Vmlinux: "/k/vmlinux"},
		initrd:   "/c/initrd.cpio",
		ctlDir:   "/tmp/ctl,dir",
		accel:    "tcg",
		fsShares: []fsShare{{hostPath: "/tmp/out", tag: "share0"}},
	}
	args := strings.Join(r.qemuArgs(), " ")
	for _, want := range []string{
		"-kernel /k/vmlinux ", "-m 1024M", "-smp 2", "-no-reboot", "-accel tcg",
		"path=/,security_model=none,multidevs=remap,readonly=on",
		"path=/tmp/ctl,,dir,", // commas escaped
		"path=/tmp/out,security_model=none,multidevs=remap -device virtio-9p-pci,fsdev=fs2,mount_tag=share0",
		"file,id=port0,path=/proc/self/fd/3", "name=goverbs.stdout",
		"file,id=port2,path=/proc/self/fd/5", "name=goverbs.events",
		"file,id=console,path=/proc/self/fd/6",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu args lack %q:\n%s", want, args)
		}
	}
	r.cfg.ICount, r.cfg.CPUs = true, 1
	if icount := strings.Join(r.qemuArgs(), " "); !strings.Contains(icount, "-accel tcg,thread=single -icount shift=0,sleep=off") {
		t.Errorf("ICount qemu args:\n%s", icount)
	}
	r.cfg.ICount, r.cfg.CPUs = false, 2
	if !strings.Contains(r.cmdline(), "quiet") || strings.Contains(r.cmdline(), "goverbs.debug") {
		t.Errorf("cmdline without Debug = %q", r.cmdline())
	}
	r.cfg.Debug = true
	if !strings.Contains(r.cmdline(), "goverbs.debug") {
		t.Errorf("cmdline with Debug = %q", r.cmdline())
	}
}

// TestInitramfs builds the initramfs from the cached kernel, when there is
// one, and checks the module list and the files init needs.
func TestInitramfs(t *testing.T) {
	cache, err := CacheDir()
	if err != nil {
		t.Skip(err)
	}
	k := cachedKernel(cache, "")
	if k == nil {
		t.Skip("no unpacked kernel in " + cache)
	}
	initBin := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(initBin, []byte("fake init"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := buildInitramfs(k, initBin, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := cpioNames(t, data)
	for _, want := range []string{"init", "dev/console", "lab/modules.order", "host", "lab/ctl"} {
		if !slices.Contains(names, want) {
			t.Errorf("initramfs lacks %s", want)
		}
	}
	var mods []string
	for _, n := range names {
		if m, ok := strings.CutPrefix(n, "lab/modules/"); ok {
			mods = append(mods, m[3:len(m)-3]) // "NN-name.ko" -> name
		}
	}
	idx := func(m string) int { return slices.Index(mods, m) }
	for _, m := range Modules {
		if idx(m) < 0 {
			t.Errorf("module %s missing from %q", m, mods)
		}
	}
	if idx("crc32_generic") > idx("rdma_rxe") {
		t.Errorf("crc32_generic after rdma_rxe in %q", mods)
	}
}

// cpioNames lists a newc archive's entry names (minimal reader).
func cpioNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	for off := 0; ; {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		hex := func(i int) int {
			var v int
			for _, c := range b[off+6+8*i : off+14+8*i] {
				v = v*16 + strings.IndexByte("0123456789abcdef", c)
			}
			return v
		}
		size, nameSize := hex(6), hex(11)
		name := string(b[off+110 : off+110+nameSize-1])
		if name == "TRAILER!!!" {
			return names
		}
		names = append(names, name)
		off = (off + 110 + nameSize + 3) &^ 3
		off = (off + size + 3) &^ 3
	}
}

func TestInitSources(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Skip(err)
	}
	files, err := initSources(root)
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, f := range files {
		r, _ := filepath.Rel(root, f)
		rel = append(rel, r)
	}
	for _, want := range []string{
		"test/lab/internal/labinit/cmd/labinit/main.go",
		"test/lab/internal/labinit/labinit.go",
		"test/lab/internal/proto/proto.go",
	} {
		if !slices.Contains(rel, want) {
			t.Errorf("init sources %q lack %s", rel, want)
		}
	}
	for _, f := range rel {
		if strings.HasSuffix(f, "_test.go") {
			t.Errorf("init sources include test file %s", f)
		}
	}
}

func TestPruneDir(t *testing.T) {
	dir := t.TempDir()
	old, recent, keep := filepath.Join(dir, "old"), filepath.Join(dir, "recent"), filepath.Join(dir, "keep")
	for _, p := range []string{old, recent, keep} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * pruneAge)
	for _, p := range []string{old, keep} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	pruneDir(dir, keep)
	for p, want := range map[string]bool{old: false, recent: true, keep: true} {
		if got := exists(p); got != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(p), got, want)
		}
	}
}

func TestSameWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(w.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b1, b2 strings.Builder
	tests := []struct {
		name string
		a, b io.Writer
		want bool
	}{
		{"same builder", &b1, &b1, true},
		{"two builders", &b1, &b2, false},
		{"same pipe, two fds", w, f, true},
		{"file and builder", w, &b1, false},
	}
	for _, tt := range tests {
		if got := sameWriter(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: sameWriter = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDecompressKernel extracts vmlinux from every kernel unpacked in the
// cache (xz on 6.1, zstd on 6.12 and 7.x), when there is one.
func TestDecompressKernel(t *testing.T) {
	cache, err := CacheDir()
	if err != nil {
		t.Skip(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "kernels", "linux-*"))
	if len(dirs) == 0 {
		t.Skip("no unpacked kernel in " + cache)
	}
	for _, d := range dirs {
		k, err := loadKernel([]string{filepath.Base(d)}, d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		img, err := os.ReadFile(k.Vmlinuz)
		if err != nil {
			t.Fatal(err)
		}
		elf, err := decompressKernel(context.Background(), img)
		if err != nil {
			t.Errorf("%s: %v", k.Vmlinuz, err)
			continue
		}
		t.Logf("%s: %d-byte vmlinux", k.Version, len(elf))
	}
}

// TestPickKernel resolves selectors against "apt-cache show linux-image-amd64" as the private suites answer it.
func TestPickKernel(t *testing.T) {
	out := []byte(`Package: linux-image-amd64
Version: 7.3.4-1~bpo13+1
Depends: linux-base-amd64 (= 7.3.4-1~bpo13+1), linux-image-7.3.4+deb13-amd64 (= 7.3.4-1~bpo13+1), linux-modules-amd64 (= 7.3.4-1~bpo13+1)

Package: linux-image-amd64
Version: 7.2.13-1
Depends: linux-base-amd64 (= 7.2.13-1), linux-image-7.2.13+deb14-amd64 (= 7.2.13-1)

Package: linux-image-amd64
Version: 6.12.117-1
Depends: linux-image-6.12.117+deb13-amd64 (= 6.12.117-1)
`)
	recs := parseAptShow(out)
	if len(recs) != 3 {
		t.Fatalf("parseAptShow: %+v", recs)
	}
	ctx := context.Background()
	for sel, want := range map[string]string{
		"newest": "linux-image-7.3.4+deb13-amd64", "6.12": "linux-image-6.12.117+deb13-amd64", "7.2": "linux-image-7.2.13+deb14-amd64",
	} {
		r, err := pickKernel(ctx, recs, sel)
		if err != nil || r.image != want {
			t.Errorf("pickKernel(%s) = %+v, %v; want %s", sel, r, err, want)
		}
	}
	if _, err := pickKernel(ctx, recs, "6.6"); err == nil || !strings.Contains(err.Error(), "7.3.4-1~bpo13+1, 7.2.13-1, 6.12.117-1") {
		t.Errorf("pickKernel(6.6) = %v; want an error listing the versions", err)
	}
	if got := splitPackages("7.3.4+deb13-amd64"); strings.Join(got, " ") != "linux-binary-unsigned-7.3.4+deb13-amd64 linux-modules-7.3.4+deb13-amd64 linux-base-7.3.4+deb13-amd64" {
		t.Errorf("splitPackages = %q", got)
	}
}

// TestEnsureKernelForIgnoresEnv: the selector given to EnsureKernelFor (Config.Kernel, labsuite -j) picks the
// kernel, whatever GOVERBS_LAB_KERNEL says; concurrent runs on different kernels share that variable.
func TestEnsureKernelForIgnoresEnv(t *testing.T) {
	cache := t.TempDir()
	for sel, pkg := range map[string]string{"": "linux-image-6.1.0-1-amd64-unsigned", "6.12": "linux-image-6.12.1-amd64-unsigned"} {
		v := strings.TrimSuffix(strings.TrimPrefix(pkg, "linux-image-"), "-unsigned")
		dir := filepath.Join(cache, "kernels", pkg)
		for _, d := range []string{filepath.Join(dir, "boot"), filepath.Join(dir, "lib", "modules", v)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "boot", "vmlinuz-"+v), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stampPath(cache, sel), []byte(pkg+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(KernelEnv, "newest")
	t.Setenv("GOVERBS_LAB_KERNEL_PACKAGE", "")
	for sel, want := range map[string]string{"": "6.1.0-1-amd64", "6.1": "6.1.0-1-amd64", "6.12": "6.12.1-amd64"} {
		k, err := EnsureKernelFor(context.Background(), cache, sel, io.Discard)
		if err != nil || k.Version != want {
			t.Errorf("EnsureKernelFor(%q) = %+v, %v; want version %s", sel, k, err, want)
		}
	}
	if _, err := EnsureKernelFor(context.Background(), cache, "6.12; rm", io.Discard); err == nil {
		t.Error("a malformed selector was accepted")
	}
	t.Setenv(KernelEnv, "bogus")
	if _, err := Prepare(context.Background(), Config{CacheDir: cache, Kernel: "x.y", Log: io.Discard}); err == nil || !strings.Contains(err.Error(), `"x.y"`) {
		t.Errorf("Prepare with Kernel x.y: %v, want the selector's error", err)
	}
}

func TestSIWHelpers(t *testing.T) {
	for v, want := range map[string]string{"6.1.192-2": "6.1", "6.12.117-1": "6.12", "7.3.4-1~bpo13+1": "7.3", "1:7.3-1": "7.3", "garbage": ""} {
		if got := seriesOf(v); got != want {
			t.Errorf("seriesOf(%q) = %q, want %q", v, got, want)
		}
	}
	for p, want := range map[string]string{
		"/c/linux-headers-6.1.0-56-amd64_6.1.192-2_amd64.deb": "6.1.192-2",
		"libgmp10_2%3a6.3.0+dfsg-3_amd64.deb":                 "2:6.3.0+dfsg-3",
		"broken.deb":                                          "",
	} {
		if got := debFileVersion(p); got != want {
			t.Errorf("debFileVersion(%q) = %q, want %q", p, got, want)
		}
	}
	config := []byte("CONFIG_CC_VERSION_TEXT=\"x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0\"\nCONFIG_GCC_VERSION=140200\n")
	cc := configString(config, "CONFIG_CC_VERSION_TEXT")
	if m := ccTextRE.FindStringSubmatch(cc); m == nil || m[1] != "14" || m[2] != "14.2.0-19" {
		t.Errorf("compiler of %q: %q", cc, m)
	}
	out := []byte("make[2]: x\ngcc-12: error: unrecognized command-line option '-fmin-function-alignment=16'\nmake: *** Error 1\n")
	if !refusedCompiler(out) || refusedCompiler([]byte("siw_cm.c:1: error: expected ';'\n")) {
		t.Error("refusedCompiler does not tell a refused flag from a compile error")
	}
}

func TestCheckProvider(t *testing.T) {
	for in, want := range map[string]string{"": "rxe", " rxe": "rxe", "siw": "siw"} {
		if got, err := CheckProvider(in); err != nil || got != want {
			t.Errorf("CheckProvider(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := CheckProvider("mlx5"); err == nil {
		t.Error("CheckProvider(mlx5) accepted")
	}
	if DeviceFor("siw") != "siw0" || DeviceFor("rxe") != "rxe0" {
		t.Errorf("DeviceFor: %s %s", DeviceFor("siw"), DeviceFor("rxe"))
	}
}
