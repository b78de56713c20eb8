package showgids

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The script feeds the words of files it reads to "[", echo, cut, grep and
// printf; these fuzz the clone's versions of them on arbitrary GID, ndev and
// type contents (a whole row over a one-entry tree) for panics and the
// invariants of the output.
func FuzzRow(f *testing.F) {
	for _, s := range []string{"0000:0000:0000:0000:0000:ffff:c0a8:0a0b", "", "fe80:0000 0000", "! = (", "-e \\c", "0000:\x00x", "( ) -a -o ! -n -z"} {
		f.Add(s, "eth0", "RoCE v2")
	}
	f.Fuzz(func(t *testing.T, gid, ndev, typ string) {
		dir := t.TempDir()
		p := filepath.Join(dir, "infiniband", "d", "ports", "1")
		for name, v := range map[string]string{"gids/0": gid, "gid_attrs/ndevs/0": ndev, "gid_attrs/types/0": typ} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(p, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, name), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		if st := (Command{Class: dir, Script: "show_gids"}).Run(nil, &out, &errb); st != 0 {
			t.Fatalf("status %d", st)
		}
		o := out.String()
		if !strings.HasPrefix(o, "DEV\tPORT") || !(strings.HasSuffix(o, "n_gids_found=0\n") || strings.HasSuffix(o, "n_gids_found=1\n")) {
			t.Fatalf("output %q", o)
		}
	})
}

func FuzzTest(f *testing.F) {
	f.Add("a b = c")
	f.Add("! ( a ) -a -n")
	f.Fuzz(func(t *testing.T, s string) {
		_, msg := Test(strings.Fields(s))
		if strings.Contains(msg, "\n") {
			t.Fatalf("message %q", msg)
		}
	})
}

func FuzzQuote(f *testing.F) {
	f.Add("a'b")
	f.Add("x:y\x01\xe9'")
	f.Fuzz(func(t *testing.T, s string) {
		q := QuoteAlways(s)
		if len(q) < 2 || (q[0] != '\'' && q[0] != '"') || q[len(q)-1] != q[0] && !strings.HasSuffix(q, "'") {
			t.Fatalf("QuoteAlways(%q) = %q", s, q)
		}
		if u := Quote(s); u != s && u != q {
			t.Fatalf("Quote(%q) = %q", s, u)
		}
	})
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, always, plain string }{
		{"/sys/class/x", "'/sys/class/x'", "/sys/class/x"},
		{"it's", `"it's"`, `"it's"`},
		{"a'b$", `'a'\''b$'`, `'a'\''b$'`},
		{"x:y\x01\xe9", `'x:y'$'\001\351'`, `'x:y'$'\001\351'`},
		{"a\nb", `'a'$'\n''b'`, `'a'$'\n''b'`},
		{"a@b", "'a@b'", "a@b"},
		{"", "''", "''"},
	} {
		if got := QuoteAlways(c.in); got != c.always {
			t.Errorf("QuoteAlways(%q) = %s, want %s", c.in, got, c.always)
		}
		if got := Quote(c.in); got != c.plain {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.plain)
		}
	}
}

func TestScriptName(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "show_gids")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(dir, "none")+"::"+dir)
	if got := scriptName("show_gids"); got != exe {
		t.Errorf("scriptName = %q, want %q", got, exe)
	}
	if got := scriptName("./x/show_gids"); got != "./x/show_gids" {
		t.Errorf("scriptName = %q", got)
	}
	if got := scriptName("nosuch_tool_xyz"); got != "nosuch_tool_xyz" {
		t.Errorf("scriptName = %q", got)
	}
}
