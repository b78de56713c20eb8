// Package labinit is the lab's guest init program (PID 1 inside the VM).
//
// It mounts the pseudo filesystems, loads the kernel modules shipped in the
// initramfs, mounts the host's root over virtio-9p, sets up veth0/veth1 and
// rxe0 (or siw0), chroots into the host root and runs the command described by the
// per-run configuration. The command's stdout and stderr are virtio-serial
// ports, so the host receives them byte for byte; progress and the exit
// status go out as JSON lines on a third port. Then it powers the VM off.
//
// Everything here runs as PID 1 in a fresh VM: it is only exercised by the
// lab's own VM tests.
package labinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/netlinkrdma"

	"github.com/goverbs/goverbs/test/lab/internal/proto"
)

// setupWait bounds the waits for devices to appear. It is generous: under
// TCG on a loaded host the guest's clock runs on while its CPU gets little
// time.
const setupWait = 60 * time.Second

// stepError is a setup failure: the step that failed and why.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }

func step(name string, err error) error {
	if err == nil {
		return nil
	}
	return &stepError{step: name, err: err}
}

// guest holds the state of one boot.
type guest struct {
	console *os.File
	events  *os.File
	stdout  *os.File
	stderr  *os.File
	cfg     proto.Config
	debug   bool
}

// Main runs the init program and powers the machine off. It never returns.
func Main() {
	g := &guest{console: os.Stderr}
	code, err := g.run()
	if err != nil {
		var se *stepError
		stepName := "init"
		if errors.As(err, &se) {
			stepName = se.step
			err = se.err
		}
		fmt.Fprintf(g.console, "labinit: %s: %v\n", stepName, err)
		g.send(proto.Event{Kind: proto.EventSetupError, Step: stepName, Error: err.Error()})
	} else {
		g.send(proto.Event{Kind: proto.EventExit, Code: code})
	}
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART); err != nil {
		fmt.Fprintf(g.console, "labinit: reboot (QEMU runs with -no-reboot, so this stops the VM): %v\n", err)
	}
	select {} // PID 1 must not exit: that would panic the kernel
}

func (g *guest) logf(format string, args ...any) {
	if g.debug {
		fmt.Fprintf(g.console, "labinit: "+format+"\n", args...)
	}
}

func (g *guest) send(e proto.Event) {
	if g.events == nil {
		return
	}
	e.UptimeNs = uptime()
	_, _ = g.events.Write(e.MarshalLine())
}

