package interop

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// anyThreadRunnable tells a process blocked in a system call from one that runs, and a gone one from both.
func TestAnyThreadRunnable(t *testing.T) {
	if r, ok := anyThreadRunnable(os.Getpid()); !ok || !r {
		t.Errorf("this process (reading /proc now): runnable %v, ok %v; want true, true", r, ok)
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, ok := anyThreadRunnable(sleeper.Process.Pid)
		if !ok {
			t.Fatal("sleep(1) gone")
		}
		if !r {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep(1) still runnable after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	waitBlocked(sleeper.Process.Pid, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("waitBlocked on a sleeping process took %v", d)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if _, ok := anyThreadRunnable(sleeper.Process.Pid); ok {
		t.Error("a reaped process still reads as present")
	}
}
