package interop_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"github.com/goverbs/goverbs/uverbs/ibvtext"
	"github.com/goverbs/goverbs/verbs"
)

// TestLabTextsMatchLibibverbs: uverbs/ibvtext gives, for every value 0..30, the text sid's libibverbs (rdma-core
// 65, the newest release) gives: ibv_wc_status_str, ibv_node_type_str, ibv_port_state_str,
// ibv_event_type_str and ibv_wr_opcode_str, run from a C program (test/cpeer/strpeer.c) in sid's root.
// ibv_wr_opcode_str answers NULL for the numbers its enum skips; ibvtext says "unknown" there (its doc says so).
func TestLabTextsMatchLibibverbs(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	bin := labtest.BuildCPeer(t, "strpeer", "dl")
	root := peerRoot(t, "sid")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tmp", "strpeer"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/tmp/strpeer")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("strpeer in sid's root: %v\n%s", err, stderr.String())
	}
	goText := map[string]func(v int) string{
		"ibv_wc_status_str":  func(v int) string { return ibvtext.WCStatus(verbs.WCStatus(v)) },
		"ibv_node_type_str":  func(v int) string { return ibvtext.NodeType(uverbs.NodeType(v)) },
		"ibv_port_state_str": func(v int) string { return ibvtext.PortState(verbs.PortState(v)) },
		"ibv_event_type_str": func(v int) string { return ibvtext.Event(uverbs.AsyncEventType(v)) },
		"ibv_wr_opcode_str":  func(v int) string { return ibvtext.WROpcode(verbs.WROpcode(v)) },
	}
	seen := map[string]int{}
	for _, ln := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var fn string
		var v int
		if _, err := fmt.Sscanf(ln, "%s %d", &fn, &v); err != nil {
			t.Fatalf("strpeer line %q: %v", ln, err)
		}
		cText := strings.SplitN(ln, " ", 3)[2]
		f, ok := goText[fn]
		if !ok {
			t.Fatalf("strpeer line %q: no such function here", ln)
		}
		seen[fn]++
		want := cText
		if cText == "(null)" && fn == "ibv_wr_opcode_str" {
			want = "unknown"
		}
		if got := f(v); got != want {
			t.Errorf("%s(%d): libibverbs %q, goverbs %q", fn, v, cText, got)
		}
	}
	for fn := range goText {
		if seen[fn] != 31 {
			t.Errorf("%s: %d values compared, want 31 (strpeer output:\n%s)", fn, seen[fn], out)
		}
	}
}
