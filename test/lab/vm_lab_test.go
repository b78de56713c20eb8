package lab_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

// requireVM gates the tests that boot the lab VM: they are slow, so they
// run only with GOVERBS_LAB_SMOKE=1.
func requireVM(t *testing.T) {
	t.Helper()
	if os.Getenv("GOVERBS_LAB_SMOKE") != "1" {
		t.Skip("boots a VM: set GOVERBS_LAB_SMOKE=1")
	}
	if os.Getenv("GOVERBS_LAB") == "1" {
		t.Skip("already inside the lab")
	}
	t.Parallel()
}

// runVM runs argv in the lab and returns stdout, stderr and the result.
func runVM(t *testing.T, cfg lab.Config, argv []string) (stdout, stderr string, res lab.Result, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &errb
	var log bytes.Buffer
	cfg.Log = &log
	if cfg.Timeout == 0 {
		cfg.Timeout = 8 * time.Minute
	}
	res, err = lab.RunResult(context.Background(), cfg, argv)
	t.Logf("%s: exit %d, booted in %.2fs, ran %.2fs, %.2fs CPU (%s)", t.Name(), res.ExitCode, res.Boot.Seconds(), res.Command.Seconds(), res.CPU.Seconds(), res.Accel)
	if log.Len() > 0 {
		t.Logf("lab log: %s", log.String())
	}
	return out.String(), errb.String(), res, err
}

// TestLabVMSmoke checks the lab's promises: rxe0 is ACTIVE on veth0 with the
// documented addresses, rdma-core's tools run, the environment and the
// working directory (here under /tmp, which the VM would hide) come along.
func TestLabVMSmoke(t *testing.T) {
	requireVM(t)
	wd := t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "marker"), []byte("host file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := lab.HostEnv()
	env["GOVERBS_SMOKE_VALUE"] = "passed through"
	script := `set -e
ibv_devices
echo state=$(cat /sys/class/infiniband/rxe0/ports/1/state)
echo ndev=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1)
ip -o -4 addr show veth0 | awk '{print "veth0=" $4}'
ip -o -4 addr show veth1 | awk '{print "veth1=" $4}'
echo lab=$GOVERBS_LAB value="$GOVERBS_SMOKE_VALUE" term="$TERM"
echo pwd=$(pwd)
cat marker
test -c /dev/infiniband/uverbs0 && echo uverbs=ok
grep -q rdma /sys/fs/cgroup/cgroup.controllers && echo cgroup=rdma
touch /tmp/writable && echo tmp=ok
if touch /usr/lab-should-fail 2>/dev/null; then echo root=writable; else echo root=readonly; fi
`
	stdout, stderr, res, err := runVM(t, lab.Config{Workdir: wd, Env: env}, lab.Shell(script))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v\nstdout:\n%s\nstderr:\n%s", res.ExitCode, err, stdout, stderr)
	}
	for _, want := range []string{
		"rxe0", "state=4: ACTIVE", "ndev=veth0", "veth0=10.233.0.1/24", "veth1=10.233.0.2/24",
		`lab=1 value=passed through term=` + "\n", "pwd=" + wd + "\n", "host file\n",
		"uverbs=ok", "cgroup=rdma", "tmp=ok", "root=readonly",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestLabVMOutputIsExact checks that stdout and stderr arrive byte for byte
// (no CRLF, binary intact, nothing from the kernel) and the exit code
// comes back.
func TestLabVMOutputIsExact(t *testing.T) {
	requireVM(t)
	script := `printf 'a\r\nb\n\000\377'; head -c 300000 /dev/zero | tr '\0' x; printf 'to stderr\n' >&2; exit 7`
	stdout, stderr, res, err := runVM(t, lab.Config{}, lab.Shell(script))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", res.ExitCode)
	}
	want := "a\r\nb\n\x00\xff" + strings.Repeat("x", 300000)
	if stdout != want {
		t.Errorf("stdout differs: got %d bytes starting %q, want %d bytes", len(stdout), stdout[:min(len(stdout), 20)], len(want))
	}
	if stderr != "to stderr\n" {
		t.Errorf("stderr = %q, want %q", stderr, "to stderr\n")
	}
}

