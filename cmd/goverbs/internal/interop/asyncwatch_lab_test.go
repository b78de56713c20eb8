package interop_test

import (
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabAsyncwatch: rdma-core's ibv_asyncwatch and goverbs' watch rxe0 side by side while an address comes
// and goes on its netdev (a GID table change, which every context of the device is told about, without
// disturbing the port); both print the same lines. The banner's descriptor number is the process's own, so
// the banners are compared without it.
func TestLabAsyncwatch(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "ibv_asyncwatch", "ibverbs-utils")
	dev := labtest.Device()
	netdev := "veth0"
	start := func(argv ...string) (*exec.Cmd, *labtest.SyncBuffer) {
		var out labtest.SyncBuffer
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &out
	}
	_, cout := start("ibv_asyncwatch", "-d", dev)
	_, gout := start(interop.Binary(t), "ibv_asyncwatch", "-d", dev)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: C printed %q, goverbs %q", what, cout.String(), gout.String())
			}
		}
	}
	banner := func(s string) bool { return strings.Contains(s, dev+": async event FD ") && strings.HasSuffix(s, "\n") }
	waitFor("banners", func() bool { return banner(cout.String()) && banner(gout.String()) })
	ip := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("addr", "add", "10.233.0.77/24", "dev", netdev)
	ip("addr", "del", "10.233.0.77/24", "dev", netdev)
	// Wait until both saw the changes and agree (the kernel sends every context the same events).
	body := func(s string) string {
		_, rest, _ := strings.Cut(s, "\n")
		return rest
	}
	waitFor("GID change events", func() bool {
		c, g := body(cout.String()), body(gout.String())
		return strings.Contains(c, "IBV_EVENT_GID_CHANGE") && c == g
	})
	c, g := cout.String(), gout.String()
	t.Logf("C:\n%s", c)
	cb, _, _ := strings.Cut(c, "FD ")
	gb, _, _ := strings.Cut(g, "FD ")
	if cb != gb {
		t.Errorf("banner: C %q, goverbs %q", cb, gb)
	}
}
