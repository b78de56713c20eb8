package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/test/lab/internal/proto"
)

// Names of things inside the VM, for callers that print or check them.
const (
	Device     = proto.RXEDevice  // the rxe device: "rxe0" (with Config.Provider "siw": SIWDevice, "siw0")
	Netdev     = proto.Netdev     // its netdev: "veth0", 10.233.0.1/24
	PeerNetdev = proto.PeerNetdev // the other end of the veth pair: "veth1", 10.233.0.2/24
	OutDirEnv  = "GOVERBS_LAB_OUT"
)

// Exit codes Run reports when the command did not run to completion.
const (
	ExitSetupFailed = proto.SetupFailedCode // the VM could not be set up (err says where)
	ExitTimeout     = 124                   // Config.Timeout or the context's deadline expired
)

// Share is a host directory mounted in the VM.
type Share struct {
	HostPath  string // absolute host directory
	GuestPath string // absolute mount point in the VM; "" means the same as HostPath
	Writable  bool
}

// Config describes one lab run. The zero value is usable.
type Config struct {
	// Memory is the VM's memory in MiB (default 2048).
	Memory int
	// CPUs is the number of virtual CPUs (default 2 with KVM, 1 under TCG,
	// where a second emulated CPU costs more host CPU than it gives).
	CPUs int
	// Timeout bounds the whole run, boot included; 0 means no limit beyond ctx.
	Timeout time.Duration
	// Env is the command's environment. nil means HostEnv(). GOVERBS_LAB=1
	// is always added.
	Env map[string]string
	// Workdir is the command's working directory, a host path (default: the
	// current directory). Inside the VM it is the same path in the
	// read-only host root.
	Workdir string
	// Stdout and Stderr receive the command's output byte for byte
	// (default os.Stdout and os.Stderr). When they are the same writer
	// (or both *os.File for one open file), the command's stderr and
	// stdout share one channel, so their relative order is kept.
	Stdout, Stderr io.Writer
	// Log receives the lab's own messages (downloads, the TCG note, and the
	// kernel console when Debug is set). Default os.Stderr.
	Log io.Writer
	// OutDir, if set, is a host directory the command can write to; inside
	// the VM it is at $GOVERBS_LAB_OUT (/run/goverbs-lab/out).
	OutDir string
	// Shares are extra host directories to mount, after the built-in ones.
	// Host paths under /tmp, /run or /dev/shm are hidden by the VM's own
	// tmpfs mounts; share them here to see them. The working directory
	// and the command's executable are shared automatically when hidden.
	Shares []Share
	// NoRXE skips creating rxe0, or siw0 with Provider "siw" (also set by
	// GOVERBS_LAB_NO_RXE=1).
	NoRXE bool
	// Provider is the lab's software RDMA device: "rxe" (rdma_rxe, rxe0) or
	// "siw" (soft-iWARP, siw0, built by EnsureSIW) on veth0; "" means
	// GOVERBS_LAB_PROVIDER's choice, else rxe. With siw it is also the
	// command's GOVERBS_LAB_PROVIDER, so test/labtest's Device is siw0.
	Provider string
	// Debug shows the kernel console and init's steps on Log (also set by
	// GOVERBS_LAB_DEBUG=1).
	Debug bool
	// CacheDir overrides CacheDir().
	CacheDir string
	// Kernel selects the kernel to boot as GOVERBS_LAB_KERNEL does ("6.1",
	// "6.12", "newest", another major.minor), for this run only; "" means
	// GOVERBS_LAB_KERNEL's selection (else 6.1). Set, it is also the
	// command's GOVERBS_LAB_KERNEL. Runs with different kernels may go on at
	// once in one process (labsuite -j); GOVERBS_LAB_KERNEL_PACKAGE, when
	// set, still names the package for every run.
	Kernel string
	// ICount runs the guest under TCG on one vCPU with QEMU's instruction
	// counting (-icount shift=0,sleep=off, single-threaded TCG): the guest
	// clock advances by one nanosecond per executed instruction and skips
	// idle time, so the times programs measure inside are their instruction
	// cost (user and kernel), repeatable and independent of the host's load.
	// It forces TCG even where KVM works; CPUs must be 0 or 1.
	ICount bool
}

