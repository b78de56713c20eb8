package interop_test

import (
	"bytes"
	"errors"
	"github.com/goverbs/goverbs/test/interop"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/sys/unix"
)

// scratchRoot makes the filesystem of a FROM-scratch container: the static goverbs binary and the kernel's
// /dev, /sys and /proc bound in — no libc, no /etc/libibverbs.d, no provider .so, no shell.
func scratchRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "scratch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	src, err := os.ReadFile(interop.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "goverbs"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"dev", "sys", "proc"} {
		dir := filepath.Join(root, d)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("/"+d, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			t.Fatalf("bind /%s: %v", d, err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if got := filepath.Join(names...); got != filepath.Join("dev", "goverbs", "proc", "sys") {
		t.Fatalf("scratch root holds %v", names)
	}
	return root
}

// inScratch is a command that runs /goverbs args... chrooted into root with an empty environment.
func inScratch(root string, args ...string) *exec.Cmd {
	cmd := &exec.Cmd{Path: "/goverbs", Args: append([]string{"goverbs"}, args...), Env: []string{},
		SysProcAttr: &syscall.SysProcAttr{Chroot: root}, Dir: "/"}
	return cmd
}

func runCmd(t *testing.T, cmd *exec.Cmd) ppResult {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return ppResult{0, o.String(), e.String()}
	case errors.As(err, &ee):
		return ppResult{ee.ExitCode(), o.String(), e.String()}
	}
	t.Fatalf("run %v: %v", cmd.Args, err)
	return ppResult{}
}

// TestLabFromScratch proves the container story: goverbs runs its tools in a root that holds only the static
// binary and the kernel's /dev, /sys and /proc. devinfo, ibstat and rdma print what rdma-core 65's and iproute2
// 7.3's tools print outside it, and a chrooted pingpong and rping talk to rdma-core's ibv_rc_pingpong and
// rdmacm-utils' rping both ways.
func TestLabFromScratch(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	root := scratchRoot(t)
	dev := labtest.Device()
	for _, c := range []struct {
		ctool string
		cargs []string
		args  []string
	}{
		{"ibv_devinfo", []string{"-d", dev}, []string{"devinfo", "-d", dev}},
		{"ibv_devinfo", []string{"-v"}, []string{"devinfo", "-v"}},
		{"ibv_devices", nil, []string{"devices"}},
		{"ibstat", nil, []string{"ibstat"}},
		{"rdma", []string{"link", "show"}, []string{"rdma", "link", "show"}},
		{"rdma", []string{"-j", "dev", "show"}, []string{"rdma", "-j", "dev", "show"}},
	} {
		t.Run(c.ctool+"_"+filepath.Join(c.cargs...), func(t *testing.T) {
			// The reference is the newest release (sid's rdma-core 65 and iproute2 7.3), as for the tools'
			// own comparisons; its binaries run from sid's root by chroot.
			want := runCmd(t, inPeerRoot(t, "sid", c.ctool, c.cargs...))
			got := runCmd(t, inScratch(root, c.args...))
			if got != want {
				t.Fatalf("in the scratch root %v gives\n%+v\noutside, %s gives\n%+v", c.args, got, c.ctool, want)
			}
		})
	}
	// Pingpong: the chrooted goverbs as server and as client, rdma-core's C tool on the other side.
	interop.NeedTool(t, "ibv_rc_pingpong", "ibverbs-utils")
	for i, goServer := range []bool{true, false} {
		port := interop.Port(900 + i)
		args := []string{"-d", dev, "-g", "1", "-n", "10", "-p", interop.Itoa(port)}
		name := map[bool]string{true: "pingpong/scratch_server", false: "pingpong/scratch_client"}[goServer]
		t.Run(name, func(t *testing.T) {
			var server, client *exec.Cmd
			if goServer {
				server = inScratch(root, append([]string{"pingpong", "rc"}, args...)...)
				client = exec.Command("ibv_rc_pingpong", append(args, "127.0.0.1")...)
			} else {
				server = exec.Command("ibv_rc_pingpong", args...)
				client = inScratch(root, append(append([]string{"pingpong", "rc"}, args...), "127.0.0.1")...)
			}
			var so, se bytes.Buffer
			server.Stdout, server.Stderr = &so, &se
			if err := server.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- server.Wait() }()
			if err := interop.WaitListening(port, 60*time.Second); err != nil {
				server.Process.Kill()
				<-done
				t.Fatalf("%v; server said %s%s", err, so.String(), se.String())
			}
			c := runCmd(t, client)
			var serr error
			select {
			case serr = <-done:
			case <-time.After(60 * time.Second):
				server.Process.Kill()
				serr = <-done
			}
			if c.rc != 0 || serr != nil {
				t.Fatalf("client rc %d\n%s%s\nserver %v\n%s%s", c.rc, c.out, c.err, serr, so.String(), se.String())
			}
			checkPPOutput(t, "client", c.out, ppLines)
			checkPPOutput(t, "server", so.String(), ppLines)
		})
	}
	// rping: rdma_cm from the scratch root (its /dev/infiniband/rdma_cm and netlink), both ways.
	interop.NeedTool(t, "rping", "rdmacm-utils")
	for i, goServer := range []bool{true, false} {
		port := interop.Port(910 + i)
		sArgs := []string{"-s", "-a", labIP, "-p", interop.Itoa(port), "-v"}
		cArgs := []string{"-c", "-a", labIP, "-p", interop.Itoa(port), "-C", "5", "-v"}
		name := map[bool]string{true: "rping/scratch_server", false: "rping/scratch_client"}[goServer]
		t.Run(name, func(t *testing.T) {
			var server, client *exec.Cmd
			if goServer {
				server, client = inScratch(root, append([]string{"rping"}, sArgs...)...), exec.Command("rping", cArgs...)
			} else {
				server, client = exec.Command("rping", sArgs...), inScratch(root, append([]string{"rping"}, cArgs...)...)
			}
			var so, se bytes.Buffer
			server.Stdout, server.Stderr = &so, &se
			if err := server.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- server.Wait() }()
			if err := interop.WaitCMListening(dev, uint16(port), 60*time.Second); err != nil {
				server.Process.Kill()
				<-done
				t.Fatalf("%v; server said %s%s", err, so.String(), se.String())
			}
			c := runCmd(t, client)
			var serr error
			select {
			case serr = <-done:
			case <-time.After(60 * time.Second):
				server.Process.Kill()
				serr = <-done
			}
			if c.rc != 0 || serr != nil {
				t.Fatalf("client rc %d\n%s%s\nserver %v\n%s%s", c.rc, c.out, c.err, serr, so.String(), se.String())
			}
			if want := rpingLines("ping data: ", 5, 64); c.out != want {
				t.Errorf("client stdout:\n%s\nwant:\n%s", c.out, want)
			}
			if want := rpingLines("server ping data: ", 5, 64); so.String() != want {
				t.Errorf("server stdout:\n%s\nwant:\n%s", so.String(), want)
			}
		})
	}
}

// inPeerRoot is the command running tool (found in /usr/sbin or /usr/bin) from era's root by chroot, with argv[0]
// the bare name as a shell would give it.
func inPeerRoot(t *testing.T, era, tool string, args ...string) *exec.Cmd {
	t.Helper()
	root := labtest.PeerRoot(t, era)
	path := "/usr/bin/" + tool
	if _, err := os.Stat(filepath.Join(root, "usr/sbin", tool)); err == nil {
		path = "/usr/sbin/" + tool
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = tool
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	return cmd
}
