package interop

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// waitBlocked lets a blocked process through at once, a busy-polling one as soon as it has run (its CPU time
// grows), and a gone one too; threadStates reads this process (running: it reads /proc now).
func TestWaitBlocked(t *testing.T) {
	self, ok := threadStates(os.Getpid())
	if !ok || len(self) == 0 {
		t.Fatalf("threadStates of this process: %v, %v", self, ok)
	}
	running := false
	for _, st := range self {
		running = running || st.state == 'R'
	}
	if !running {
		t.Errorf("no thread of this process (reading /proc now) is R: %v", self)
	}
	for _, c := range []struct {
		name string
		cmd  *exec.Cmd
	}{
		{"blocked", exec.Command("sleep", "30")},
		{"busy-polling", exec.Command("sh", "-c", "while :; do :; done")},
	} {
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitBlocked(c.cmd.Process.Pid, 20*time.Second)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: waitBlocked took %v", c.name, d)
		}
		c.cmd.Process.Kill()
		c.cmd.Wait()
		if _, ok := threadStates(c.cmd.Process.Pid); ok {
			t.Errorf("%s: a reaped process still reads as present", c.name)
		}
	}
}