// Result is the outcome of a run.
type Result struct {
	// ExitCode is the command's exit status (128+signal if it was killed),
	// or, when Run returns an error, ExitTimeout after a deadline and
	// ExitSetupFailed otherwise (setup failure, cancellation, VM crash).
	ExitCode int
	// Accel is "kvm" or "tcg".
	Accel string
	// Prepare is the time spent on the host before QEMU started (kernel,
	// init and initramfs checks; long only when something is (re)built).
	Prepare time.Duration
	// Boot is the time from QEMU's start until the command started.
	Boot time.Duration
	// Command is the time the command ran.
	Command time.Duration
	// CPU is the host CPU time QEMU used (user+system), a measure of the
	// run's cost that does not depend on the host's load.
	CPU time.Duration
}

// SetupError reports that the VM's init failed before running the command.
type SetupError struct {
	Step string // e.g. "create rxe0"
	Msg  string
}

func (e *SetupError) Error() string { return "lab: VM setup failed at " + e.Step + ": " + e.Msg }

// HostEnv returns the environment the lab passes by default: PATH, HOME,
// USER, LOGNAME, LANG and LC_ALL, every GOVERBS_* variable, and the Go
// runtime and test knobs GOTRACEBACK, GODEBUG, GOMAXPROCS, GORACE and
// GOCOVERDIR, where set. TERM is left out, so tools do not emit colors.
func HostEnv() map[string]string {
	keep := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LC_ALL": true,
		"GOTRACEBACK": true, "GODEBUG": true, "GOMAXPROCS": true, "GORACE": true, "GOCOVERDIR": true,
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (keep[k] || strings.HasPrefix(k, "GOVERBS_")) {
			env[k] = v
		}
	}
	return env
}

// Shell returns the argv that runs script with /bin/sh.
func Shell(script string) []string { return []string{"/bin/sh", "-c", script} }

// Run boots the lab VM, runs argv in it and returns the command's exit code.
// err is non-nil only when the lab itself failed (then the code is
// ExitSetupFailed or ExitTimeout); a command that fails is not an error.
func Run(ctx context.Context, cfg Config, argv []string) (exitCode int, err error) {
	res, err := RunResult(ctx, cfg, argv)
	return res.ExitCode, err
}