func uptime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// run sets everything up, runs the command and returns its exit code.
func (g *guest) run() (int, error) {
	if err := step("mount pseudo filesystems", mountAll([]mount{
		{"devtmpfs", "/dev", "devtmpfs", 0, ""},
		{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
	}, "")); err != nil {
		return 0, err
	}
	g.debug = strings.Contains(readFile("/proc/cmdline"), "goverbs.debug")
	if err := step("load kernel modules", g.loadModules()); err != nil {
		return 0, err
	}
	if err := step("open virtio-serial ports", g.openPorts()); err != nil {
		return 0, err
	}
	if err := step("read run configuration", g.readConfig()); err != nil {
		return 0, err
	}
	g.debug = g.debug || g.cfg.Debug
	if err := step("mount host root", g.mountRoot()); err != nil {
		return 0, err
	}
	if err := step("set up network", g.setupNetwork()); err != nil {
		return 0, err
	}
	if !g.cfg.NoRXE {
		dev, typ := proto.RXEDevice, netlinkrdma.LinkTypeRXE
		if g.cfg.Provider == proto.ProviderSIW {
			dev, typ = proto.SIWDevice, netlinkrdma.LinkTypeSIW
		}
		if err := step("create "+dev, g.setupDevice(dev, typ)); err != nil {
			return 0, err
		}
	}
	_ = unix.Sethostname([]byte("goverbs-lab"))
	cmd, err := g.prepareCommand()
	if err != nil {
		return 0, step("prepare command", err)
	}
	g.send(proto.Event{Kind: proto.EventStart})
	if err := cmd.Start(); err != nil {
		return 0, step("start command", err)
	}
	code, err := exitStatus(cmd.Wait())
	if err != nil {
		return 0, step("wait for command", err)
	}
	g.logf("command exited with %d", code)
	// Flush what the command wrote to writable shares before reporting.
	unix.Sync()
	for i := len(g.cfg.Shares) - 1; i >= 0; i-- {
		if s := g.cfg.Shares[i]; s.Writable {
			_ = unix.Unmount(s.Path, 0)
		}
	}
	return code, nil
}

// exitStatus maps the result of exec.Cmd.Wait to a shell-style exit
// status: the exit code, or 128+N for death by signal N.
func exitStatus(waitErr error) (int, error) {
	if waitErr == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return 0, waitErr
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok {
		return 0, waitErr
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

type mount struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}

// mountAll mounts each entry below root, creating missing mount points.
func mountAll(ms []mount, root string) error {
	for _, m := range ms {
		target := root + m.target
		if err := os.MkdirAll(target, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create mount point %s: %w", target, err)
		}
		if err := unix.Mount(m.source, target, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, target, err)
		}
	}
	return nil
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// loadModules loads the initramfs's modules in the order of ModulesOrder.
func (g *guest) loadModules() error {
	list, err := os.ReadFile("/" + proto.ModulesOrder)
	if err != nil {
		return err
	}
	for _, name := range strings.Fields(string(list)) {
		path := filepath.Join("/", proto.ModulesDir, name)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("finit_module %s: %w", name, err)
		}
		g.logf("loaded %s", name)
	}
	return nil
}

// openPorts waits for the three virtio-serial ports (the kernel adds them
// asynchronously, as the host announces them) and opens them.
func (g *guest) openPorts() error {
	want := []string{proto.PortEvents, proto.PortStdout, proto.PortStderr}
	files := map[string]*os.File{}
	deadline := time.Now().Add(setupWait)
	for {
		ents, _ := os.ReadDir("/sys/class/virtio-ports")
		for _, e := range ents {
			name := strings.TrimSpace(readFile("/sys/class/virtio-ports/" + e.Name() + "/name"))
			if files[name] != nil {
				continue
			}
			f, err := os.OpenFile("/dev/"+e.Name(), os.O_WRONLY, 0)
			if err == nil {
				files[name] = f
			}
		}
		missing := []string{}
		for _, w := range want {
			if files[w] == nil {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ports %s did not appear", strings.Join(missing, ", "))
		}
		time.Sleep(2 * time.Millisecond)
	}
	g.events, g.stdout, g.stderr = files[proto.PortEvents], files[proto.PortStdout], files[proto.PortStderr]
	return nil
}

func mount9p(tag, target string, readonly bool, cache string) error {
	if err := os.MkdirAll(target, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create mount point %s: %w", target, err)
	}
	var flags uintptr
	if readonly {
		flags |= unix.MS_RDONLY
	}
	opts := "trans=virtio,version=9p2000.L,msize=512000,cache=" + cache
	if err := unix.Mount(tag, target, "9p", flags, opts); err != nil {
		return fmt.Errorf("mount 9p %s on %s: %w", tag, target, err)
	}
	return nil
}

func (g *guest) readConfig() error {
	if err := mount9p(proto.TagControl, proto.GuestControl, false, "none"); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(proto.GuestControl, proto.ConfigFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &g.cfg); err != nil {
		return fmt.Errorf("parse %s: %w", proto.ConfigFile, err)
	}
	if len(g.cfg.Argv) == 0 {
		return errors.New("empty command")
	}
	return nil
}

// mountRoot mounts the host root and the filesystems the command sees.
func (g *guest) mountRoot() error {
	// loose caching: the guest only reads the host root, and every boot
	// starts with an empty cache.
	if err := mount9p(proto.TagHostRoot, proto.GuestRoot, true, "loose"); err != nil {
		return err
	}
	nosuid := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	err := mountAll([]mount{
		{"proc", "/proc", "proc", nosuid | unix.MS_NOEXEC, ""},
		{"sysfs", "/sys", "sysfs", nosuid | unix.MS_NOEXEC, ""},
		{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, ""},
		{"devpts", "/dev/pts", "devpts", nosuid | unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"},
		{"tmpfs", "/dev/shm", "tmpfs", nosuid, "mode=1777"},
		{"tmpfs", "/tmp", "tmpfs", nosuid, "mode=1777"},
		{"tmpfs", "/run", "tmpfs", nosuid, "mode=0755"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", nosuid | unix.MS_NOEXEC, ""},
	}, proto.GuestRoot)
	if err != nil {
		return err
	}
	// rdma_cm's configfs; optional (configfs may be missing from the kernel).
	_ = unix.Mount("configfs", proto.GuestRoot+"/sys/kernel/config", "configfs", nosuid|unix.MS_NOEXEC, "")
	for _, s := range g.cfg.Shares {
		cache := "mmap"
		if !s.Writable {
			cache = "loose"
		}
		if err := mount9p(s.Tag, proto.GuestRoot+s.Path, !s.Writable, cache); err != nil {
			return err
		}
	}
	return nil
}

func (g *guest) setupNetwork() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: proto.Netdev}, PeerName: proto.PeerNetdev}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth pair %s/%s: %w", proto.Netdev, proto.PeerNetdev, err)
	}
	for _, x := range []struct{ dev, addr string }{{proto.Netdev, proto.Addr}, {proto.PeerNetdev, proto.PeerAddr}} {
		l, err := netlink.LinkByName(x.dev)
		if err != nil {
			return fmt.Errorf("find %s: %w", x.dev, err)
		}
		a, err := netlink.ParseAddr(x.addr)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, a); err != nil {
			return fmt.Errorf("add address %s to %s: %w", x.addr, x.dev, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", x.dev, err)
		}
	}
	return nil
}

