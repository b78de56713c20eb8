package rxe_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// memlockChildEnv marks the child process of TestLabMemlockLimit.
const memlockChildEnv = "GOVERBS_TEST_MEMLOCK_CHILD"

// Registering more memory than RLIMIT_MEMLOCK allows, without CAP_IPC_LOCK (issue #14, item 6): the kernel's
// ENOMEM arrives as a *uverbs.MemlockError naming the limit and how to raise it. The lab runs as root, so the
// test binary re-executes itself under setpriv with CAP_IPC_LOCK dropped from the bounding set (a root process
// then execs without it), and the child lowers its own RLIMIT_MEMLOCK to 64 KiB before registering 4 MiB.
func TestLabMemlockLimit(t *testing.T) {
	if os.Getenv(memlockChildEnv) == "1" {
		memlockChild(t)
		return
	}
	labtest.RequireRoot(t)
	newLab(t) // skips on devices that are not rxe
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not found: cannot drop CAP_IPC_LOCK for the child")
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-ipc_lock", "--inh-caps", "-ipc_lock", "--",
		os.Args[0], "-test.run", "^TestLabMemlockLimit$", "-test.v")
	cmd.Env = append(os.Environ(), memlockChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestLabMemlockLimit") {
		t.Fatal("the child did not run the test")
	}
}

func memlockChild(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "CapEff:") {
			t.Logf("child %s (CAP_IPC_LOCK is bit 14)", l)
		}
	}
	e := newLab(t) // its 1 MiB MR is registered before the limit is lowered
	const limit = 64 << 10
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	b, err := uverbs.AllocBuffer(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mr, err := e.pd.RegMR(b.Bytes(), uverbs.AccessLocalWrite)
	if err == nil {
		mr.Close()
		t.Fatal("registered 4 MiB under a 64 KiB RLIMIT_MEMLOCK without CAP_IPC_LOCK")
	}
	t.Logf("RegMR: %v", err)
	var me *uverbs.MemlockError
	if !errors.As(err, &me) {
		t.Fatalf("%v (%T) is not a *uverbs.MemlockError", err, err)
	}
	if me.Limit != limit || me.Length != 4<<20 {
		t.Errorf("limit %d, length %d; want %d, %d", me.Limit, me.Length, limit, 4<<20)
	}
	if !errors.Is(err, unix.ENOMEM) {
		t.Errorf("%v does not match ENOMEM", err)
	}
	for _, want := range []string{"RLIMIT_MEMLOCK is 65536 bytes", "CAP_IPC_LOCK", "ulimit -l", "limits.conf", "--ulimit memlock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q", want)
		}
	}
}