// RunResult is Run with timings.
func RunResult(ctx context.Context, cfg Config, argv []string) (Result, error) {
	res := Result{ExitCode: ExitSetupFailed}
	start := time.Now()
	if len(argv) == 0 {
		return res, errors.New("lab: no command")
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	r, err := newRun(ctx, &cfg, argv)
	if err != nil {
		return res, err
	}
	defer r.cleanup()
	res.Accel = r.accel
	res.Prepare = time.Since(start)
	return r.boot(ctx, res)
}

func envTrue(name string) bool {
	v, _ := strconv.ParseBool(os.Getenv(name))
	return v
}

// run is one VM boot.
type run struct {
	cfg      *Config
	kernel   *Kernel
	initrd   string
	ctlDir   string
	accel    string
	qemu     string
	shares   []proto.Share
	fsShares []fsShare // the shares' QEMU side
	guest    proto.Config
	console  *ringBuffer
}

func newRun(ctx context.Context, cfg *Config, argv []string) (*run, error) {
	if cfg.Memory <= 0 {
		cfg.Memory = 2048
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	cfg.NoRXE = cfg.NoRXE || envTrue("GOVERBS_LAB_NO_RXE")
	cfg.Debug = cfg.Debug || envTrue("GOVERBS_LAB_DEBUG")
	if cfg.Workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("lab: working directory: %w", err)
		}
		cfg.Workdir = wd
	}
	wd, err := filepath.Abs(cfg.Workdir)
	if err != nil {
		return nil, fmt.Errorf("lab: working directory: %w", err)
	}
	cfg.Workdir = wd

	r := &run{cfg: cfg, console: &ringBuffer{max: 64 << 10}}
	r.qemu, err = exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return nil, missingTool("qemu-system-x86_64", "qemu-system-x86")
	}
	accel, whyNot, err := chooseAccel()
	if err != nil {
		return nil, err
	}
	if cfg.ICount {
		if cfg.CPUs > 1 {
			return nil, fmt.Errorf("lab: ICount runs one vCPU (icount refuses multi-threaded TCG), not %d", cfg.CPUs)
		}
		accel, whyNot, cfg.CPUs = "tcg", nil, 1
	}
	r.accel = accel
	if cfg.CPUs <= 0 {
		cfg.CPUs = 2
		if accel == "tcg" {
			cfg.CPUs = 1
		}
	}
	if whyNot != nil && !envTrue("GOVERBS_LAB_QUIET") {
		fmt.Fprintf(cfg.Log, "lab: KVM is not usable (%v); using TCG emulation\n", whyNot)
	}

	provider, err := cfg.provider()
	if err != nil {
		return nil, err
	}
	if r.kernel, r.initrd, err = prepare(ctx, cfg); err != nil {
		return nil, err
	}

	env := cfg.Env
	if env == nil {
		env = HostEnv()
	}
	env = clone(env)
	env["GOVERBS_LAB"] = "1"
	if sel := strings.TrimSpace(cfg.Kernel); sel != "" {
		env[KernelEnv] = sel
	}
	guestProvider := ""
	if provider != ProviderRXE {
		env[ProviderEnv] = provider
		guestProvider = provider
	}

	shares := append([]Share(nil), cfg.Shares...)
	if cfg.OutDir != "" {
		out, err := filepath.Abs(cfg.OutDir)
		if err != nil {
			return nil, fmt.Errorf("lab: out dir: %w", err)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, fmt.Errorf("lab: out dir: %w", err)
		}
		shares = append(shares, Share{HostPath: out, GuestPath: proto.GuestOut, Writable: true})
		env[OutDirEnv] = proto.GuestOut
	}
	// Make paths the VM's tmpfs mounts would hide visible again.
	for _, p := range []string{cfg.Workdir, exeDir(argv[0])} {
		if p != "" && Hidden(p) && !covered(shares, p) {
			shares = append(shares, Share{HostPath: p})
		}
	}
	// Mount parents before children, whatever order they were given in.
	sort.SliceStable(shares, func(i, j int) bool {
		return pathDepth(guestPath(shares[i])) < pathDepth(guestPath(shares[j]))
	})
	for i, s := range shares {
		if !filepath.IsAbs(s.HostPath) {
			return nil, fmt.Errorf("lab: share %q: host path must be absolute", s.HostPath)
		}
		if s.GuestPath == "" {
			s.GuestPath = s.HostPath
		}
		if !filepath.IsAbs(s.GuestPath) {
			return nil, fmt.Errorf("lab: share %q: guest path %q must be absolute", s.HostPath, s.GuestPath)
		}
		tag := "share" + strconv.Itoa(i)
		r.shares = append(r.shares, proto.Share{Tag: tag, Path: filepath.Clean(s.GuestPath), Writable: s.Writable})
		r.fsShares = append(r.fsShares, fsShare{hostPath: s.HostPath, tag: tag, readonly: !s.Writable})
	}
	r.guest = proto.Config{
		Argv:   argv,
		Env:    envList(env),
		Dir:    cfg.Workdir,
		NoRXE:  cfg.NoRXE,
		Shares: r.shares,
		Debug:  cfg.Debug,

		MergeStderr: sameWriter(cfg.Stdout, cfg.Stderr),
		Provider:    guestProvider,
	}
	if r.ctlDir, err = os.MkdirTemp("", "goverbs-lab-"); err != nil {
		return nil, fmt.Errorf("lab: create control directory: %w", err)
	}
	b, err := json.Marshal(r.guest)
	if err != nil {
		r.cleanup()
		return nil, fmt.Errorf("lab: encode run configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.ctlDir, proto.ConfigFile), b, 0o644); err != nil {
		r.cleanup()
		return nil, fmt.Errorf("lab: write run configuration: %w", err)
	}
	return r, nil
}

// Prepare does on the host what Run does before it boots the VM, for
// cfg's kernel (Config.Kernel, else GOVERBS_LAB_KERNEL), provider
// (Config.Provider, else GOVERBS_LAB_PROVIDER) and cache: download
// and unpack the kernel, extract its vmlinux, build siw.ko (provider siw),
// the init binary and the initramfs, each only where the cache lacks it. Run then finds everything
// cached. Concurrent preparations are safe (the cache is locked while
// something is built, and everything appears by rename); preparing each
// kernel once before starting runs in parallel keeps the downloads and
// builds out of the runs' times and their messages in order. cfg.Log (default
// os.Stderr) receives the progress messages.
func Prepare(ctx context.Context, cfg Config) (*Kernel, error) {
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	k, _, err := prepare(ctx, &cfg)
	return k, err
}