// TestLabVMMergedOutput checks that with one writer for stdout and stderr the
// command's writes to both keep their order.
func TestLabVMMergedOutput(t *testing.T) {
	requireVM(t)
	var buf bytes.Buffer
	cfg := lab.Config{Stdout: &buf, Stderr: &buf, Log: io.Discard, Timeout: 8 * time.Minute}
	script := `for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done`
	res, err := lab.RunResult(context.Background(), cfg, lab.Shell(script))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, %v", res.ExitCode, err)
	}
	want := "out1\nerr1\nout2\nerr2\nout3\nerr3\nout4\nerr4\nout5\nerr5\n"
	if buf.String() != want {
		t.Errorf("merged output = %q, want %q", buf.String(), want)
	}
}

// TestLabVMOutDirNoRXESignal checks the results share, GOVERBS_LAB_NO_RXE's
// effect (Config.NoRXE), and that death by signal reports 128+signal.
func TestLabVMOutDirNoRXESignal(t *testing.T) {
	requireVM(t)
	out := t.TempDir()
	script := `ls /sys/class/infiniband | wc -l > "$GOVERBS_LAB_OUT/count"; echo data > "$GOVERBS_LAB_OUT/file"; kill -9 $$`
	stdout, stderr, res, err := runVM(t, lab.Config{NoRXE: true, OutDir: out}, lab.Shell(script))
	if err != nil {
		t.Fatalf("%v\nstdout:%s\nstderr:%s", err, stdout, stderr)
	}
	if res.ExitCode != 128+9 {
		t.Errorf("exit code %d, want 137 (SIGKILL)", res.ExitCode)
	}
	for name, want := range map[string]string{"count": "0\n", "file": "data\n"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(b) != want {
			t.Errorf("out/%s = %q, %v; want %q", name, b, err, want)
		}
	}
}

// TestLabVMSetupError checks that a command that cannot start is reported as
// a setup failure with the step, and exit code 125.
func TestLabVMSetupError(t *testing.T) {
	requireVM(t)
	_, _, res, err := runVM(t, lab.Config{}, []string{"/nonexistent/command"})
	var se *lab.SetupError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want a *lab.SetupError", err)
	}
	if se.Step != "start command" || !strings.Contains(se.Msg, "no such file") {
		t.Errorf("setup error = %+v", se)
	}
	if res.ExitCode != lab.ExitSetupFailed {
		t.Errorf("exit code %d, want %d", res.ExitCode, lab.ExitSetupFailed)
	}
}

// TestLabVMTimeout checks that a run past its timeout is stopped and reported.
func TestLabVMTimeout(t *testing.T) {
	requireVM(t)
	_, _, res, err := runVM(t, lab.Config{Timeout: time.Second}, lab.Shell("sleep 600"))
	if !errors.Is(err, context.DeadlineExceeded) || res.ExitCode != lab.ExitTimeout {
		t.Errorf("got exit %d, error %v; want %d and context.DeadlineExceeded", res.ExitCode, err, lab.ExitTimeout)
	}
}

