package uverbs

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMemlockError(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		t.Fatal(err)
	}
	saved := hasCapIPCLock
	defer func() { hasCapIPCLock = saved }()
	kernel := fmt.Errorf("REG_MR: %w", unix.ENOMEM)

	hasCapIPCLock = func() bool { return false }
	err := wrapf("rxe0", memlockErr("rxe0", 1<<20, kernel), "reg MR (%d bytes)", 1<<20)
	if rl.Cur == unix.RLIM_INFINITY {
		if err2 := memlockErr("rxe0", 1<<20, kernel); err2 != kernel {
			t.Errorf("no limit: %v, want the kernel's error unchanged", err2)
		}
	} else {
		var me *MemlockError
		if !errors.As(err, &me) || me.Limit != rl.Cur || me.Length != 1<<20 || me.Device != "rxe0" {
			t.Fatalf("%v: not a *MemlockError with the limit %d", err, rl.Cur)
		}
		if !errors.Is(err, unix.ENOMEM) {
			t.Errorf("%v does not match ENOMEM", err)
		}
		for _, want := range []string{"RLIMIT_MEMLOCK is", "CAP_IPC_LOCK", "ulimit -l", "limits.conf", "--ulimit memlock", fmt.Sprint(rl.Cur)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
	}
	hasCapIPCLock = func() bool { return true }
	if err := memlockErr("rxe0", 1<<20, kernel); err != kernel {
		t.Errorf("with CAP_IPC_LOCK: %v, want the kernel's error unchanged", err)
	}
	other := fmt.Errorf("REG_MR: %w", unix.EFAULT)
	hasCapIPCLock = func() bool { return false }
	if err := memlockErr("rxe0", 1<<20, other); err != other {
		t.Errorf("EFAULT: %v, want it unchanged", err)
	}
}

func TestCapEffHas(t *testing.T) {
	status := "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t%s\nCapBnd:\t000001ffffffffff\n"
	for _, c := range []struct {
		eff  string
		want bool
	}{{"000001ffffffffff", true}, {"000001ffffffbfff", false}, {"0000000000000000", false}, {"zz", false}} {
		if got := capEffHas(bufio.NewScanner(strings.NewReader(fmt.Sprintf(status, c.eff))), capIPCLock); got != c.want {
			t.Errorf("CapEff %s: %v, want %v", c.eff, got, c.want)
		}
	}
	if capEffHas(bufio.NewScanner(strings.NewReader("Name:\tx\n")), capIPCLock) {
		t.Error("no CapEff line: true")
	}
}