// prepare returns the kernel and initramfs a run of cfg boots, making them
// where needed.
func prepare(ctx context.Context, cfg *Config) (k *Kernel, initrd string, err error) {
	cacheDir := cfg.CacheDir
	if cacheDir == "" {
		if cacheDir, err = CacheDir(); err != nil {
			return nil, "", err
		}
	}
	sel, err := KernelSelector()
	if strings.TrimSpace(cfg.Kernel) != "" {
		sel, err = CheckKernelSelector(cfg.Kernel)
	}
	if err != nil {
		return nil, "", err
	}
	if k, err = EnsureKernelFor(ctx, cacheDir, sel, cfg.Log); err != nil {
		return nil, "", err
	}
	ensureVmlinux(ctx, cacheDir, k)
	provider, err := cfg.provider()
	if err != nil {
		return nil, "", err
	}
	var siw *SIWModule
	if provider == ProviderSIW {
		if siw, err = EnsureSIW(ctx, cacheDir, sel, k, cfg.Log); err != nil {
			return nil, "", err
		}
	}
	initPath, initHash, err := ensureInit(ctx, cacheDir)
	if err != nil {
		return nil, "", err
	}
	if initrd, err = ensureInitramfs(cacheDir, k, initPath, initHash, siw); err != nil {
		return nil, "", err
	}
	return k, initrd, nil
}

func (r *run) cleanup() {
	if r.ctlDir != "" {
		os.RemoveAll(r.ctlDir)
	}
}