// TestLabVMPingpong proves the RDMA data path: rdma-core's ibv_rc_pingpong,
// server and client on rxe0 in loopback, over GID index 1 (the
// IPv4-mapped RoCEv2 GID of 10.233.0.1).
func TestLabVMPingpong(t *testing.T) {
	requireVM(t)
	script := `set -e
test "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1)" = "RoCE v2"
ibv_rc_pingpong -d rxe0 -g 1 -n 5 > /tmp/server.out 2>&1 &
server=$!
for i in $(seq 50); do
	# wait for the server to listen on its TCP port (18515)
	if grep -q ':4853 ' /proc/net/tcp /proc/net/tcp6 2>/dev/null; then break; fi
	sleep 0.1
done
ibv_rc_pingpong -d rxe0 -g 1 -n 5 127.0.0.1
wait $server
echo server:
cat /tmp/server.out
`
	stdout, stderr, res, err := runVM(t, lab.Config{}, lab.Shell(script))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v\nstdout:\n%s\nstderr:\n%s", res.ExitCode, err, stdout, stderr)
	}
	if n := strings.Count(stdout, "5 iters in"); n != 2 {
		t.Errorf("want client and server to report 5 iterations, got %d reports:\n%s", n, stdout)
	}
}

// TestLabCustomKernel boots a kernel the way a kernel developer hands the lab their build (CustomSelector): an
// image file and a modules_install tree with siw in it, here laid out from the lab's newest Debian kernel (its
// bzImage copied to arch/x86/boot/bzImage of a fake build tree with its config, its modules hard-linked into
// INSTALL_MOD_PATH/lib/modules/<release>, and the siw.ko the lab built for it placed in that tree as
// CONFIG_RDMA_SIW=m would): no kernel is compiled, so this proves the lab's side — finding the release, the
// config, the in-tree siw, caching by content — not a compiler's. It runs with -provider siw (siw0 from the
// tree's siw.ko) and with rxe.
func TestLabCustomKernel(t *testing.T) {
	requireVM(t)
	ctx := context.Background()
	var log bytes.Buffer
	k, err := lab.Prepare(ctx, lab.Config{Kernel: "newest", Provider: lab.ProviderSIW, Log: &log})
	if err != nil {
		t.Fatalf("prepare the newest kernel: %v\n%s", err, log.String())
	}
	cache, err := lab.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	siw, err := lab.EnsureSIW(ctx, cache, "newest", k, &log)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	image := filepath.Join(tree, "linux", "arch", "x86", "boot", "bzImage")
	mods := filepath.Join(tree, "mods")
	rel := filepath.Join(mods, "lib", "modules", k.Version)
	link := func(src, dst string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(src, dst); err != nil { // same file system as the cache; else copy
			b, rerr := os.ReadFile(src)
			if rerr != nil || os.WriteFile(dst, b, 0o644) != nil {
				t.Fatalf("link %s: %v", src, err)
			}
		}
	}
	link(k.Vmlinuz, image)
	link(k.Config, filepath.Join(tree, "linux", ".config"))
	err = filepath.WalkDir(k.ModulesDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		r, _ := filepath.Rel(k.ModulesDir, p)
		link(p, filepath.Join(rel, r))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	link(siw.Path, filepath.Join(rel, "kernel", "drivers", "infiniband", "sw", "siw", "siw.ko"))
	// Not t.Setenv: the VM tests run in parallel. Only the custom selector reads these variables.
	for k, v := range map[string]string{lab.KernelImageEnv: image, lab.KernelModulesEnv: mods} {
		os.Setenv(k, v)
		t.Cleanup(func() { os.Unsetenv(k) })
	}
	script := `set -e
uname -r
ibv_devices
rdma link show`
	for _, provider := range []string{lab.ProviderSIW, lab.ProviderRXE} {
		stdout, stderr, res, err := runVM(t, lab.Config{Kernel: lab.CustomSelector, Provider: provider}, lab.Shell(script))
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: exit %d, err %v\nstdout:\n%s\nstderr:\n%s", provider, res.ExitCode, err, stdout, stderr)
		}
		dev := lab.DeviceFor(provider)
		if !strings.HasPrefix(stdout, k.Version+"\n") || !strings.Contains(stdout, dev) ||
			!strings.Contains(stdout, "link "+dev+"/1 state ACTIVE") {
			t.Errorf("%s: the custom kernel did not come up with %s ACTIVE:\n%s", provider, dev, stdout)
		}
	}
}
