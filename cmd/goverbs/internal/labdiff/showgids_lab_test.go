package labdiff

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/showgids"
	"github.com/goverbs/goverbs/test/labtest"
)

// The reference show_gids: mlnx-tools' sbin/show_gids at this commit, from
// the mirror the VM sees read-only at the host's path.
const (
	showGidsMirror = "/work/.mirror/Mellanox+mlnx-tools/repo"
	showGidsCommit = "8fbfd9cfff34e2d32f1dd5a115c42eb8bd3b66c8"
)

// showGidsCases are the show_gids invocations compared on rxe0 (each run
// of the script takes about a minute under TCG: rxe0 has 1024 GID entries).
var showGidsCases = [][]string{nil, {"rxe0"}, {"rxe0 nosuch"}}

// eui64 is the modified EUI-64 interface identifier of veth0's MAC, as
// rxe0's link-local GID carries it ("fcef:efff:fef5:96a1"): veth0's MAC is
// random per boot, the lab goldens say {{EUI64}}.
func eui64(t *testing.T) string {
	ifi, err := net.InterfaceByName(labtest.Netdev())
	if err != nil || len(ifi.HardwareAddr) != 6 {
		t.Fatalf("%s's MAC: %v", labtest.Netdev(), err)
	}
	m := ifi.HardwareAddr
	return fmt.Sprintf("%02x%02x:%02xff:fe%02x:%02x%02x", m[0]^2, m[1], m[2], m[3], m[4], m[5])
}

// TestLabShowGids compares goverbs' show_gids on rxe0's real GID table with
// the goldens captured from the script in the lab (6.1;
// cmd/goverbs/internal/showgids/testdata/lab) and, when the mlnx-tools mirror and
// git are there, with the script itself run by bash.
func TestLabShowGids(t *testing.T) {
	labtest.Require(t)
	if labtest.Device() != "rxe0" {
		t.Skipf("the goldens are rxe0's; the device is %s", labtest.Device())
	}
	id := eui64(t)
	script := ""
	if _, err := os.Stat(showGidsMirror); err != nil {
		t.Logf("no mlnx-tools mirror at %s: comparing with the lab goldens only", showGidsMirror)
	} else if src, err := exec.Command("git", "-C", showGidsMirror, "show", showGidsCommit+":sbin/show_gids").Output(); err != nil {
		t.Logf("git show %s:sbin/show_gids: %v: comparing with the lab goldens only", showGidsCommit, err)
	} else {
		dir := t.TempDir()
		script = filepath.Join(dir, "show_gids")
		if err := os.WriteFile(script, src, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range showGidsCases {
		name := "rxe0"
		if len(args) > 0 {
			name += "_" + strings.ReplaceAll(args[0], " ", "_")
		}
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			st := showgids.Command{Class: "/sys/class", Script: "show_gids"}.Run(args, &out, &errb)
			got := golden.Result{Stdout: out.String(), Stderr: errb.String(), Status: st}
			b, err := os.ReadFile(filepath.Join("..", "showgids", "testdata", "lab", name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := golden.Parse(strings.ReplaceAll(string(b), "{{EUI64}}", id))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("show_gids %q differs from the lab golden\n--- golden:\n%s\n--- goverbs:\n%s", args, want, got)
			}
			if script == "" {
				return
			}
			cmd := exec.Command("bash", append([]string{"show_gids"}, args...)...)
			cmd.Dir = filepath.Dir(script)
			cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
			ref, err := golden.Exec(cmd)
			if err != nil {
				t.Fatalf("bash show_gids: %v", err)
			}
			if got != ref {
				t.Errorf("show_gids %q differs from the script\n--- script:\n%s\n--- goverbs:\n%s", args, ref, got)
			} else {
				t.Logf("show_gids %q: the same as the script (%d GIDs)", args, strings.Count(got.Stdout, "\n")-3)
			}
		})
	}
}