// sameWriter reports whether a and b write to the same place: the same
// writer, or files open on the same file (like a go test binary's stdout
// and stderr, which go test points at one pipe).
func sameWriter(a, b io.Writer) bool {
	if a == b {
		return true
	}
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	sa, err1 := fa.Stat()
	sb, err2 := fb.Stat()
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// hiddenPrefixes are host paths the VM mounts its own filesystems over.
var hiddenPrefixes = []string{"/tmp", "/run", "/dev", "/proc", "/sys"}

// Hidden reports whether the host path p is covered, inside the VM, by a
// filesystem of the VM's own (tmpfs on /tmp and /run, devtmpfs, proc,
// sysfs), so that the host's files there are not visible without a Share.
func Hidden(p string) bool {
	p = filepath.Clean(p)
	for _, h := range hiddenPrefixes {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

func guestPath(s Share) string {
	if s.GuestPath != "" {
		return s.GuestPath
	}
	return s.HostPath
}

func pathDepth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// covered reports whether p lies inside one of the shares.
func covered(shares []Share, p string) bool {
	for _, s := range shares {
		g := s.GuestPath
		if g == "" {
			g = s.HostPath
		}
		if g == s.HostPath && (p == g || strings.HasPrefix(p, g+"/")) {
			return true
		}
	}
	return false
}

// exeDir returns the directory of an executable given by path, or "".
func exeDir(argv0 string) string {
	if !filepath.IsAbs(argv0) {
		return ""
	}
	return filepath.Dir(argv0)
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func envList(env map[string]string) []string {
	l := make([]string, 0, len(env))
	for k, v := range env {
		l = append(l, k+"="+v)
	}
	sort.Strings(l)
	return l
}

// cmdline is the kernel command line.
func (r *run) cmdline() string {
	args := []string{
		"console=ttyS0", "panic=-1", "oops=panic", "rdinit=/init",
		"mitigations=off", "8250.nr_uarts=1", "i8042.noaux", "i8042.nomux", "i8042.nopnp", "i8042.dumbkbd",
		"random.trust_cpu=on", "nowatchdog",
		// Boot speed, which matters most under TCG: no crypto self-tests,
		// no delay-loop calibration of secondary CPUs (slow and unreliable
		// under emulation), no X.509 certificates (the modules are loaded
		// without their signatures).
		// no ACPI interrupt routing (its AML is slow to interpret under TCG
		// and the BIOS's PIR table does the job), no kprobe tracing or KDF
		// self-test initcalls, only the capability LSM.
		"cryptomgr.notests", "lpj=10000000", "acpi=noirq", "lsm=capability",
		"initcall_blacklist=load_system_certificate_list,init_kprobe_trace,crypto_kdf108_init",
	}
	if r.cfg.Debug {
		args = append(args, "loglevel=7", "goverbs.debug")
	} else {
		args = append(args, "quiet", "loglevel=1")
	}
	if extra := os.Getenv("GOVERBS_LAB_KERNEL_ARGS"); extra != "" {
		args = append(args, extra)
	}
	return strings.Join(args, " ")
}

// qemuArgs builds the QEMU command line. The stdout, stderr, events and
// console pipes are inherited as fds 3, 4, 5 and 6.
func (r *run) qemuArgs() []string {
	kimg := r.kernel.Vmlinuz
	if r.kernel.Vmlinux != "" {
		kimg = r.kernel.Vmlinux
	}
	// The pc machine, not microvm: under TCG microvm has no timer the
	// kernel can calibrate the TSC against, and boot stalls.
	const bus = "pci"
	args := []string{
		"-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
		"-machine", "pc", "-m", strconv.Itoa(r.cfg.Memory) + "M", "-smp", strconv.Itoa(r.cfg.CPUs),
		"-kernel", kimg, "-initrd", r.initrd, "-append", r.cmdline(),
		"-chardev", "file,id=console,path=/proc/self/fd/6", "-serial", "chardev:console",
		"-device", "virtio-serial-" + bus + ",id=vser",
	}
	if r.accel == "kvm" {
		args = append(args, "-accel", "kvm", "-cpu", "host")
	} else if r.cfg.ICount {
		args = append(args, "-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off", "-cpu", "max")
	} else {
		args = append(args, "-accel", "tcg,thread=multi", "-cpu", "max")
	}
	for i, p := range []string{proto.PortStdout, proto.PortStderr, proto.PortEvents} {
		id := "port" + strconv.Itoa(i)
		args = append(args,
			"-chardev", fmt.Sprintf("file,id=%s,path=/proc/self/fd/%d", id, 3+i),
			"-device", fmt.Sprintf("virtserialport,bus=vser.0,chardev=%s,name=%s", id, p))
	}
	fs := append([]fsShare{
		{hostPath: "/", tag: proto.TagHostRoot, readonly: true},
		{hostPath: r.ctlDir, tag: proto.TagControl},
	}, r.fsShares...)
	for i, f := range fs {
		id := "fs" + strconv.Itoa(i)
		opt := "local,id=" + id + ",path=" + qemuEscape(f.hostPath) + ",security_model=none,multidevs=remap"
		if f.readonly {
			opt += ",readonly=on"
		}
		args = append(args, "-fsdev", opt, "-device", "virtio-9p-"+bus+",fsdev="+id+",mount_tag="+f.tag)
	}
	return args
}

// fsShare is a host directory exported over virtio-9p.
type fsShare struct {
	hostPath, tag string
	readonly      bool
}

// qemuEscape escapes a value for QEMU's option syntax (commas doubled).
func qemuEscape(v string) string { return strings.ReplaceAll(v, ",", ",,") }

// boot runs QEMU and collects the outcome.
func (r *run) boot(ctx context.Context, res Result) (Result, error) {
	type pipe struct{ r, w *os.File }
	var pipes [4]pipe // stdout, stderr, events, console
	closeAll := func() {
		for _, p := range pipes {
			if p.r != nil {
				p.r.Close()
			}
			if p.w != nil {
				p.w.Close()
			}
		}
	}
	for i := range pipes {
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll()
			return res, fmt.Errorf("lab: create pipe: %w", err)
		}
		pipes[i] = pipe{pr, pw}
	}
	var qemuOut ringBuffer
	qemuOut.max = 16 << 10
	cmd := exec.Command(r.qemu, r.qemuArgs()...)
	cmd.Stdout = &qemuOut
	cmd.Stderr = &qemuOut
	cmd.ExtraFiles = []*os.File{pipes[0].w, pipes[1].w, pipes[2].w, pipes[3].w}
	// QEMU must not outlive us (e.g. when go test kills a hung test binary),
	// and gets no terminal signals of its own: a Ctrl-C cancels ctx, and
	// Run stops the VM and says so.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if r.cfg.Debug {
		fmt.Fprintf(r.cfg.Log, "lab: %s %s\n", r.qemu, strings.Join(cmd.Args[1:], " "))
	}

	// Start with the OS thread locked: Pdeathsig follows the thread that
	// forked QEMU, and a locked thread is not reused or ended under us.
	runtime.LockOSThread()
	qemuStart := time.Now()
	err := cmd.Start()
	runtime.UnlockOSThread()
	for _, p := range pipes {
		p.w.Close()
	}
	if err != nil {
		closeAll()
		return res, fmt.Errorf("lab: start %s: %w", r.qemu, err)
	}

	var wg sync.WaitGroup
	copyOut := func(dst io.Writer, src *os.File) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		src.Close()
	}
	wg.Add(3)
	go copyOut(r.cfg.Stdout, pipes[0].r)
	go copyOut(r.cfg.Stderr, pipes[1].r)
	var console io.Writer = r.console
	if r.cfg.Debug {
		console = io.MultiWriter(r.console, r.cfg.Log)
	}
	go copyOut(console, pipes[3].r)

	var (
		mu       sync.Mutex
		started  time.Time
		exited   time.Time
		exitCode = -1
		setupErr *SetupError
		eventErr error
	)
	eventsDone := make(chan struct{})
	// The guest's writes to the virtio-serial ports complete only when QEMU
	// has written the bytes to our pipes, so once the exit event is here
	// all output is too, and the VM's shutdown need not be waited for.
	exitSeen := make(chan struct{})
	go func() {
		defer close(eventsDone)
		sc := bufio.NewScanner(pipes[2].r)
		for sc.Scan() {
			e, err := proto.ParseEvent(sc.Bytes())
			mu.Lock()
			switch {
			case err != nil:
				eventErr = err
			case e.Kind == proto.EventStart:
				started = time.Now()
			case e.Kind == proto.EventExit:
				if exitCode < 0 {
					exited, exitCode = time.Now(), e.Code
					close(exitSeen)
				}
			case e.Kind == proto.EventSetupError:
				setupErr = &SetupError{Step: e.Step, Msg: e.Error}
			}
			mu.Unlock()
		}
		pipes[2].r.Close()
	}()

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var qerr error
	timedOut := false
	select {
	case qerr = <-waitErr:
	case <-exitSeen:
		_ = cmd.Process.Kill()
		qerr = <-waitErr
	case <-ctx.Done():
		timedOut = true
		_ = cmd.Process.Kill()
		qerr = <-waitErr
	}
	<-eventsDone
	wg.Wait()

	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
	mu.Lock()
	defer mu.Unlock()
	if !started.IsZero() {
		res.Boot = started.Sub(qemuStart)
		end := exited
		if end.IsZero() {
			end = time.Now()
		}
		res.Command = end.Sub(started)
	}
	switch {
	case timedOut:
		res.ExitCode = ExitSetupFailed // canceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.ExitCode = ExitTimeout
		}
		what := "booting"
		if !started.IsZero() {
			what = "running " + strconv.Quote(strings.Join(r.guest.Argv, " "))
		}
		return res, fmt.Errorf("lab: stopped the VM while %s: %w", what, context.Cause(ctx))
	case setupErr != nil:
		return res, fmt.Errorf("%w%s", setupErr, r.diagnostics(&qemuOut))
	case exitCode >= 0:
		res.ExitCode = exitCode
		return res, nil
	case eventErr != nil:
		return res, fmt.Errorf("%w%s", eventErr, r.diagnostics(&qemuOut))
	default:
		return res, fmt.Errorf("lab: the VM stopped without reporting the command's exit status (qemu: %v)%s", qerr, r.diagnostics(&qemuOut))
	}
}

// diagnostics formats QEMU's own output and the console tail for an error.
func (r *run) diagnostics(qemuOut *ringBuffer) string {
	var b strings.Builder
	if s := strings.TrimSpace(qemuOut.String()); s != "" {
		fmt.Fprintf(&b, "\nqemu output:\n%s", s)
	}
	if s := strings.TrimSpace(r.console.String()); s != "" {
		fmt.Fprintf(&b, "\nconsole (last lines):\n%s", lastLines(s, 40))
	} else if !r.cfg.Debug {
		b.WriteString("\n(rerun with GOVERBS_LAB_DEBUG=1 to see the kernel log)")
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ringBuffer keeps the last max bytes written to it.
type ringBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *ringBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *ringBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