// setupDevice creates the lab's RDMA device dev of link type typ (rxe0 of
// type rxe, or siw0 of type siw) on veth0, as "rdma link add" does, and
// waits until its port is ACTIVE.
func (g *guest) setupDevice(dev, typ string) error {
	if err := netlinkrdma.LinkAdd(dev, typ, proto.Netdev); err != nil {
		return fmt.Errorf("rdma link add %s type %s netdev %s: %w", dev, typ, proto.Netdev, err)
	}
	statePath := "/sys/class/infiniband/" + dev + "/ports/1/state"
	deadline := time.Now().Add(setupWait)
	for {
		state := strings.TrimSpace(readFile(statePath))
		if strings.HasSuffix(state, "ACTIVE") {
			g.logf("%s is %s", dev, state)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port 1 of %s is %q, not ACTIVE, after %v", dev, state, setupWait)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// prepareCommand chroots into the host root and builds the command.
func (g *guest) prepareCommand() (*exec.Cmd, error) {
	if err := unix.Chroot(proto.GuestRoot); err != nil {
		return nil, fmt.Errorf("chroot %s: %w", proto.GuestRoot, err)
	}
	dir := g.cfg.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	argv0 := g.cfg.Argv[0]
	if !strings.Contains(argv0, "/") {
		os.Setenv("PATH", envValue(g.cfg.Env, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"))
		p, err := exec.LookPath(argv0)
		if err != nil {
			return nil, err
		}
		argv0 = p
	}
	devnull, err := os.Open("/dev/null")
	if err != nil {
		return nil, err
	}
	stderr := g.stderr
	if g.cfg.MergeStderr {
		stderr = g.stdout
	}
	cmd := &exec.Cmd{
		Path:   argv0,
		Args:   g.cfg.Argv,
		Env:    g.cfg.Env,
		Dir:    dir,
		Stdin:  devnull,
		Stdout: g.stdout,
		Stderr: stderr,
		// A session of its own, like a login shell; the command is not PID 1,
		// so it gets default signal handling.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	return cmd, nil
}

func envValue(env []string, key, def string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return def
}
